"""Checkpoints and restore (thin wrappers over core/checkpoint.py and delivery/restore.py)."""

from __future__ import annotations

from typing import Any

from plan_build.cli.strict import command
from plan_build.core import jsonout
from plan_build.core.context import Session


@command(help={"json": "print the checkpoints as JSON on stdout"})
def checkpoints(c: Any, json: bool = False) -> None:
    """List the checkpoints: when, the tool calls that followed, what changed since."""
    from plan_build.delivery import checkpointlist

    session = Session.from_process()
    found = checkpointlist.rows(session.repo, session.env)
    if json:
        jsonout.write(session.stdout, [r.as_json() for r in found])
        session.stdout.flush()
        return
    for line in checkpointlist.lines(found):
        session.console.say(line)


@command(
    iterable=["word"],
    help={
        "word": "CHECKPOINT then PATH…, given as plain words: the checkpoint (its number in "
        "`checkpoints` or its name; default: the newest that differs from now) and the paths "
        "to bring back (default: all)",
        "force": "overwrite work done since the checkpoint (it is checkpointed first)",
        "dry_run": "list what would be written; write nothing",
    },
)
def restore(
    c: Any, word: list[str] | None = None, force: bool = False, dry_run: bool = False
) -> None:
    """Bring the work tree and your index back as a checkpoint has them (HEAD stays)."""
    from plan_build.core import checkpoint
    from plan_build.delivery import restore as steps

    session = Session.from_process()
    repo = session.repo
    words = list(word or [])
    name = None
    if words and steps.names_checkpoint(checkpoint.listed(repo), words[0]):
        name = words.pop(0)
    paths = [steps.repo_path(repo, session.cwd, w) for w in words]
    paths = [] if "" in paths else paths  # the top directory: everything
    found = steps.plan(repo, name, paths, dry_run=dry_run)
    say = session.console.say
    if dry_run:
        say(f"restore would bring back checkpoint {found.target.name} ({found.target.at}):")
        for line in steps.describe(found):
            say(f"  {line}")
        if found.at_risk:
            say(f"  and would need --force for work done since: {', '.join(found.at_risk)}")
        return
    if found.at_risk and not force:
        steps.refuse_at_risk(found)
    steps.apply(repo, found, paths)
    say(f"restored checkpoint {found.target.name} ({found.target.at}); HEAD did not move")
    for line in steps.describe(found):
        say(f"  {line}")
    if found.before:
        say(f"the state before this restore is checkpoint {found.before}")


TASKS: list[Any] = [checkpoints, restore]
