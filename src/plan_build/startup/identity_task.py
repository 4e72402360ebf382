"""`plan-build identity [--set ID]`: show, validate or write the identity file; without one,
propose it and write it after approval, as `plan` does."""

from __future__ import annotations

from plan_build.context import Session
from plan_build.errors import ExitCode, PlanBuildError
from plan_build.gitrepo import discover
from plan_build.startup import identity


def run(session: Session, new_value: str | None) -> None:
    repo = discover(session.cwd, session.env)
    if new_value is not None:
        value = identity.validate(new_value, where="the id given to --set")
        head = identity.committed_value(repo)
        current = repo.root / identity.FILENAME
        if (
            current.exists()
            and current.read_text(encoding="utf-8").strip() == value
            and (head is not None and head.strip() == value)
        ):
            session.console.say(f'{identity.FILENAME} is already "{value}" and committed')
            return
        identity.write(repo, value)
        if head is not None and head.strip() == value:
            session.console.say(f'{identity.FILENAME} restored to the committed "{value}"')
            return
        raise identity.created(value)
    ident = identity.read(repo)
    if ident is None:
        identity.offer(session, repo)
    session.stdout.write(ident.value + "\n")
    if not ident.committed:
        raise PlanBuildError(
            f'{identity.FILENAME} ("{ident.value}") is not committed',
            identity.commit_command(),
            code=ExitCode.PREFLIGHT,
        )
