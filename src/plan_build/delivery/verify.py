"""Final verification of the intended change (baseline work tree -> current work tree).

Every check reports a row in the shared `checks.Check` shape. A check that could not run
because its tool is missing says "not available" and never "passed". The result is recorded
under the session's state directory with the exact tree it verified; `commit` accepts only a
passing record for the tree it is about to commit.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import threading
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from plan_build import checks, fsutil, proc, redact, snapshot
from plan_build.checkrun import run_check
from plan_build.checks import Check
from plan_build.config import FILENAME, Config
from plan_build.delivery import baseline as baseline_mod
from plan_build.delivery import intended as change_mod
from plan_build.delivery import secretscan
from plan_build.delivery.baseline import Baseline
from plan_build.delivery.intended import Change, display_path
from plan_build.errors import ExitCode, PlanBuildError
from plan_build.gitrepo import Repo

RECORDS = ("SPEC.md", "TASKS.md", "ADR.md", "CHANGELOG.md", "README.md")
HANDOVER = tuple(
    f"docs/{name}"
    for name in (
        "USER_MANUAL.md",
        "RUNBOOK.md",
        "API.md",
        "DEPLOYMENT.md",
        "SECURITY.md",
        "HANDOVER.md",
    )
)
DOCUMENTS = RECORDS + HANDOVER
MODES = ("standard", "architect")
DEFAULT_COMMAND_TIMEOUT = 1800.0
MAX_SHOWN = 8
# Failing checks that `commit` lets the user accept at its approval (never an agent).
ACCEPTABLE_AT_COMMIT = frozenset({"secrets.allowlisted"})

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


def record_path(repo: Repo, session_id: str) -> Path:
    return baseline_mod.sessions_dir(repo) / session_id / "verify.json"


def save_record(repo: Repo, report: Report) -> None:
    data = {**report.as_json(), "when": report.when}
    fsutil.write_json(repo.in_state(record_path(repo, report.change.baseline.id)), data)


def last_record(repo: Repo, session_id: str) -> dict[str, Any] | None:
    """The last verify record of the session; None when it was never verified."""
    path = record_path(repo, session_id)
    fix = "run plan-build verify again (it replaces the record)"
    try:
        data = fsutil.read_json(path, fix)
    except FileNotFoundError:
        return None
    if not isinstance(data, dict):
        raise fsutil.StateFileError(path, "it is not a verify record (not a JSON object)", fix)
    return data


# --- individual checks ------------------------------------------------------------------


def _shown(items: Sequence[str]) -> str:
    more = len(items) - MAX_SHOWN
    return "; ".join(items[:MAX_SHOWN]) + (f"; and {more} more" if more > 0 else "")


def check_change(change: Change) -> Check:
    if change.empty:
        return Check("change", "warn", "no intended change: the work tree matches the baseline")
    return Check("change", "pass", change.summary())


def check_diff(repo: Repo, change: Change) -> Check:
    if change.empty:
        return Check("diff.check", "skip", "nothing to check")
    r = repo.git(
        "diff",
        "--check",
        "--no-color",
        "--no-ext-diff",
        "--no-renames",
        change.baseline.worktree_tree,
        change.tree,
        check=False,
    )
    if r.returncode == 0:
        return Check("diff.check", "pass", "no whitespace errors or conflict markers added")
    problems = [line for line in r.stdout.splitlines() if line and not line.startswith("+")]
    return Check(
        "diff.check",
        "fail",
        _shown(problems) or (r.stderr.strip() or f"git diff --check exited {r.returncode}"),
        "remove the trailing whitespace / conflict markers from those lines",
    )


def check_secrets(
    added: Mapping[str, Sequence[tuple[int, str]]],
    *,
    accepted: bytes | None = None,
    line_before: Callable[[str, int], str] | None = None,
) -> tuple[list[Check], list[secretscan.Finding]]:
    """`secrets.scan`, plus `secrets.allowlisted` when a pragma in the change silences a
    finding; and those silenced findings, for the commit's approval."""
    total = sum(len(v) for v in added.values())
    try:
        if not secretscan.canary_caught():
            return [
                Check(
                    "secrets.scan",
                    "fail",
                    "the secret scanner missed its canary key, so a clean result cannot be trusted",
                    "reinstall plan-build (detect-secrets==1.5.0 is required)",
                )
            ], []
        found = secretscan.scan(added, accepted=accepted, line_before=line_before)
    except secretscan.ScannerUnavailable as exc:
        return [
            Check(
                "secrets.scan",
                "warn",
                f"not available: {exc}",
                "reinstall plan-build so detect-secrets is importable",
            )
        ], []
    hard = [f for f in found if not f.allowlisted]
    silenced = [f for f in found if f.allowlisted]

    def where(items: list[secretscan.Finding]) -> str:
        return _shown([f"{display_path(f.path)}:{f.line} ({f.type})" for f in items])

    if hard:
        rows = [
            Check(
                "secrets.scan",
                "fail",
                f"{len(hard)} suspected secret(s): {where(hard)}",
                "take them out of the change (read them from the environment or a secret "
                "store); a false positive belongs in a .secrets.baseline committed before the "
                "session",
            )
        ]
    else:
        rows = [
            Check("secrets.scan", "pass", f"no secrets in {total} added line(s); canary caught")
        ]
    if silenced:
        rows.append(
            Check(
                "secrets.allowlisted",
                "fail",
                f"{len(silenced)} suspected secret(s) silenced by an allowlist pragma in the "
                f"change: {where(silenced)}",
                "an agent can write a pragma too: if each is a false positive, accept them "
                "yourself when plan-build commit asks; otherwise take them out",
            )
        )
    return rows, silenced


