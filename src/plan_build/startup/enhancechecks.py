"""Whether prompt enhancement can run: Auggie on PATH and a usable Augment login.

`tool.auggie` and `auggie.login` are preflight rows in `--prompt` mode (`preflight_probe`) and
the gate of `plan-build enhance` (`require_ready`). The login is read from
AUGMENT_SESSION_AUTH or ~/.augment/session.json and never shown: `auggie token print` prints
the token, so its stdout is neither shown nor logged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from plan_build.core import proc, tools
from plan_build.core.checks import Check, Probe, run_concurrently
from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.interact import clean
from plan_build.core.ui import Console

CHECK_TIMEOUT = 15.0
CHECK_IDS = ("tool.auggie", "auggie.login")
INSTALL = "npm install -g @augmentcode/auggie (needs Node 22+), then: auggie login"
LOGIN_FIX = "run: auggie login (or set AUGMENT_SESSION_AUTH to a session JSON)"


def auggie_checks(env: Mapping[str, str], home: Path) -> list[Check]:
    """`tool.auggie` (on PATH and runs) and `auggie.login` (a non-empty, readable session)."""
    path = proc.which("auggie", env)
    return run_concurrently([lambda: _tool_check(env, home), lambda: _login_check(env, home, path)])


def preflight_probe(session: Session) -> Probe:
    """The two checks as one probe for preflight in `--prompt` mode."""
    return lambda: auggie_checks(session.env, session.home)


def require_ready(session: Session, console: Console) -> None:
    """`plan-build enhance`'s gate: the failing checks with their fixes, then exit 3."""
    failed = [c for c in auggie_checks(session.env, session.home) if c.failed]
    if not failed:
        return
    for c in failed:
        mark = console.mark(c.status)
        console.say(f"  {mark} {c.id:<12} {c.detail}")
        if c.remediation:
            console.say(f"  {' ' * len(mark)} {'':<12} {console.arrow()} {c.remediation}")
    raise PlanBuildError(
        f"prompt enhancement is not ready ({', '.join(c.id for c in failed)})",
        "apply the fixes shown above and rerun",
        code=ExitCode.PREFLIGHT,
    )


def tail(text: str, lines: int = 3) -> str:
    """The last lines a failing Auggie printed, cleaned for the terminal and cut short."""
    rows = [clean(line).strip()[:300] for line in text.splitlines()]
    return "\n    ".join([r for r in rows if r][-lines:])


def _tool_check(env: Mapping[str, str], home: Path) -> Check:
    a = tools.version("auggie", env=env, home=home, cwd=home, timeout=CHECK_TIMEOUT)
    failed = tools.unanswered("tool.auggie", a, timeout=CHECK_TIMEOUT, install=INSTALL)
    if failed is not None:
        return failed
    if not a.ok:
        return Check(
            "tool.auggie",
            "fail",
            f"`auggie --version` exited {a.returncode} ({a.path})",
            "reinstall it: " + INSTALL,
        )
    return Check("tool.auggie", "pass", f"auggie {a.version or '(version unknown)'} ({a.path})")


def _session_problem(text: str) -> str | None:
    """Why a session JSON cannot log in, or None when it looks usable."""
    if not text.strip():
        return "is empty"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return "is not valid JSON"
    if not isinstance(data, dict) or not str(data.get("accessToken") or "").strip():
        return "has no accessToken"
    return None


def _login_check(env: Mapping[str, str], home: Path, path: str | None) -> Check:
    """The session is read from AUGMENT_SESSION_AUTH or ~/.augment/session.json; never shown."""
    inline = env.get("AUGMENT_SESSION_AUTH", "")
    if inline.strip():
        problem = _session_problem(inline)
        if problem:
            return Check(
                "auggie.login",
                "fail",
                f"AUGMENT_SESSION_AUTH {problem}",
                "set it to the JSON that `auggie token print` shows after SESSION=, "
                "or unset it and run: auggie login",
            )
        return Check("auggie.login", "pass", "session from AUGMENT_SESSION_AUTH")
    file = home / ".augment" / "session.json"
    shown = f"~/{file.relative_to(home)}"
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Check(
            "auggie.login", "fail", f"not logged in to Augment ({shown} is missing)", LOGIN_FIX
        )
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        return Check(
            "auggie.login",
            "fail",
            f"{shown} cannot be read ({reason})",
            f"fix its permissions (chmod 600 {file}) or log in again: auggie login",
        )
    problem = _session_problem(text)
    if problem:
        return Check("auggie.login", "fail", f"{shown} {problem}", "log in again: auggie login")
    if path is None:  # the file looks right; tool.auggie reports the missing program
        return Check("auggie.login", "pass", f"session in {shown}")
    try:  # offline: it reads the file only. Its stdout holds the token: never shown or logged.
        r = proc.run([path, "token", "print"], cwd=home, env=env, timeout=CHECK_TIMEOUT)
    except PlanBuildError as exc:
        return Check("auggie.login", "fail", f"`auggie token print` failed: {exc.what}", LOGIN_FIX)
    if not r.ok:
        said = tail(r.stderr, 1) or f"exit {r.returncode}"
        return Check("auggie.login", "fail", f"auggie does not accept {shown}: {said}", LOGIN_FIX)
    return Check("auggie.login", "pass", f"session in {shown}")


__all__ = [
    "CHECK_IDS",
    "INSTALL",
    "LOGIN_FIX",
    "auggie_checks",
    "preflight_probe",
    "require_ready",
    "tail",
]
