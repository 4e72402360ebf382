"""verify's individual checks of the intended change, each returning one `checks.Check` row.

They read only git objects of the change's trees (never the work tree), so what they judge is
the exact tree `verify` records. `verify` runs them (several at once) and records the result.
"""

from __future__ import annotations

import os
import posixpath
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from plan_build.core import redact
from plan_build.core.checks import Check
from plan_build.core.gitrepo import Repo
from plan_build.delivery import intended as change_mod
from plan_build.delivery import secretscan
from plan_build.delivery.baseline import Baseline
from plan_build.delivery.intended import Change, display_path

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
MAX_SHOWN = 8


def shown(items: Sequence[str]) -> str:
    """At most MAX_SHOWN items, then how many more."""
    more = len(items) - MAX_SHOWN
    return "; ".join(items[:MAX_SHOWN]) + (f"; and {more} more" if more > 0 else "")


def check_change(change: Change) -> Check:
    if change.empty:
        return Check("change", "warn", "no intended change: the work tree matches the baseline")
    return Check("change", "pass", change.summary())


def check_diff(repo: Repo, change: Change) -> Check:
    if change.empty:
        return Check("diff.check", "skip", "nothing to check")
    return diff_check(repo, change.baseline.worktree_tree, change.tree)


def diff_check(repo: Repo, old: str, new: str) -> Check:
    """`git diff --check` between two trees (verify starts it beside the change's own diff)."""
    r = repo.git(
        "diff", "--check", "--no-color", "--no-ext-diff", "--no-renames", old, new, check=False
    )
    if r.returncode == 0:
        return Check("diff.check", "pass", "no whitespace errors or conflict markers added")
    problems = [line for line in r.stdout.splitlines() if line and not line.startswith("+")]
    return Check(
        "diff.check",
        "fail",
        shown(problems) or (r.stderr.strip() or f"git diff --check exited {r.returncode}"),
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
        return shown([f"{display_path(f.path)}:{f.line} ({f.type})" for f in items])

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


def line_before(repo: Repo, tree: str) -> Callable[[str, int], str]:
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
            shown(problems),
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
            f"{len(broken)} broken link(s): " + shown(broken),
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
        + shown([display_path(p) for p in dirty]),
        "commit inside each submodule first if that work belongs to this change",
    )


__all__ = [
    "DOCUMENTS",
    "HANDOVER",
    "MAX_SHOWN",
    "RECORDS",
    "check_change",
    "check_diff",
    "check_links",
    "check_placeholders",
    "check_records",
    "check_secrets",
    "check_submodules",
    "committed_secrets_baseline",
    "diff_check",
    "dirty_submodules",
    "fenced_lines",
    "line_before",
    "link_target",
    "shown",
    "withheld",
]
