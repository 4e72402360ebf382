"""Final verification of the intended change (baseline work tree -> current work tree).

Every check reports a row in the shared `checks.Check` shape. A check that could not run
because its tool is missing says "not available" and never "passed". The result is recorded
under the session's state directory with the exact tree it verified; `commit` accepts only a
passing record for the tree it is about to commit.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_build.core import checks, clock, config, fsutil, proc, redact, sandbox, snapshot
from plan_build.core.checkrun import run_check
from plan_build.core.checks import Check
from plan_build.core.config import FILENAME, Config
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.delivery import baseline as baseline_mod
from plan_build.delivery import intended as change_mod
from plan_build.delivery import secretscan, statusindex
from plan_build.delivery import verifychecks as vc
from plan_build.delivery.baseline import Baseline
from plan_build.delivery.intended import Change, display_path
from plan_build.delivery.verifychecks import DOCUMENTS, HANDOVER, RECORDS, check_secrets
from plan_build.delivery.verifyrecord import ACCEPTABLE_AT_COMMIT, last_record, record_path

MODES = ("standard", "architect")
DEFAULT_COMMAND_TIMEOUT = 1800.0

Progress = Callable[[str], None]


# --- configuration ----------------------------------------------------------------------


@dataclass(frozen=True)
class VerifyCommand:
    name: str
    argv: tuple[str, ...]
    timeout: float = DEFAULT_COMMAND_TIMEOUT


def _item_line(path: Path, index: int) -> int:
    """The line of `verify.commands[index]` in the config file (1 when it cannot be found)."""
    import yaml

    try:
        node = yaml.compose(path.read_text(encoding="utf-8"))
        for key, value in node.value if node is not None else []:
            if key.value == "verify":
                for key2, value2 in value.value:
                    if key2.value == "commands":
                        return int(value2.value[index].start_mark.line) + 1
    except (OSError, yaml.YAMLError, AttributeError, IndexError, TypeError):
        pass
    return 1


def commands_from(cfg: Config) -> list[VerifyCommand]:
    """The project's verification commands, each with a name, an argv and a timeout."""
    items = cfg.get("verify.commands", None) or []
    result: list[VerifyCommand] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = f"verify.commands[{i}]"

        def bad(what: str, i: int = i) -> PlanBuildError:
            line = _item_line(cfg.path, i) if cfg.path else 1
            return PlanBuildError(
                f"{cfg.path}:{line}: {what}",
                f"fix that entry of {FILENAME} (see docs/verify.md#configuration)",
                code=ExitCode.USAGE,
            )

        if not isinstance(item, Mapping):
            raise bad(f"{where} must be a mapping with name, argv and timeout")
        name = str(item.get("name") or "").strip()
        argv = item.get("argv")
        if not name:
            raise bad(f"{where} needs a name")
        if not argv:
            raise bad(f"{where} ({name}) needs an argv: a non-empty list of words")
        if name in seen:
            raise bad(f"{where}: the name {name!r} is used twice")
        timeout = float(item.get("timeout", DEFAULT_COMMAND_TIMEOUT))
        if timeout <= 0:
            raise bad(f"{where} ({name}): timeout must be a positive number of seconds")
        seen.add(name)
        result.append(VerifyCommand(name, tuple(str(a) for a in argv), timeout))
    return result


def detect_mode(repo: Repo, base: Baseline, tree: str, flag: str | None) -> str:
    """--mode wins; then the mode the session was launched in; then SPEC.md + TASKS.md."""
    if flag:
        if flag not in MODES:
            raise PlanBuildError(
                f"--mode must be standard or architect, not {flag!r}",
                "run: plan-build verify --mode architect (or leave it out to detect it)",
                code=ExitCode.USAGE,
            )
        return flag
    if base.mode in MODES:
        return base.mode
    spec, tasks = change_mod.read_objects(repo, [f"{tree}:SPEC.md", f"{tree}:TASKS.md"])
    return "architect" if spec is not None and tasks is not None else "standard"


# --- the report -------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    ok: bool
    mode: str
    change: Change
    checks: list[Check]
    when: str
    allowlisted: tuple[secretscan.Finding, ...] = ()  # for the user to accept at commit

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "session": self.change.baseline.id,
            "mode": self.mode,
            "change": self.change.as_json(),
            "checks": checks.to_json(self.checks),
            "allowlisted": [f.as_json() for f in self.allowlisted],
        }


def save_record(repo: Repo, report: Report) -> None:
    data = {**report.as_json(), "when": report.when}
    fsutil.write_json(repo.in_state(record_path(repo, report.change.baseline.id)), data)


