"""`plan-build env`: the effective configuration, stating only what was checked."""

from __future__ import annotations

from typing import Any

from plan_build import __version__
from plan_build.core import config, jsonout, sessionvars, tools
from plan_build.core.context import Session
from plan_build.core.errors import PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.startup import identity
from plan_build.startup.preflight import VERSION_TIMEOUT

TOOLS = ("git", "claude", "codex", "coderabbit", "auggie")


def collect(session: Session) -> dict[str, Any]:
    repo: Repo | None
    try:
        repo = session.repo
    except PlanBuildError:
        repo = None
    res = session.resources
    found = tools.versions(
        TOOLS, env=session.env, home=session.home, cwd=session.cwd, timeout=VERSION_TIMEOUT
    )
    tools_found: dict[str, Any] = {
        name: {"path": a.path, "version": a.version} if a.path else None
        for name, a in found.items()
    }
    return {
        "version": __version__,
        "repo": str(repo.root) if repo else None,
        "identity": _identity(repo),
        "memory_mode": session.env.get(sessionvars.MEMORY_MODE) or None,
        "release": {"id": res.release_id, "path": str(res.release_path)}
        if res.release_path
        else None,
        "paths": {
            "skills": {
                "standard": str(res.skill("standard")),
                "architect": str(res.skill("architect")),
            },
            "templates": str(res.templates),
            "state": str(repo.state_dir) if repo else None,
            "origin": res.origin,
        },
        "tools": tools_found,
        "config": _config(session, repo),
        "recipe": _recipe(),
    }


def _identity(repo: Repo | None) -> dict[str, Any]:
    if repo is None:
        return {"value": None, "source": None, "committed": False}
    source = str(repo.root / identity.FILENAME)
    try:
        ident = identity.read(repo)
    except PlanBuildError as exc:
        return {"value": None, "source": source, "committed": False, "error": exc.what}
    if ident is None:
        return {"value": None, "source": None, "committed": False}
    return {"value": ident.value, "source": source, "committed": ident.committed}


def _config(session: Session, repo: Repo | None) -> str | None:
    if repo is None:
        return None
    try:
        path = session.config.path
        return str(path) if path else None
    except PlanBuildError:
        return str(repo.root / config.FILENAME)


def _recipe() -> dict[str, Any] | None:
    try:
        from plan_build.dispatch import recipe
    except ImportError:
        return None
    described: dict[str, Any] = recipe.describe()
    return described


def show(session: Session, *, as_json: bool) -> None:
    data = collect(session)
    if as_json:
        jsonout.write(session.stdout, data)
        return
    con = session.console
    ident = data["identity"]
    con.say(f"plan-build {data['version']}")
    con.say(f"  repo        {data['repo'] or 'not in a git work tree'}")
    shown = ident["value"] or ident.get("error") or "missing"
    con.say(f"  identity    {shown}" + ("" if ident["committed"] else " (not committed)"))
    con.say(f"  memory mode {data['memory_mode'] or 'decided at launch'}")
    rel = data["release"]
    origin = data["paths"]["origin"]
    con.say(f"  release     {rel['id'] + ' at ' + rel['path'] if rel else f'none ({origin})'}")
    con.say(f"  skills      {data['paths']['skills']['standard']}")
    con.say(f"              {data['paths']['skills']['architect']}")
    con.say(f"  templates   {data['paths']['templates']}")
    con.say(f"  config      {data['config'] or 'none'}")
    for name, tool in data["tools"].items():
        desc = f"{tool['version'] or 'version unknown'} ({tool['path']})" if tool else "not found"
        con.say(f"  {name:<11} {desc}")
    if data["recipe"]:
        con.say(f"  recipe      {data['recipe']['id']} {data['recipe']['fingerprint']}")
