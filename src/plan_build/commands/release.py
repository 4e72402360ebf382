"""`release` tasks: status (default), build, activate, list, rollback, gc, install.

Thin wrappers: each builds a Session, calls one step from plan_build.release, and prints a
short human report on stderr (or JSON on stdout with --json).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from invoke.collection import Collection

from plan_build.cli.strict import command
from plan_build.core import jsonout
from plan_build.core.context import Session

JSON_HELP = "print the result as JSON on stdout"


def _store(session: Session) -> Any:
    from plan_build.release import root_dir
    from plan_build.release.store import Store

    return Store(root_dir(session.env), session.console)


def _emit(session: Session, data: object) -> None:
    jsonout.write(session.stdout, data)
    session.stdout.flush()


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{size} B"  # pragma: no cover


def _when(stamp: str | None) -> str:
    if not stamp:
        return "-"
    try:
        moment = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _home_short(session: Session, path: Path | str) -> str:
    text, home = str(path), str(session.home)
    return "~" + text[len(home) :] if home != "/" and text.startswith(home + "/") else text


@command(default=True, help={"json": JSON_HELP})
def status(c: Any, json: bool = False) -> None:
    """Show the releases root, the active release and the release this run is bound to."""
    from plan_build.release import actions

    session = Session.from_process()
    result = actions.status(_store(session))
    res = session.resources
    this_run = {
        "origin": res.origin,
        "id": res.release_id,
        "path": str(res.release_path) if res.release_path else None,
    }
    if json:
        _emit(session, {**result.as_json(), "this_run": this_run})
        return
    say = session.console.say
    say(f"releases root  {_home_short(session, result.root)}")
    cur = result.current
    if cur is None:
        say("  current      none · activate one: plan-build release.activate SOURCE")
    else:
        say(
            f"  current      {cur.id} · plan-build {cur.version or '?'}"
            f" · activated {_when(cur.last_activated)}"
        )
    if res.release_path is not None:
        say(f"  this run     release {res.release_id} ({_home_short(session, res.release_path)})")
    else:
        say(f"  this run     {res.origin} (not a release)")
    say(f"  stored       {result.releases} release(s), {human_size(result.size)}")


@command(
    help={
        "checkout": "plan-build source checkout to build from (default: the one you are in)",
        "out": "directory for the bundle and its .tar.gz (default: <checkout>/dist)",
        "activate": "activate the new release right after building it",
        "json": JSON_HELP,
    }
)
def build(
    c: Any,
    checkout: str | None = None,
    out: str | None = None,
    activate: bool = False,
    json: bool = False,
) -> None:
    """Build a release bundle (zipapp, skills, templates, MANIFEST.sha256) from a checkout."""
    from plan_build.core.resources import CHECKOUT_ROOT
    from plan_build.release import actions, bundle

    session = Session.from_process()
    explicit = session.cwd / checkout if checkout else None
    source = bundle.find_checkout(session.cwd, explicit, CHECKOUT_ROOT)
    out_dir = session.cwd / out if out else source / "dist"
    built = bundle.build(source, out_dir)
    data: dict[str, Any] = {"build": built.as_json(), "activation": None}
    say = session.console.say
    say(
        f"built release {built.id} · plan-build {built.version} · {human_size(built.size)}"
        f" ({human_size(built.pyz_size)} zipapp)"
    )
    say(f"  bundle   {_home_short(session, built.directory)}")
    say(f"  archive  {_home_short(session, built.archive)}")
    say(f"  pin      --sha256 {built.digest}")
    if built.not_bundled:
        say(f"  native   {', '.join(built.not_bundled)} (used from the interpreter when present)")
    if activate:
        act = actions.activate_built(_store(session), built)
        data["activation"] = act.as_json()
        _say_activation(session, act)
    if json:
        _emit(session, data)


def _say_activation(session: Session, act: Any) -> None:
    say = session.console.say
    if act.reaped:
        say(f"cleaned up after an interrupted run: {', '.join(act.reaped)}")
    if act.previous == act.id:
        say(f"release {act.id} (plan-build {act.version}) is already active")
    else:
        was = f" · was {act.previous}" if act.previous else ""
        say(f"activated {act.id} (plan-build {act.version}){was}")


@command(
    help={
        "source": "bundle directory, .tar.gz bundle, or https:// / file:// URL of one",
        "sha256": "pinned release digest; anything else is refused before staging",
        "json": JSON_HELP,
    }
)
def activate(c: Any, source: str, sha256: str | None = None, json: bool = False) -> None:
    """Validate a bundle and make it the active release in one atomic switch."""
    from plan_build.release import actions, fetch

    session = Session.from_process()
    pin = actions.check_digest(sha256)
    src = fetch.classify(source, session.cwd, pinned=pin is not None)
    act = actions.activate(_store(session), src, pin)
    _say_activation(session, act)
    if json:
        _emit(session, act.as_json())


@command(name="list", help={"json": JSON_HELP})
def list_releases(c: Any, json: bool = False) -> None:
    """List stored releases: id, version, install date, size, current and bound runs."""
    from plan_build.release import actions

    session = Session.from_process()
    infos = actions.listing(_store(session))
    if json:
        _emit(session, [i.as_json() for i in infos])
        return
    say = session.console.say
    if not infos:
        say("no releases yet · build one: plan-build release.build --activate")
        return
    say(f"  {'ID':<16}  {'VERSION':<8}  {'INSTALLED':<20}  {'SIZE':>8}")
    for info in infos:
        mark = "*" if info.current else " "
        notes = []
        if info.current:
            notes.append("current")
        if info.bound:
            notes.append("bound: pid " + ", ".join(str(p) for p in info.bound))
        say(
            f"{mark} {info.id:<16}  {info.version or '?':<8}  {_when(info.installed):<20}  "
            f"{human_size(info.size):>8}  {' · '.join(notes)}".rstrip()
        )


@command(help={"to": "release id (or a unique prefix) to switch to", "json": JSON_HELP})
def rollback(c: Any, to: str | None = None, json: bool = False) -> None:
    """Switch back to the previously active release, or to the one given with --to."""
    from plan_build.release import actions

    session = Session.from_process()
    result = actions.rollback(_store(session), to)
    if result.previous == result.id:
        session.console.say(f"release {result.id} is already active")
    else:
        session.console.say(f"rolled back to {result.id} · was {result.previous or 'none'}")
    if json:
        _emit(session, result.as_json())


@command(
    help={"keep": "how many recent non-current releases to keep (default 3)", "json": JSON_HELP}
)
def gc(c: Any, keep: int = 3, json: bool = False) -> None:
    """Remove old releases; never the current one or one a running plan-build is bound to."""
    from plan_build.release import actions

    session = Session.from_process()
    result = actions.gc(_store(session), keep)
    say = session.console.say
    if result.removed:
        say(
            f"removed {len(result.removed)} release(s), freed {human_size(result.freed)}: "
            + ", ".join(result.removed)
        )
    else:
        say("nothing to remove")
    for release_id, why in result.kept.items():
        say(f"  kept {release_id}  {why}")
    if json:
        _emit(session, result.as_json())


@command(
    help={
        "bin_dir": "where to put the plan-build launcher (default ~/.local/bin)",
        "force": "replace files plan-build did not write (kept as *.plan-build-backup)",
        "json": JSON_HELP,
    }
)
def install(c: Any, bin_dir: str | None = None, force: bool = False, json: bool = False) -> None:
    """Link the Claude Code skills through `current` and install the plan-build launcher."""
    from plan_build.release import install as installer
    from plan_build.release import root_dir

    session = Session.from_process()
    target = session.cwd / bin_dir if bin_dir else session.home / ".local" / "bin"
    result = installer.install(
        root_dir(session.env),
        session.home,
        target,
        force=force,
        path_env=session.env.get("PATH", ""),
    )
    say = session.console.say
    for backup in result.backups:
        say(f"kept the old file as {_home_short(session, backup)}")
    home = str(session.home).rstrip("/") + "/"
    if result.changed:
        for line in result.changed:
            say("installed " + line.split(" ", 1)[1].replace(home, "~/"))
    else:
        say("already installed · nothing changed")
    if not result.on_path:
        say(
            f"note: {_home_short(session, target)} is not on PATH; add it, e.g. "
            f'export PATH="{target}:$PATH"'
        )
    if json:
        _emit(session, result.as_json())


ns = Collection("release")
for _task in (status, build, activate, list_releases, rollback, gc, install):
    ns.add_task(_task)