def run_command(
    repo: Repo,
    cmd: VerifyCommand,
    *,
    env: Mapping[str, str],
    log_dir: Path,
    progress: Progress | None,
    policy: sandbox.Policy | None,
) -> Check:
    cid = f"command.{cmd.name}"
    shown = redact.clean(proc.quote(cmd.argv), env)
    if progress:
        progress(f"running {cmd.name}: {shown}")

    def beat(elapsed: float) -> None:
        if progress:
            progress(f"{cmd.name} still running ({int(elapsed)}s)")

    r = run_check(
        cmd.argv, cwd=repo.root, env=env, timeout=cmd.timeout, heartbeat=beat, policy=policy
    )
    if r.not_found:
        return Check(
            cid,
            "fail",
            f"not available: {cmd.argv[0]} is not installed or not on PATH",
            f"install it, or fix verify.commands in {FILENAME}",
        )
    if r.timed_out:
        return Check(
            cid,
            "fail",
            f"{shown} did not finish within {cmd.timeout:g}s and was stopped",
            f"make it faster or raise its timeout in {FILENAME}",
        )
    if r.error is not None:  # not executable, the sandbox unavailable, and the like
        return Check(cid, "fail", f"not available: {r.error}", r.fix)
    log_dir.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", cmd.name)
    log = log_dir / f"{safe}.log"
    out, err = redact.clean(r.stdout, env), redact.clean(r.stderr, env)
    fsutil.atomic_write(log, f"$ {shown}\n# exit {r.returncode} after {r.seconds:.1f}s\n{out}{err}")
    if r.ok:
        return Check(cid, "pass", f"{shown} ({r.seconds:.1f}s)", seconds=r.seconds)
    if r.denied:  # the sandbox refused it something: that, in one line, is the reason
        return Check(
            cid,
            "fail",
            f"{shown} exited {r.returncode}: {r.denied}",
            f"checks run under the session's sandbox (docs/verify.md); full output: {log}",
            seconds=r.seconds,
        )
    tail = (err.strip() or out.strip()).splitlines()[-3:]
    return Check(
        cid,
        "fail",
        f"{shown} exited {r.returncode}" + (": " + " | ".join(tail) if tail else ""),
        f"full output: {log}",
        seconds=r.seconds,
    )


def changed_commands(
    repo: Repo, base: Baseline, commands: list[VerifyCommand], env: Mapping[str, str]
) -> list[str]:
    """The verify commands that are new or different from the ones committed at the session's
    baseline, each as `name: argv`: the change's own, which an agent may have written; verify,
    `status` and the report name them before they run."""
    if base.head is None:
        before: dict[str, tuple[str, ...]] = {}
    else:
        shown = repo.git("show", f"{base.head}:{FILENAME}", check=False)
        try:
            cfg = config.from_text(shown.stdout, Path(FILENAME)) if shown.ok else None
            before = {c.name: tuple(c.argv) for c in commands_from(cfg)} if cfg else {}
        except PlanBuildError:  # the committed file was broken: every command is the change's
            before = {}
    return [
        redact.clean(f"{c.name}: {proc.quote(c.argv)}", env)
        for c in commands
        if before.get(c.name) != tuple(c.argv)
    ]


def git_state(repo: Repo) -> dict[str, str]:
    """Every ref and HEAD (symbolic target and commit): what no check may move."""
    refs = repo.git("for-each-ref", "--format=%(refname) %(objectname)", check=False).stdout
    state = dict(line.split(" ", 1) for line in refs.splitlines() if " " in line)
    state["HEAD"] = (repo.git("rev-parse", "--verify", "-q", "HEAD", check=False).stdout).strip()
    sym = repo.git("symbolic-ref", "-q", "HEAD", check=False).stdout.strip()
    state["HEAD (branch)"] = sym
    return state


def check_git_state(before: dict[str, str], after: dict[str, str]) -> Check:
    moved = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if not moved:
        return Check("git.state", "pass", "no ref moved while verifying")
    return Check(
        "git.state",
        "fail",
        "moved while verifying: " + vc.shown(moved),
        "something committed, moved a branch or switched HEAD during verify: look at "
        "`git reflog`, put it back, and run plan-build verify again",
    )


# --- the step ---------------------------------------------------------------------------


def _warm_scanner() -> None:
    """Build the secret scanner ahead of its check (which reports any failure itself)."""
    with contextlib.suppress(Exception):
        secretscan.canary_caught()