def _line_before(repo: Repo, tree: str) -> Callable[[str, int], str]:
    """Line n-1 of a file in `tree`, read from git only when asked (a `nextline` pragma)."""
    cache: dict[str, list[bytes]] = {}

    def before(path: str, no: int) -> str:
        if path not in cache:
            (data,) = change_mod.read_objects(repo, [f"{tree}:{path}"])
            cache[path] = (data or b"").split(b"\n")
        lines = cache[path]
        return lines[no - 2].decode("utf-8", "replace") if 2 <= no <= len(lines) + 1 else ""

    return before


def committed_secrets_baseline(repo: Repo, base: Baseline) -> bytes | None:
    """`.secrets.baseline` as committed in the baseline's HEAD: the only one that counts."""
    if base.head is None:
        return None
    (data,) = change_mod.read_objects(repo, [f"{base.head}:{secretscan.BASELINE_FILE}"])
    return data


def withheld(row: Check, env: Mapping[str, str]) -> Check:
    """The row with any line that looks like a credential withheld (verify prints and stores
    only what passed through here)."""
    detail = redact.clean(row.detail, env)
    fix = redact.clean(row.remediation, env) if row.remediation else row.remediation
    if detail == row.detail and fix == row.remediation:
        return row
    return replace(row, detail=detail, remediation=fix)


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def fenced_lines(text: str) -> set[int]:
    """1-based numbers of the lines inside (or delimiting) fenced code blocks."""
    inside: set[int] = set()
    fence: str | None = None
    for no, line in enumerate(text.split("\n"), start=1):
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                inside.add(no)
        else:
            inside.add(no)
            closing = m is not None and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)
            if closing and m is not None and not line.strip()[len(m.group(1)) :].strip():
                fence = None
    return inside


_MARKER = re.compile(r"\b(TODO|TBD|FIXME)\b")
_PLACEHOLDER = re.compile(
    r"[<\[{(]\s*(placeholder|insert|fill in)\b|\blorem ipsum\b", re.IGNORECASE
)
_PLACEHOLDER_WORD = re.compile(r"\bPLACEHOLDER\b")
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}")


def _blobs(repo: Repo, tree: str, paths: Sequence[str]) -> dict[str, str]:
    contents = change_mod.read_objects(repo, [f"{tree}:{p}" for p in paths])
    return {
        p: (c.decode("utf-8", "replace") if c is not None else "")
        for p, c in zip(paths, contents, strict=True)
    }


