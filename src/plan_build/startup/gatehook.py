"""The hook program Claude Code runs for plan-build's settings layer (startup/claudelayer.py).

`python -I -S -c <bootstrap> <event> --mode M`, with Claude's hook JSON on stdin (the command
is `eval "$PLAN_BUILD_HOOK" '<event> --mode M' || exit 2`; the launch exports the variable).
Every way out that is not a clear "allow" is exit 2 with the reason on stderr, which Claude
treats as a refusal and shows the model: a refused command, unreadable input, a crash, its own
deadline. (Claude treats any other non-zero exit as *not* blocking; the settings also mark the
hook `onFailure: "block"` and the shell wrapper turns a Python that cannot start into exit 2.)

Events:
- `pre-bash` (PreToolUse, Bash): shellgate.refusal on the command, the friendly first layer
  (the sandbox is what holds); when its shell parser (tree-sitter) cannot load, every Bash
  call is refused with the reason;
- `pre-edit` (PreToolUse, Edit|Write|MultiEdit|NotebookEdit): no write into git's own
  directory, plan-build's state, or Claude's settings files;
- `checkpoint` (PreToolUse, Bash and the file tools): the work tree and the user's index
  checkpointed if they changed; a checkpoint that cannot be taken refuses the call
  (startup/checkpointhook.py);
- `config` (ConfigChange): a change to user, project or local settings is not applied for the
  rest of the session;
- `post-edit`, `post-bash` (PostToolUse, architect mode): a write outside the architect records
  and the scope of the task in progress is reported to Claude at once (startup/livescope.py).

Standard library only (and shellgate, with tree-sitter's compiled bindings, which the bootstrap
puts on the path); the live-scope check imports what it needs itself.
"""

from __future__ import annotations

import json
import os
import signal
import sys

DEADLINE = 4.0  # seconds: well inside the timeout the settings give Claude for each hook
BLOCK = 2
ASK_USER = (
    "Commits, pushes and approvals in a plan-build session are the user's: ask the user to "
    "run it in a terminal outside Claude Code (a `!` line in Claude does not count), or to run "
    "`plan-build commit` there when the change is ready. If the command only mentions these "
    "words (a search, a note), use the Grep, Read or Write tool instead of Bash."
)
PARSER_MISSING = (
    "Until it loads, every Bash command is refused: tell the user, who can install it and "
    "start the session again. The Read, Grep, Glob, Edit and Write tools still work."
)
SETTINGS_NAMES = ("settings.json", "settings.local.json")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    try:
        signal.signal(signal.SIGALRM, _too_slow)
        signal.setitimer(signal.ITIMER_REAL, DEADLINE)
        code, out, err = run(args, sys.stdin.read(4 * 1024 * 1024))
    except BaseException as exc:  # every failure refuses
        code, out, err = BLOCK, "", f"plan-build's hook failed ({type(exc).__name__}); {ASK_USER}"
    _finish(code, out, err)


def _too_slow(_signum: int, _frame: object) -> None:
    _finish(BLOCK, "", f"plan-build's hook did not decide within {DEADLINE:g} s; {ASK_USER}")


def _finish(code: int, out: str, err: str) -> None:
    try:
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
        if err:
            sys.stderr.write(err + "\n")
            sys.stderr.flush()
    finally:
        os._exit(code)


def options(args: list[str]) -> dict[str, str]:
    found = {}
    for i, word in enumerate(args):
        if word.startswith("--") and i + 1 < len(args):
            found[word[2:]] = args[i + 1]
    return found


def run(args: list[str], raw: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) for one hook call."""
    if not args:
        return BLOCK, "", f"plan-build's hook was started without an event; {ASK_USER}"
    event, opts = args[0], options(args[1:])
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return BLOCK, "", f"plan-build's hook could not read what Claude sent; {ASK_USER}"
    if event == "checkpoint":
        from plan_build.startup import checkpointhook

        return checkpointhook.run(data)
    tool_input = data.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    if event == "pre-bash":
        return pre_bash(tool_input.get("command"), cwd)
    if event == "pre-edit":
        reason = protected_write(_path(tool_input), cwd)
        if reason is None:
            return 0, "", ""
        return BLOCK, "", f"plan-build refused this write: {reason}."
    if event == "config":
        source = data.get("source")
        if source in ("skills", "policy_settings"):
            return 0, "", ""
        return (
            BLOCK,
            "",
            f"plan-build keeps this session's settings as it launched them, so the change to "
            f"{source} settings is not applied now; it applies from the next session.",
        )
    if event == "post-edit":
        from plan_build.startup import livescope

        return livescope.after_write(_path(tool_input), cwd, opts)
    if event == "post-bash":
        from plan_build.startup import livescope

        command = tool_input.get("command")
        return livescope.after_bash(command if isinstance(command, str) else None, cwd, opts)
    return BLOCK, "", f"plan-build's hook does not know the event {event!r}; {ASK_USER}"


def pre_bash(command: object, cwd: str | None) -> tuple[int, str, str]:
    """The Bash check (startup/shellgate.py): the friendly first layer, not the safety."""
    if not isinstance(command, str):
        return BLOCK, "", f"plan-build's hook found no command to check; {ASK_USER}"
    from plan_build.startup import shellgate

    try:
        found = shellgate.refusal(command, cwd=cwd)
    except shellgate.ParserUnavailable as exc:
        return BLOCK, "", f"{exc}. {PARSER_MISSING}"
    if found is None:
        return 0, "", ""
    advice = found.advice or ASK_USER
    return BLOCK, "", f"plan-build refused this command: {found.reason}. {advice}"


def _path(tool_input: dict[str, object]) -> str | None:
    for key in ("file_path", "notebook_path", "path"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return value
    return None


def protected_write(path: str | None, cwd: str | None) -> str | None:
    """Why the Edit/Write tools may not write `path`, or None."""
    if path is None:
        return "the tool named no file, so plan-build cannot tell where it would write"
    full = os.path.realpath(os.path.join(cwd or os.getcwd(), path))
    parts = full.split(os.sep)
    if ".git" in parts:
        return f"{path} is inside git's own directory (refs, objects and plan-build's state)"
    if parts[-1] in SETTINGS_NAMES and len(parts) > 1 and parts[-2] == ".claude":
        return (
            f"{path} is a Claude Code settings file; plan-build keeps the session's settings "
            "as launched (ask the user to change it outside the session)"
        )
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    in_config = config_dir and os.path.dirname(full) == os.path.realpath(config_dir)
    if in_config and parts[-1] in SETTINGS_NAMES:
        return f"{path} is Claude Code's user settings file"
    return None


if __name__ == "__main__":  # pragma: no cover - started by Claude Code through the bootstrap
    main()