def _run_commands(
    repo: Repo,
    base: Baseline,
    commands: list[VerifyCommand],
    *,
    env: Mapping[str, str],
    progress: Progress | None,
) -> list[Check]:
    """The project's own checks, each under the session's sandbox, and that no ref moved."""
    rows: list[Check] = []
    if not commands:
        rows.append(
            Check(
                "commands",
                "warn",
                f"no verify.commands in {FILENAME}: the project's own checks were not run",
                f"list them in {FILENAME} (docs/verify.md#configuration)",
            )
        )
        return rows
    log_dir = baseline_mod.sessions_dir(repo) / base.id / "logs"
    changed = changed_commands(repo, base, commands, env)
    if changed:
        if progress:
            progress("verify commands changed in this session: " + "; ".join(changed))
        rows.append(
            Check(
                "commands.changed",
                "warn",
                "changed in this session (run under the sandbox): " + "; ".join(changed),
                f"read them in {FILENAME} before you trust their result",
            )
        )
    policy = sandbox.for_repo(repo, env)
    refs_before = git_state(repo)
    for cmd in commands:
        rows.append(
            run_command(repo, cmd, env=env, log_dir=log_dir, progress=progress, policy=policy)
        )
    rows.append(check_git_state(refs_before, git_state(repo)))
    return rows


def run(
    repo: Repo,
    base: Baseline,
    *,
    config: Config,
    env: Mapping[str, str],
    mode_flag: str | None = None,
    progress: Progress | None = None,
) -> Report:
    """Verify the intended change as it is now; record and return the report."""
    commands = commands_from(config)  # bad configuration fails before anything runs
    baseline_mod.require_settled(repo, "verify")
    # detect-secrets (and the requests it pulls in) takes a large share of verify's time to
    # import: load it on the other core while git snapshots the work tree
    warm = threading.Thread(target=_warm_scanner, daemon=True)
    warm.start()
    with snapshot.Rescan(repo) as scan, ThreadPoolExecutor(max_workers=2) as pool:
        # the first snapshot through the session's kept index, when there is one: its stat
        # data is fresh from the last `status`, so only files changed since are hashed again
        kept = statusindex.kept_tree(repo, base, adopt=scan.adopt)
        tree = kept if kept is not None else scan.tree()
        # the patch, the whitespace check and the file list are walks of the same two trees:
        # started together, one beside the other
        patch = pool.submit(change_mod.added_lines, repo, base.worktree_tree, tree)
        whitespace = pool.submit(vc.diff_check, repo, base.worktree_tree, tree)
        change = change_mod.compute(repo, base, tree=tree)
        mode = detect_mode(repo, base, change.tree, mode_flag)
        added = patch.result()
        rows = [vc.check_change(change)]
        if repo.head() != base.head:
            rows.append(
                Check(
                    "change.head",
                    "warn",
                    "HEAD moved since the session baseline: plan-build commit will refuse",
                    "commit by hand, or move HEAD back to the baseline commit",
                )
            )
        silenced: list[secretscan.Finding] = []

        def secrets() -> list[Check]:
            warm.join()
            found, allowlisted = check_secrets(
                added,
                accepted=vc.committed_secrets_baseline(repo, base),
                line_before=vc.line_before(repo, change.tree),
            )
            silenced.extend(allowlisted)
            return found

        # the change's own checks read git objects only: they run while the project's
        # commands do (a big change's secret scan then costs nothing beside a test suite)
        own = pool.submit(
            checks.run_concurrently,
            [
                lambda: vc.check_diff(repo, change) if change.empty else whitespace.result(),
                secrets,
                lambda: vc.check_placeholders(repo, change, added),
                lambda: vc.check_records(repo, change, mode),
                lambda: vc.check_links(repo, change, added),
            ],
            2,
        )
        ran = _run_commands(repo, base, commands, env=env, progress=progress)
        rows += own.result()
        rows += ran
        sub = vc.check_submodules(repo, change)
        if sub is not None:
            rows.append(sub)
        # stability: a second snapshot through the same private index re-reads only files whose
        # stat data moved, so it is exact and costs about one `git status`
        after = scan.tree()
        if after == change.tree:
            rows.append(
                Check("change.stable", "pass", "the work tree did not change while verifying")
            )
        else:
            moved = change_mod.raw_diff(repo, change.tree, after)
            rows.append(
                Check(
                    "change.stable",
                    "fail",
                    "files changed while verifying: " + vc.shown([display_path(p) for p in moved]),
                    "a check rewrote files (a formatter?) or an agent is still working: "
                    "review the change and run plan-build verify again",
                )
            )
    rows = [vc.withheld(c, env) for c in rows]
    report = Report(
        ok=not any(c.failed for c in rows),
        mode=mode,
        change=change,
        checks=rows,
        when=clock.stamp(),
        allowlisted=tuple(silenced),
    )
    save_record(repo, report)
    return report


__all__ = [
    "ACCEPTABLE_AT_COMMIT",
    "DOCUMENTS",
    "HANDOVER",
    "RECORDS",
    "Report",
    "VerifyCommand",
    "check_secrets",
    "commands_from",
    "detect_mode",
    "last_record",
    "run",
]
