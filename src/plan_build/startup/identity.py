"""The committed AgentMemory project identity (`.agentmemory-project`).

One id per repository, shared by every clone and worktree, so Claude and Codex read and write
one memory scope. The id is committed: a work-tree value that differs from HEAD is refused.
The `identity [--set ID]` command's steps (`show`, `set_value`) live here too; its task only
finds the repository and picks one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from plan_build.core import fsutil
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo

if TYPE_CHECKING:
    from plan_build.core.context import Session

FILENAME = ".agentmemory-project"
GRAMMAR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{1,127}")
COMMIT_MESSAGE = "Add AgentMemory project identity"


@dataclass(frozen=True)
class Identity:
    value: str
    committed: bool


def commit_command() -> str:
    return f'git add {FILENAME} && git commit -m "{COMMIT_MESSAGE}" -- {FILENAME}'


def validate(raw: str, *, where: str = FILENAME) -> str:
    """The id in `raw` (one line, optional trailing newline), or a PlanBuildError saying why not."""
    text = raw[:-1] if raw.endswith("\n") else raw
    if "\n" in text:
        problem = "holds more than one line"
    elif not text:
        problem = "is empty"
    elif re.search(r"\s", text):
        problem = "contains whitespace"
    elif len(text) < 2:
        problem = "is too short (2 to 128 characters)"
    elif len(text) > 128:
        problem = f"is too long ({len(text)} characters; at most 128)"
    elif not text[0].isascii() or not text[0].isalnum():
        problem = "must start with a letter or digit"
    elif not GRAMMAR.fullmatch(text):
        problem = "may only contain letters, digits and . _ : / -"
    else:
        return text
    shown = text if len(text) <= 60 else text[:57] + "..."
    raise PlanBuildError(
        f'{where} {problem} ("{shown}")',
        "use one id like github.com/owner/repository or local/<uuid>, "
        "e.g. plan-build identity --set github.com/owner/repository",
        code=ExitCode.PREFLIGHT,
    )


def normalize_origin(url: str) -> str | None:
    """`host/owner/repository` from an https, ssh or scp-like remote URL; None if not a remote.

    Credentials and ports are dropped: they never belong in an identity.
    """
    from urllib.parse import urlsplit

    url = url.strip()
    if not url:
        return None
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme not in {"https", "http", "ssh", "git", "git+ssh", "ssh+git"}:
            return None
        host, path = parts.hostname or "", parts.path
    else:
        m = re.fullmatch(r"(?:[^@/\s]+@)?([^:/\s]+):(?!/)(.+)", url)
        if not m:
            return None
        host, path = m.group(1), m.group(2)
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    path = path.strip("/")
    if not host or not path:
        return None
    candidate = f"{host.lower()}/{path}"
    if not GRAMMAR.fullmatch(candidate):
        return None
    return candidate


def propose(repo: Repo) -> str:
    import uuid  # only when an id is proposed: `status` reads the identity on every run

    origin = repo.origin_url()
    return (normalize_origin(origin) if origin else None) or f"local/{uuid.uuid4()}"


def committed_value(repo: Repo) -> str | None:
    r = repo.git("cat-file", "blob", f"HEAD:{FILENAME}", check=False)
    return r.stdout if r.returncode == 0 else None


def read(repo: Repo) -> Identity | None:
    """The identity in the work tree, checked against HEAD; None when the file is missing."""
    path = repo.root / FILENAME
    if not path.exists():
        return None
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanBuildError(
            f"{FILENAME} cannot be read ({exc})",
            "make it a UTF-8 text file holding one id, or remove it and rerun",
            code=ExitCode.PREFLIGHT,
        ) from exc
    value = validate(raw)
    head_raw = committed_value(repo)
    if head_raw is None:
        return Identity(value, committed=False)
    try:
        head_value = validate(head_raw, where=f"{FILENAME} in HEAD")
    except PlanBuildError:
        head_value = head_raw.strip()
    if head_value != value:
        raise PlanBuildError(
            f'{FILENAME} differs from HEAD ("{value}" here, "{head_value}" committed)',
            f"commit the new identity ({commit_command()}) or restore it (git restore {FILENAME})",
            code=ExitCode.PREFLIGHT,
        )
    return Identity(value, committed=True)


def require_committed(repo: Repo) -> Identity | None:
    """The identity ready for launch, None when missing, or an error when it is not committed."""
    ident = read(repo)
    if ident is not None and not ident.committed:
        raise PlanBuildError(
            f'{FILENAME} ("{ident.value}") is not committed',
            f"commit it and rerun: {commit_command()}",
            code=ExitCode.PREFLIGHT,
        )
    return ident


def write(repo: Repo, value: str) -> Path:
    value = validate(value, where="the identity")
    path = repo.inside(repo.root / FILENAME)
    fsutil.atomic_write(path, value + "\n")
    return path


def created(value: str) -> PlanBuildError:
    """The stop after writing a new identity: the user commits it, then reruns."""
    return PlanBuildError(
        f'wrote {FILENAME} ("{value}"); commit it so every clone and worktree shares it',
        f"{commit_command()}  # then rerun",
        code=ExitCode.IDENTITY_CREATED,
    )


def set_value(session: Session, repo: Repo, new_value: str) -> None:
    """`identity --set ID`: write the id; a new (uncommitted) value stops for the commit
    (exit 5), while the committed value already in place, or restored, is a plain success."""
    value = validate(new_value, where="the id given to --set")
    head = committed_value(repo)
    current = repo.root / FILENAME
    if (
        current.exists()
        and current.read_text(encoding="utf-8").strip() == value
        and (head is not None and head.strip() == value)
    ):
        session.console.say(f'{FILENAME} is already "{value}" and committed')
        return
    write(repo, value)
    if head is not None and head.strip() == value:
        session.console.say(f'{FILENAME} restored to the committed "{value}"')
        return
    raise created(value)


def show(session: Session, repo: Repo) -> None:
    """`identity`: print the id on stdout; without one, offer it as `plan` does (`offer`); an
    uncommitted one is printed, then refused (exit 3)."""
    ident = read(repo)
    if ident is None:
        offer(session, repo)
    session.stdout.write(ident.value + "\n")
    if not ident.committed:
        raise PlanBuildError(
            f'{FILENAME} ("{ident.value}") is not committed',
            commit_command(),
            code=ExitCode.PREFLIGHT,
        )


def offer(session: Session, repo: Repo, proposal: str | None = None) -> NoReturn:
    """No identity yet (`plan`, `architect`, `identity`): propose one and write it after the
    user approves, then stop for the commit (exit 5); no terminal or a no stops with exit 4."""
    from plan_build.core.interact import require_person

    proposal = proposal or propose(repo)
    session.console.say(f'This repository has no {FILENAME}; proposed id: "{proposal}"')
    require_person(
        session.env, what=f"writing {FILENAME}", command=f"plan-build identity --set {proposal}"
    )
    if not session.ui.interactive:
        raise PlanBuildError(
            f"{FILENAME} is missing and there is no terminal to approve one",
            f"create it: plan-build identity --set {proposal}",
            code=ExitCode.APPROVAL,
        )
    if not session.ui.confirm(f"Write {FILENAME} with this id?", default=False):
        raise PlanBuildError(
            f"stopped: no {FILENAME} was written",
            "choose an id and run: plan-build identity --set <id>",
            code=ExitCode.APPROVAL,
        )
    write(repo, proposal)
    raise created(proposal)