def check_placeholders(
    repo: Repo, change: Change, added: Mapping[str, Sequence[tuple[int, str]]]
) -> Check:
    docs = [p for p in DOCUMENTS if added.get(p)]
    if not docs:
        return Check("records.placeholders", "skip", "no record or handover document changed")
    texts = _blobs(repo, change.tree, docs)
    problems = []
    for path in docs:
        fenced = fenced_lines(texts[path])
        for no, line in added[path]:
            m = _MARKER.search(line) or _PLACEHOLDER.search(line) or _PLACEHOLDER_WORD.search(line)
            if m is None and no not in fenced:
                m = _TEMPLATE.search(line)
            if m:
                problems.append(f"{path}:{no}: {m.group(0).strip()}")
    if problems:
        return Check(
            "records.placeholders",
            "fail",
            _shown(problems),
            "finish that text; approved limitations belong in docs/HANDOVER.md, written out",
        )
    return Check(
        "records.placeholders", "pass", f"no TODO/TBD/FIXME/placeholder text in {len(docs)} doc(s)"
    )


def check_records(repo: Repo, change: Change, mode: str) -> Check:
    if mode != "architect":
        return Check("records.present", "skip", "standard mode: records are not required")
    texts = change_mod.read_objects(repo, [f"{change.tree}:{p}" for p in DOCUMENTS])
    missing = [p for p, t in zip(DOCUMENTS, texts, strict=True) if t is None]
    empty = [p for p, t in zip(DOCUMENTS, texts, strict=True) if t is not None and not t.strip()]
    if missing or empty:
        parts = []
        if missing:
            parts.append("missing: " + ", ".join(missing))
        if empty:
            parts.append("empty: " + ", ".join(empty))
        return Check(
            "records.present",
            "fail",
            "; ".join(parts),
            "write them (a section that does not apply says Not Applicable and why)",
        )
    return Check(
        "records.present", "pass", f"all {len(DOCUMENTS)} records and handover documents present"
    )


_CODE_SPAN = re.compile(r"(`+).*?\1")
_INLINE_LINK = re.compile(
    r"!?\[[^\]]*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
_REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def link_target(source: str, target: str) -> str | None:
    """The repository path a Markdown link points at, or None when it is not a repo link."""
    target = target.strip()
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1].strip()
    if not target or target.startswith(("#", "//")) or _SCHEME.match(target):
        return None
    if "{{" in target or "{%" in target:
        return None
    target = target.split("#", 1)[0].split("?", 1)[0]
    if not target:
        return None
    target = urllib.parse.unquote(target)
    joined = (
        target.lstrip("/")
        if target.startswith("/")
        else posixpath.join(posixpath.dirname(source), target)
    )
    return posixpath.normpath(joined) if joined else "."


def check_links(
    repo: Repo, change: Change, added: Mapping[str, Sequence[tuple[int, str]]]
) -> Check:
    docs = [p for p in added if p.lower().endswith((".md", ".markdown"))]
    if not docs:
        return Check("docs.links", "skip", "no Markdown lines added")
    texts = _blobs(repo, change.tree, docs)
    links: list[tuple[str, int, str, str]] = []
    for path in docs:
        fenced = fenced_lines(texts[path])
        for no, line in added[path]:
            if no in fenced:
                continue
            plain = _CODE_SPAN.sub("", line)
            for m in [*_INLINE_LINK.finditer(plain), *_REF_DEF.finditer(plain)]:
                resolved = link_target(path, m.group(1))
                if resolved is not None:
                    links.append((path, no, m.group(1), resolved))
    if not links:
        return Check("docs.links", "skip", "no links to repository files added")
    known = change_mod.tree_paths(repo, change.tree)
    broken = [
        f"{display_path(p)}:{no} → {target}"
        for p, no, target, resolved in links
        if resolved != "."
        and (resolved.startswith("../") or resolved == ".." or resolved not in known)
    ]
    if broken:
        return Check(
            "docs.links",
            "fail",
            f"{len(broken)} broken link(s): " + _shown(broken),
            "point each link at a file in the change (paths are relative to the document)",
        )
    return Check("docs.links", "pass", f"{len(links)} link(s) to repository files resolve")


def dirty_submodules(repo: Repo, tree: str) -> list[str]:
    (gitmodules,) = change_mod.read_objects(repo, [f"{tree}:.gitmodules"])
    if gitmodules is None:
        return []
    out = change_mod.git_bytes(
        repo,
        "status",
        "--porcelain=v2",
        "-z",
        "--ignore-submodules=none",
        "--untracked-files=no",
    )
    dirty = []
    for rec in out.split(b"\0"):
        fields = rec.split(b" ")
        if len(fields) >= 9 and fields[0] == b"1" and fields[2].startswith(b"S"):
            sub = fields[2].decode("ascii", "replace")
            if sub[2] == "M" or sub[3] == "U":
                dirty.append(os.fsdecode(b" ".join(fields[8:])))
    return dirty


