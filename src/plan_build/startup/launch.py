"""Render the workflow prompt and hand the terminal to an interactive Claude Code.

Claude is never started with -p/--print: the prompt is the positional argument after `--`
(so a prompt starting with `-` is not read as a flag), and `--yolo` becomes
`--dangerously-skip-permissions` and nothing else. `--settings <file>` passes plan-build's
settings layer (startup/claudelayer.py); the dry run prints that file too. Just before the
exec, the session's broker starts (startup/broker.py) and PLAN_BUILD_BROKER names its spool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from plan_build.core import brokerclient, proc, sessionvars
from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.render import render
from plan_build.startup import broker, claudelayer
from plan_build.startup.claudelayer import Layer

YOLO_FLAG = "--dangerously-skip-permissions"
# Linux refuses any single exec argument over 128 KiB (MAX_ARG_STRLEN); the prompt is one.
MAX_PROMPT_BYTES = 128 * 1024 - 1


@dataclass(frozen=True)
class Launch:
    argv: tuple[str, ...]
    env_added: Mapping[str, str]
    prompt: str
    cwd: Path
    blockers: tuple[str, ...] = field(default=())
    settings: Layer | None = None


def claude_argv(prompt: str, *, yolo: bool, settings: Path | None = None) -> tuple[str, ...]:
    layer = ("--settings", str(settings)) if settings is not None else ()
    return ("claude", *layer, *((YOLO_FLAG,) if yolo else ()), "--", prompt)


def render_prompt(session: Session, mode: str, context: Mapping[str, object]) -> str:
    return render(session.resources.templates, f"launch/{mode}.md.j2", context)


def build(
    session: Session,
    *,
    mode: str,
    repo_root: Path,
    context: Mapping[str, object],
    env_added: Mapping[str, str],
    yolo: bool,
    blockers: tuple[str, ...] = (),
    settings: Layer | None = None,
) -> Launch:
    prompt = render_prompt(session, mode, context)
    if "\0" in prompt or any("\0" in f"{k}{v}" for k, v in env_added.items()):
        # exec would fail on it after the baseline was taken: refuse while nothing is written
        raise PlanBuildError(
            "the prompt or the environment for Claude Code holds a NUL byte",
            "remove the NUL byte from the request (or from the enhanced text) and try again",
            code=ExitCode.USAGE,
        )
    size = len(prompt.encode("utf-8"))
    if size > MAX_PROMPT_BYTES:
        raise PlanBuildError(
            f"the rendered prompt is {size // 1024} KiB; Claude Code takes at most 128 KiB as "
            "its first message",
            "shorten the request: put long material in a file in the repository and name it",
            code=ExitCode.USAGE,
        )
    argv = claude_argv(prompt, yolo=yolo, settings=settings.path if settings else None)
    return Launch(argv, dict(env_added), prompt, repo_root, blockers, settings)


def dry_run_text(launch: Launch) -> str:
    """The argv with the prompt's place and size, the environment added, then the prompt once,
    as a bash snippet that sets $PROMPT to exactly those bytes (so the argv runs as printed)."""
    env_lines = [f"{k}={v}" for k, v in sorted(launch.env_added.items())]
    verdict = (
        "would launch" if not launch.blockers else "would not launch: " + "; ".join(launch.blockers)
    )
    size = len(launch.prompt.encode("utf-8"))
    argv = proc.quote(launch.argv[:-1]) + ' "$PROMPT"'
    lines = launch.prompt.split("\n")
    end = "PLAN_BUILD_PROMPT"
    while end in lines:
        end += "_"
    body = launch.prompt if launch.prompt.endswith("\n") else launch.prompt + "\n"
    exact = [] if launch.prompt.endswith("\n") else ["PROMPT=${PROMPT%$'\\n'}"]
    layer = []
    if launch.settings is not None:
        where = launch.settings.path
        layer = [f"--- settings: the launch writes {where} with ---", launch.settings.text.rstrip()]
    return "\n".join(
        [
            "--- argv (cwd: " + str(launch.cwd) + ") ---",
            f"{argv}  # {size:,} bytes, printed below",
            "--- environment added ---",
            *env_lines,
            "--- prompt: pasting the lines up to --- end --- into bash sets $PROMPT ---",
            f"IFS= read -r -d '' PROMPT <<'{end}'",
            body + end,
            *exact,
            "--- end ---",
            *layer,
            verdict,
            "",
        ]
    )


def execute(launch: Launch, session: Session) -> NoReturn:
    """Write the settings layer, start the session's broker (docs/adr/0191), then become
    Claude: the broker watches this very pid, and Claude stays the launched process."""
    if launch.settings is not None:
        claudelayer.write(launch.settings)
    env = dict(session.env)
    env.update(launch.env_added)
    sid = sessionvars.session_of(launch.env_added)
    if sid is not None:
        repo = session.repo
        base, _ = broker.start(
            env,
            session_id=sid,
            worktree=repo.root,
            git_dir=repo.common_dir,
            state_dir=repo.state_dir,
        )
        env[brokerclient.ENV] = str(base)
    proc.exec_replace(launch.argv, env, cwd=launch.cwd)
