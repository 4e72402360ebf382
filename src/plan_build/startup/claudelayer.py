"""plan-build's settings layer inside Claude Code: the file the launch passes with `--settings`.

Three layers (docs/adr/0170, 0190):

- Claude Code's own sandbox (`sandbox` in the settings, rendered from core/sandbox.py's one
  policy): every Bash command and everything it starts cannot write git state or plan-build's
  records, or reach the network beyond the hosts the user allowed. This is the layer that holds
  by capability (docs/adr/0190); the two below make refusals quick and friendly;
- `permissions.deny` rules for `git commit`, `git push` and plan-build's approval commands (by
  every name the program goes by here), which Claude applies in every permission mode, bypass
  included, with its own command parsing;
- hooks running plan-build's hook program (startup/gatehook.py): PreToolUse on Bash (every
  command through shellgate) and on the file tools (no write into .git or a settings file),
  ConfigChange (user, project and local settings stay as launched), and in architect mode
  PostToolUse on the file tools (live scope), and a checkpoint of the work tree before every
  tool call that can write (its own PreToolUse entry: core/checkpoint.py). Each hook is
  marked `onFailure: "block"`, and its command ends `|| exit 2`, so a hook that cannot
  start, crashes or times out refuses.

The file is plan-build's own: under the repository's state folder, named by its content, so a
dry run prints the path and bytes the launch will pass and a re-launch rewrites nothing. The
user's and the project's `.claude/settings*.json` are never touched.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import plan_build
from plan_build.core import fsutil, proc, sandbox, sessionvars
from plan_build.core.gitrepo import Repo

HOOK_ENV = sessionvars.HOOK
HOOK_TIMEOUT = 10  # seconds Claude gives each hook call; the hook's own deadline is shorter
FILE_TOOLS = "Edit|Write|MultiEdit|NotebookEdit"
CHECKPOINTED = f"Bash|{FILE_TOOLS}"  # a checkpoint before each call that can write (ADR 0198)
GUARDED_SETTINGS = "user_settings|project_settings|local_settings"
# (program words, gated arguments): what the deny rules name, as Claude's prefix rules
GATED_COMMANDS = (
    ("git", ("commit", "push")),
    ("plan-build", ("commit", "review.approve")),
    ("inv", ("commit", "review.approve")),
    ("invoke", ("commit", "review.approve")),
    ("python -m plan_build", ("commit", "review.approve")),
    ("python3 -m plan_build", ("commit", "review.approve")),
)


@dataclass(frozen=True)
class Layer:
    path: Path
    text: str  # the JSON, exactly as written


def package_root() -> Path:
    """Where `plan_build` is imported from: a source directory or a release's zipapp."""
    return Path(plan_build.__file__).resolve().parent.parent


# The hook's compiled dependencies: the Bash check's shell parser (startup/shellgate.py)
PARSER_PACKAGES = ("tree_sitter", "tree_sitter_bash")


def parser_paths() -> list[str]:
    """The directories this Python imports the shell parser's packages from (its
    site-packages, found without importing them), for the hook that runs without site. A
    release's zipapp cannot hold their compiled code: there they come from the interpreter,
    and where it lacks them the list is short and the hook refuses every Bash call, saying so."""
    import importlib.util

    found: list[str] = []
    for name in PARSER_PACKAGES:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            parent = str(Path(location).parent)
            if parent not in found:
                found.append(parent)
    return found


def hook_program(python: str | None = None, *, parser: list[str] | None = None) -> str:
    """The hook program as a shell command (the launch exports it as PLAN_BUILD_HOOK): Python
    isolated (`-I`: no user site, no PYTHON* variables, not the working directory) and without
    site (`-S`), the package put first by hand so a release's own code answers, and the
    directories holding the shell parser appended after it. Kept out of the settings so that
    Claude, which quotes a refusing hook's command to the model, shows the variable's name and
    not where plan-build is installed. `parser`: those directories (default: this Python's)."""
    paths = parser_paths() if parser is None else parser
    bootstrap = (
        f"import sys;sys.path.insert(0,{str(package_root())!r});"
        f"sys.path.extend({paths!r});"
        "from plan_build.startup.gatehook import main;main()"
    )
    return shlex.join([python or sys.executable, "-I", "-S", "-c", bootstrap])


