"""One sandbox policy for everything an agent can influence (docs/adr/0190).

The policy is one object, `Policy`, and it is rendered twice:

- into Claude Code's `sandbox` settings (`claude_settings`), which Claude enforces with
  bubblewrap (Linux, WSL2) or Seatbelt (macOS) around every Bash command of the session,
  detached or not, and every process those start;
- into bubblewrap's argument list (`wrap`), around every program plan-build starts for the
  project: verify's commands, a task's Verification commands, a worktree's setup command —
  whoever started plan-build (Claude's Bash tool, the session's broker, the user's terminal).

Under it the repository's git state (the common git dir: refs, HEAD, packed-refs, logs, index,
objects, config, hooks, every worktree's admin files) and plan-build's own records (they live
under the common git dir) are read-only; writes are confined to the work tree (or the task's
worktree) and a private temp directory; the network is closed; the user's credential files are
unreadable. Nothing here reads an agent's command text: what the processes cannot do is what
holds.

A session launched with `--unguarded` (asked in words at the launch, recorded in the protected
guard record, core/guard.py) runs without either layer.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plan_build.core import fsutil, proc
from plan_build.core.errors import ExitCode, PlanBuildError

if TYPE_CHECKING:
    from plan_build.core.gitrepo import Repo

PROBE_TIMEOUT = 10.0
# credential files and folders in the home directory: unreadable inside the sandbox
CREDENTIALS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".config/gcloud",
    ".docker/config.json",
    ".npmrc",
    ".pypirc",
    ".codex/auth.json",
    ".claude/.credentials.json",
)
INSTALL_FIX = (
    "install bubblewrap and socat (`plan-build setup` does it where the package manager can, or "
    "`sudo apt-get install bubblewrap socat`), or start the session with --unguarded to run "
    "without the sandbox at your own risk"
)


@dataclass(frozen=True)
class Policy:
    """What sandboxed processes may do. Paths are absolute and resolved.

    `writable`: the only places a process may write (work trees, its private temp directory,
    the broker's spool). `protected`: read-only even where they lie inside a writable place
    (the git dirs, plan-build's own code when it is installed in the work tree).
    `unreadable`: credential files. `hosts`: network hosts the user allowed (Claude's proxy
    enforces them; checks run with no network at all).
    """

    writable: tuple[Path, ...]
    protected: tuple[Path, ...]
    unreadable: tuple[Path, ...] = ()
    hosts: tuple[str, ...] = ()
    allow_write: tuple[Path, ...] = field(default=())  # extra writable places (Claude only)

    def digest(self) -> str:
        import hashlib

        text = json.dumps(self.as_json(), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def as_json(self) -> dict[str, Any]:
        return {
            "writable": [str(p) for p in self.writable],
            "protected": [str(p) for p in self.protected],
            "unreadable": [str(p) for p in self.unreadable],
            "hosts": list(self.hosts),
            "allow_write": [str(p) for p in self.allow_write],
        }


def _abs(path: Path) -> Path:
    return Path(os.path.realpath(path))


def credential_paths(home: Path) -> tuple[Path, ...]:
    """The credential files and folders that exist in `home` (resolved)."""
    found = []
    for name in CREDENTIALS:
        path = home / name
        if path.exists() or path.is_symlink():
            found.append(_abs(path))
    return tuple(found)


def user_config_path(env: Mapping[str, str]) -> Path:
    """The user's own sandbox settings: `${XDG_CONFIG_HOME:-~/.config}/plan-build/sandbox.json`.
    The only place the policy is widened from: no sandboxed process can write the home
    directory, and the session's change cannot reach it."""
    base = env.get("XDG_CONFIG_HOME") or os.path.join(_home(env), ".config")
    return Path(base) / "plan-build" / "sandbox.json"


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


@dataclass(frozen=True)
class Widening:
    """What the user's own settings add: places checks may also write, hosts Claude's
    commands may reach."""

    writable: tuple[Path, ...] = ()
    hosts: tuple[str, ...] = ()


def user_widening(env: Mapping[str, str]) -> Widening:
    """The user's sandbox settings, checked: absolute paths and host names only; a broken
    file is an error with its location, never ignored (it would narrow or widen silently)."""
    path = user_config_path(env)
    try:
        data = fsutil.read_json(path, "fix or delete it (docs/verify.md#the-sandbox)")
    except FileNotFoundError:
        return Widening()

    def bad(what: str) -> PlanBuildError:
        return PlanBuildError(
            f"{path}: {what}",
            'write {"writable": ["/absolute/dir"], "hosts": ["example.com"]} '
            "(docs/verify.md#the-sandbox)",
            code=ExitCode.USAGE,
        )

    if not isinstance(data, dict) or set(data) - {"writable", "hosts"}:
        raise bad("must be an object with only `writable` and `hosts`")
    writable, hosts = data.get("writable", []), data.get("hosts", [])
    if not isinstance(writable, list) or not all(isinstance(p, str) for p in writable):
        raise bad("`writable` must be a list of absolute paths")
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise bad("`hosts` must be a list of host names")
    for i, entry in enumerate(writable):
        if not entry.startswith("/") or "\0" in entry:
            raise bad(f"writable[{i}] is not an absolute path: {entry!r}")
    for i, host in enumerate(hosts):
        if not re.fullmatch(r"(\*\.)?[A-Za-z0-9.-]{1,253}", host):
            raise bad(f"hosts[{i}] is not a host name: {host!r}")
    return Widening(tuple(_abs(Path(p)) for p in writable), tuple(hosts))


def for_tree(
    work_tree: Path,
    *,
    git_dir: Path,
    common_dir: Path,
    env: Mapping[str, str],
    tmp: Path | None = None,
    allow_write: Sequence[Path] = (),
) -> Policy:
    """The policy for programs working in `work_tree` (the user's, or a task's worktree),
    widened only by the user's own settings (`user_widening`), never into git state."""
    tree = _abs(work_tree)
    protected = [_abs(common_dir), _abs(git_dir)]
    dot_git = tree / ".git"
    if dot_git.exists() or dot_git.is_symlink():  # a linked worktree's gitfile, or the git dir
        protected.append(dot_git if dot_git.is_symlink() else _abs(dot_git))
    package = _abs(Path(__file__).parent.parent)
    if _inside(package, tree):  # plan-build installed in the work tree: its code stays its own
        protected.append(package)
    wider = user_widening(env)
    for extra in wider.writable:
        if any(_inside(extra, p) or _inside(p, extra) for p in protected):
            raise PlanBuildError(
                f"{user_config_path(env)}: {extra} would make git state writable",
                "remove that entry: nothing may write git state from inside the sandbox",
                code=ExitCode.USAGE,
            )
    writable = [tree, *([_abs(tmp)] if tmp is not None else []), *wider.writable]
    return Policy(
        writable=tuple(writable),
        protected=tuple(dict.fromkeys(protected)),
        unreadable=credential_paths(Path(_home(env))),
        hosts=wider.hosts,
        allow_write=tuple(_abs(p) for p in allow_write),
    )


def for_checks(root: Path, env: Mapping[str, str]) -> Policy | None:
    """The policy for the project's programs run in the work tree at `root` (the user's or a
    task's worktree); None only when a person launched this session unguarded (the guard
    record says so). Not a repository: PlanBuildError from discovery."""
    from plan_build.core.gitrepo import discover

    return for_repo(discover(root, env), env)


def for_repo(repo: Repo, env: Mapping[str, str]) -> Policy | None:
    """`for_checks` for a repository already found."""
    from plan_build.core import guard

    if guard.unguarded_session(repo.state_dir, env) is not None:
        return None
    return for_tree(repo.root, git_dir=repo.git_dir, common_dir=repo.common_dir, env=env)


def _inside(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


# --- Claude Code's layer ----------------------------------------------------------------


def claude_settings(policy: Policy) -> dict[str, Any]:
    """The `sandbox` block of plan-build's Claude settings file. Claude lets its Bash tool
    write the working directory (the work tree) and its private TMPDIR; `denyWrite` takes the
    git state back out of it (absolute paths: a relative entry did not apply, measured), and
    no command may retry outside the sandbox (`allowUnsandboxedCommands: false`)."""
    filesystem: dict[str, Any] = {
        "denyWrite": [str(p) for p in policy.protected],
        "denyRead": [str(p) for p in policy.unreadable],
    }
    if policy.allow_write:
        filesystem["allowWrite"] = [str(p) for p in policy.allow_write]
    return {
        "enabled": True,
        "failIfUnavailable": True,
        "allowUnsandboxedCommands": False,
        # a command held to the policy runs without a permission question: the sandbox, not a
        # yes typed a hundred times a session, is what keeps it from git state
        "autoAllowBashIfSandboxed": True,
        "filesystem": filesystem,
        "network": {"allowedDomains": list(policy.hosts)},
    }


def file_tool_rules(policy: Policy) -> list[str]:
    """Permission deny rules that hold Claude's own file tools to the policy. Write, Edit and
    NotebookEdit run in Claude's process, not in the Bash sandbox, and `denyWrite` does not
    reach them (measured, 2.1.332: a Write into .git/hooks landed); Claude applies these rules
    itself, in every permission mode. `//` anchors a rule at the file system's root, and a
    path names its subtree as in gitignore."""
    edit = [f"Edit(/{p}/**)" for p in policy.protected]
    read = [rule for p in policy.unreadable for rule in (f"Read(/{p})", f"Read(/{p}/**)")]
    return [*edit, *read]


# --- bubblewrap, around the programs plan-build starts ---------------------------------


def wrap(policy: Policy, argv: Sequence[str], *, cwd: Path, tmp: Path, bwrap: str) -> list[str]:
    """`argv` under bubblewrap with `policy`: the whole file system read-only, the writable
    places bound read-write, the protected ones read-only again on top, credentials hidden,
    no network, a private temp directory, dying with plan-build. Mounts are applied from the
    shallowest path to the deepest, so a worktree that lies inside the git dir is writable
    while the git dir around it and its own `.git` stay read-only."""
    mounts: list[tuple[Path, str]] = [(p, "rw") for p in (*policy.writable, _abs(tmp))]
    mounts += [(p, "ro") for p in policy.protected]
    args = [bwrap, "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev"]
    seen: set[Path] = set()
    for path, how in sorted(mounts, key=lambda m: (len(m[0].parts), m[1] == "ro")):
        if path in seen and how == "rw":
            continue
        seen.add(path)
        if not (path.exists() or path.is_symlink()):
            continue
        args += ["--bind" if how == "rw" else "--ro-bind", str(path), str(path)]
    for path in policy.unreadable:
        if path.is_dir() and not path.is_symlink():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    args += ["--unshare-net", "--chdir", str(cwd), "--", *argv]
    return args


def check_env(env: Mapping[str, str], tmp: Path) -> dict[str, str]:
    """A check's environment inside the sandbox: its temp directory private, npm's cache in
    it (the home directory is read-only there)."""
    out = dict(env)
    for name in ("TMPDIR", "TMP", "TEMP"):
        out[name] = str(tmp)
    out["npm_config_cache"] = str(tmp / "npm-cache")
    return out


# What a denied write or connection looks like in a program's output: read to word the
# failure for the user, never to decide anything (the kernel already refused it).
_EROFS = "Read-only file system"
_PATH_BEFORE = re.compile(r"(?:['\"`]([^'\"`\n]+)['\"`]|([^\s'\"`:]+)):? " + _EROFS)
_PATH_AFTER = re.compile(_EROFS + r"(?: \(os error 30\))?: (?:['\"`]([^'\"`\n]+)['\"`]|(\S+))")
_OUTSIDE = ("unpacker error", "unable to create temporary object directory", _EROFS)
_NETWORK = re.compile(
    r"Could not resolve host|Network is unreachable|Temporary failure in name resolution|"
    r"ENETUNREACH|EAI_AGAIN|Name or service not known|getaddrinfo ENOTFOUND"
)


def denial(policy: Policy, text: str, root: Path) -> str | None:
    """One line naming what the sandbox refused a check, from its output; None when the
    output shows no refusal."""
    for line in text.splitlines():
        if _EROFS not in line:
            continue
        match = _PATH_AFTER.search(line) or _PATH_BEFORE.search(line)
        if match is None:
            continue
        path = Path(next(g for g in match.groups() if g))
        path = path if path.is_absolute() else root / path
        path = Path(os.path.normpath(path))
        if any(_inside(path, p) for p in policy.protected):
            return (
                f"the check tried to write {_shown(path, root)}: checks run without access to "
                "git state"
            )
        if not any(_inside(path, p) for p in policy.writable):
            return (
                f"the check tried to write {_shown(path, root)}: checks may write only the work "
                "tree and their temp directory"
            )
    if any(marker in text for marker in _OUTSIDE):
        return (
            "the check tried to write outside the work tree (a push or a write to another "
            "repository?): checks may write only the work tree and their temp directory"
        )
    if _NETWORK.search(text):
        return "the check tried to reach the network: checks run without network access"
    return None


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


# --- availability -------------------------------------------------------------------------


@dataclass(frozen=True)
class Layer:
    """Whether this machine can enforce the policy: bubblewrap that runs, and socat (Claude's
    network proxy on Linux). `problem` says what is missing."""

    bwrap: str | None
    socat: str | None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def probe(env: Mapping[str, str]) -> Layer:
    """Find bubblewrap and socat and prove bubblewrap can make a read-only namespace here
    (a container may forbid it)."""
    import sys

    if sys.platform == "darwin":  # Seatbelt ships with macOS; checks need bubblewrap (Linux)
        return Layer(
            None, None, "checks under the sandbox need Linux's bubblewrap (macOS: not yet)"
        )
    bwrap = proc.which("bwrap", env)
    socat = proc.which("socat", env)
    missing = [name for name, path in (("bubblewrap", bwrap), ("socat", socat)) if path is None]
    if missing or bwrap is None:
        return Layer(bwrap, socat, f"{' and '.join(missing)} not installed")
    true = proc.which("true", env) or "/bin/true"
    try:
        done = proc.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "--", true],
            env=env,
            timeout=PROBE_TIMEOUT,
        )
    except (proc.CommandTimeout, proc.CommandNotFound, PlanBuildError) as exc:
        return Layer(bwrap, socat, f"bubblewrap did not run: {exc}")
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        return Layer(bwrap, socat, f"bubblewrap cannot make a sandbox here: {why}")
    return Layer(bwrap, socat)


def unavailable(layer: Layer) -> PlanBuildError:
    return PlanBuildError(
        f"the sandbox that keeps agents and checks away from git state is unavailable: "
        f"{layer.problem}",
        INSTALL_FIX,
        code=ExitCode.PREFLIGHT,
    )


__all__ = [
    "Layer",
    "Policy",
    "check_env",
    "claude_settings",
    "denial",
    "for_tree",
    "probe",
    "wrap",
]