def check_submodules(repo: Repo, change: Change) -> Check | None:
    dirty = dirty_submodules(repo, change.tree)
    if not dirty:
        return None
    return Check(
        "change.submodules",
        "warn",
        "uncommitted work inside submodule(s) is not part of this change: "
        + _shown([display_path(p) for p in dirty]),
        "commit inside each submodule first if that work belongs to this change",
    )


def run_command(
    repo: Repo,
    cmd: VerifyCommand,
    *,
    env: Mapping[str, str],
    log_dir: Path,
    progress: Progress | None,
) -> Check:
    cid = f"command.{cmd.name}"
    shown = redact.clean(proc.quote(cmd.argv), env)
    if progress:
        progress(f"running {cmd.name}: {shown}")

    def beat(elapsed: float) -> None:
        if progress:
            progress(f"{cmd.name} still running ({int(elapsed)}s)")

    r = run_check(cmd.argv, cwd=repo.root, env=env, timeout=cmd.timeout, heartbeat=beat)
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
    if r.error is not None:  # not executable, and the like
        return Check(cid, "fail", f"not available: {r.error}", r.fix)
    log_dir.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", cmd.name)
    log = log_dir / f"{safe}.log"
    out, err = redact.clean(r.stdout, env), redact.clean(r.stderr, env)
    fsutil.atomic_write(log, f"$ {shown}\n# exit {r.returncode} after {r.seconds:.1f}s\n{out}{err}")
    if r.ok:
        return Check(cid, "pass", f"{shown} ({r.seconds:.1f}s)", seconds=r.seconds)
    tail = (err.strip() or out.strip()).splitlines()[-3:]
    return Check(
        cid,
        "fail",
        f"{shown} exited {r.returncode}" + (": " + " | ".join(tail) if tail else ""),
        f"full output: {log}",
        seconds=r.seconds,
    )


# --- the step ---------------------------------------------------------------------------


def _warm_scanner() -> None:
    """Build the secret scanner ahead of its check (which reports any failure itself)."""
    with contextlib.suppress(Exception):
        secretscan.canary_caught()


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
    with snapshot.Rescan(repo) as scan:
        change = change_mod.compute(repo, base, tree=scan.tree())
        mode = detect_mode(repo, base, change.tree, mode_flag)
        added = (
            change_mod.added_lines(repo, base.worktree_tree, change.tree)
            if not change.empty
            else {}
        )
        rows = [check_change(change)]
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
            found, allowlisted = check_secrets(
                added,
                accepted=committed_secrets_baseline(repo, base),
                line_before=_line_before(repo, change.tree),
            )
            silenced.extend(allowlisted)
            return found

        warm.join()
        rows += checks.run_concurrently(
            [
                lambda: check_diff(repo, change),
                secrets,
                lambda: check_placeholders(repo, change, added),
                lambda: check_records(repo, change, mode),
                lambda: check_links(repo, change, added),
            ],
            workers=2,
        )
        if not commands:
            rows.append(
                Check(
                    "commands",
                    "warn",
                    f"no verify.commands in {FILENAME}: the project's own checks were not run",
                    f"list them in {FILENAME} (docs/verify.md#configuration)",
                )
            )
        log_dir = baseline_mod.sessions_dir(repo) / base.id / "logs"
        for cmd in commands:
            rows.append(run_command(repo, cmd, env=env, log_dir=log_dir, progress=progress))
        sub = check_submodules(repo, change)
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
                    "files changed while verifying: " + _shown([display_path(p) for p in moved]),
                    "a check rewrote files (a formatter?) or an agent is still working: "
                    "review the change and run plan-build verify again",
                )
            )
    rows = [withheld(c, env) for c in rows]
    report = Report(
        ok=not any(c.failed for c in rows),
        mode=mode,
        change=change,
        checks=rows,
        when=baseline_mod.now_utc(),
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
    "commands_from",
    "detect_mode",
    "last_record",
    "run",
]