def hook_command(event: str, *, mode: str, state: Path | None = None) -> str:
    """The shell command Claude runs for one hook. `|| exit 2`: no failure of the shell or of
    Python (the variable unset, Python missing, an import error) lets a call through. `state`:
    where live scope may keep its cache (the repository's plan-build folder)."""
    words = [event, "--mode", mode, *(["--state", str(state)] if state is not None else [])]
    args = shlex.join(words)
    return f'eval "${HOOK_ENV}" {shlex.quote(args)} || exit 2'


def deny_rules(launchers: tuple[str, ...] = ()) -> list[str]:
    rules = []
    for program, args in GATED_COMMANDS:
        for arg in args:
            rules += [f"Bash({program} {arg})", f"Bash({program} {arg}:*)"]
    for launcher in launchers:
        for arg in ("commit", "review.approve"):
            rules += [f"Bash({launcher} {arg})", f"Bash({launcher} {arg}:*)"]
    return rules


def settings(
    mode: str,
    *,
    launchers: tuple[str, ...] = (),
    state: Path | None = None,
    policy: sandbox.Policy | None = None,
) -> dict[str, object]:
    """The settings for a session of `mode`; with `policy`, Claude's sandbox holds every Bash
    command (and all it starts) to it — the layer that holds by capability (ADR 0190). None
    only for a session a person chose to run unguarded."""

    def hook(event: str) -> dict[str, object]:
        live = state if event.startswith("post-") else None
        return {
            "type": "command",
            "command": hook_command(event, mode=mode, state=live),
            "timeout": HOOK_TIMEOUT,
            "onFailure": "block",
        }

    hooks: dict[str, object] = {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [hook("pre-bash")]},
            {"matcher": FILE_TOOLS, "hooks": [hook("pre-edit")]},
            {"matcher": CHECKPOINTED, "hooks": [hook("checkpoint")]},
        ],
        "ConfigChange": [{"matcher": GUARDED_SETTINGS, "hooks": [hook("config")]}],
    }
    if mode == "architect":
        hooks["PostToolUse"] = [
            {"matcher": FILE_TOOLS, "hooks": [hook("post-edit")]},
            {"matcher": "Bash", "hooks": [hook("post-bash")]},
        ]
    deny = deny_rules(launchers)
    out: dict[str, object] = {"permissions": {"deny": deny}, "hooks": hooks}
    if policy is not None:
        deny += sandbox.file_tool_rules(policy)  # Claude's file tools: not in the sandbox
        out["sandbox"] = sandbox.claude_settings(policy)
    return out


def policy_for(
    repo: Repo, env: Mapping[str, str], allow_write: tuple[Path, ...] = ()
) -> sandbox.Policy:
    """The session's policy: the work tree writable, its git state and plan-build's records
    read-only, the home directory's credential files unreadable."""
    return sandbox.for_tree(
        repo.root,
        git_dir=repo.git_dir,
        common_dir=repo.common_dir,
        env=env,
        allow_write=allow_write,
    )


def plan(repo: Repo, mode: str, *, policy: sandbox.Policy | None) -> Layer:
    """The settings for a session of `mode` in `repo`, and the file they go to."""
    launcher = proc.which("plan-build")
    launchers = (launcher,) if launcher else ()
    data = settings(mode, launchers=launchers, state=repo.state_dir, policy=policy)
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    import hashlib  # only a launch needs it

    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return Layer(repo.state_dir / "claude" / f"settings-{digest}.json", text)


def switched_off(repo: Repo, env: Mapping[str, str]) -> list[str]:
    """Settings files that turn every hook off (`disableAllHooks`), plan-build's with them.
    The ConfigChange hook keeps a session from writing one; one written before the launch
    would hold from the start, so the launch refuses."""
    config = env.get("CLAUDE_CONFIG_DIR") or str(
        Path(env.get("HOME") or "~").expanduser() / ".claude"
    )
    files = [repo.root / ".claude" / n for n in ("settings.json", "settings.local.json")]
    files.append(Path(config) / "settings.json")
    found = []
    for path in files:
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            continue
        if isinstance(value, dict) and value.get("disableAllHooks") is True:
            found.append(str(path))
    return found


def write(layer: Layer) -> None:
    """Write the file (atomically, mode 0444) unless it already holds exactly these bytes."""
    try:
        if layer.path.read_text(encoding="utf-8") == layer.text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    layer.path.parent.mkdir(parents=True, exist_ok=True)
    fsutil.atomic_write(layer.path, layer.text, mode=0o444)
