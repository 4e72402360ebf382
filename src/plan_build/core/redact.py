"""What looks like a credential, and keeping it out of what plan-build shows, sends or stores.

The one home of the rule, shared by dispatch (Codex prompts, TASKS.md evidence), verify (a
command's output, its log, the report and verify.json), review.plan (the plan sent to Codex)
and verify's secret scan of the change. Redaction uses two mechanical checks, no entropy
guessing (hashes and tree ids are everywhere here):
- the values of environment variables whose names say they are secret (…TOKEN, …SECRET,
  …KEY, …PASSWORD, …) when they appear verbatim;
- detect-secrets' pattern plugins (AWS, GitHub, GitLab, Slack, Stripe, private keys, JWTs, …).
A line with a finding is replaced by a note naming the kind of secret, never the value. An
allowlist pragma does not stop redaction: it is a judgement about committing a value, not
about printing it.

The plugins are called directly, not through detect-secrets' dependency injection, which
costs about thirty Python calls per plugin per line (issue 15: 27,241 injected calls for 902
lines). They are built once under `default_settings()` and never asked to verify a candidate
online: pattern plugins are run through `analyze_string`, which has no verification path, and
the verification filter is never configured.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plan_build.core.errors import ExitCode, PlanBuildError

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTH)",
    re.IGNORECASE,
)
# Guessing plugins: they fire on hashes, ids and prose, so only the full scan of source files
# uses them. Everything else (redaction, lock files, binary content) uses the patterns only.
_KEYWORD = "KeywordDetector"
NOISY = frozenset(
    {"Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector", "IPPublicDetector"}
)
_NOT_SECRET_NAME = re.compile(r"(FILE|PATH|DIR|URL|HOME|ORITY|SOCK|MODE)$", re.IGNORECASE)
MIN_SECRET_LEN = 8
_ALLOWLIST_FILTER = "detect_secrets.filters.allowlist.is_line_allowlisted"
# Filters that plan-build applies itself (file names) or must never run (cwd files, network).
_SKIPPED_FILTERS = ("is_invalid_file", "verification", "is_line_allowlisted")


@dataclass(frozen=True)
class Finding:
    line: int
    kind: str


@dataclass(frozen=True)
class Document:
    """Lines of one file (or text) for the scanner, and how to judge them (`scan_lines`)."""

    filename: str
    lines: Sequence[str]
    patterns_only: bool
    heuristics: bool = True
    previous: Callable[[int], str] | None = None
    shown: bool = False


@dataclass(frozen=True)
class Hit:
    """One suspected secret on one line: its kind, detect-secrets' hash of the value, and
    whether an allowlist pragma (on the line, or `nextline` on the one before) silences it."""

    type: str
    secret_hash: str
    allowlisted: bool


# Regex shapes that make "matches somewhere in the joined text" weaker than "matches in one
# line on its own": anchors to the whole string, and negative lookarounds, which a newline
# next to the line could defeat. A negative lookaround of `\w` or of a plain character class
# that cannot hold a newline is harmless and allowed.
_WHOLE_TEXT_ONLY = re.compile(r"\\[AZz]|\(\?<?!")
_HARMLESS = re.compile(r"\(\?<?!(?:\\w|\[(?!\^)(?:[^\]\\\n]|\\[^sSWDnux0-9])*\])\)")


def _prefilter(plugin: Any) -> list[re.Pattern[str]] | None:
    """The plugin's patterns, recompiled to find candidate lines in a whole text at once, or
    None when that could miss a line (then every line is given to the plugin)."""
    from detect_secrets.plugins.base import RegexBasedDetector

    if not isinstance(plugin, RegexBasedDetector):
        return None
    out = []
    for rx in plugin.denylist:
        if _WHOLE_TEXT_ONLY.search(_HARMLESS.sub("", rx.pattern)):
            return None
        out.append(re.compile(rx.pattern, rx.flags | re.MULTILINE))
    return out


def _line_prefilter(plugin: Any) -> list[re.Pattern[str]] | None:
    """The lines a plugin with its own `analyze_line` can fire on, found in the whole text at
    once, or None (every line is given to it):
    - the keyword plugin fires only on a line holding one of its words (every pattern it has
      is built from DENYLIST): 2.5x less time for a report's 20,000 lines;
    - a high-entropy plugin (without eager search, which plan-build never asks for) looks only
      at quoted runs of its charset, which hold no newline: its own regex finds them (a
      5,000-file change is 5,000 lines it need not be asked about one by one; issue 36)."""
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin

    if isinstance(plugin, HighEntropyStringsPlugin):
        rx = plugin.regex
        if "\n" in plugin.charset or _WHOLE_TEXT_ONLY.search(rx.pattern):
            return None
        return [re.compile(rx.pattern, rx.flags | re.MULTILINE)]
    if type(plugin).__name__ != _KEYWORD:
        return None
    from detect_secrets.plugins.keyword import DENYLIST

    return [re.compile("|".join(DENYLIST), re.IGNORECASE | re.MULTILINE)]


@dataclass(frozen=True)
class _Plugin:
    plugin: Any
    simple: bool  # detect-secrets' own analyze_line: analyze_string alone gives its values
    prefilter: list[re.Pattern[str]] | None


class _Engine:
    """detect-secrets' default plugins and filters, built once, called without injection."""

    def __init__(self) -> None:
        from detect_secrets.settings import default_settings, get_filters, get_plugins

        with default_settings():
            plugins = list(get_plugins())
            filters = list(get_filters())
        base = _base_analyze_line()
        self.all = [
            _Plugin(p, simple, _prefilter(p) if simple else _line_prefilter(p))
            for p in plugins
            for simple in [getattr(type(p), "analyze_line", None) is base]
        ]
        self.patterns = [p for p in self.all if type(p.plugin).__name__ not in NOISY]
        # What plan-build withholds from what it shows: the patterns, and the keyword plugin
        # (`password = "…"`) that verify's scan of a source file also flags (issue 36).
        self.shown = [p for p in self.all if type(p.plugin).__name__ not in NOISY - {_KEYWORD}]
        if not any(type(p.plugin).__name__ == "AWSKeyDetector" for p in self.patterns):
            raise RuntimeError("detect-secrets has no AWS key plugin")  # the canary fails
        self.name_filters = [
            f
            for f in filters
            if f.injectable_variables == {"filename"}
            and not any(s in f.path for s in _SKIPPED_FILTERS)
        ]
        self.hit_filters = [
            f
            for f in filters
            if f.injectable_variables != {"filename"}
            and not any(s in f.path for s in _SKIPPED_FILTERS)
        ]
        # Filters on the value alone; the line heuristics (`x = get_secret()`) are for the
        # scan of source code, not for deciding what may be printed.
        self.value_filters = [f for f in self.hit_filters if "line" not in f.injectable_variables]
        self.allowlist = next(f for f in filters if f.path == _ALLOWLIST_FILTER)

    def noisy_name(self, filename: str) -> bool:
        """detect-secrets skips this file by its name alone (lock files, swagger, `.css`, …)."""
        return any(f(filename=filename) for f in self.name_filters)

    def _filtered(
        self, filename: str, line: str, secret: str, plugin: Any, *, heuristics: bool
    ) -> bool:
        from detect_secrets.util.inject import call_function_with_arguments

        for f in self.hit_filters if heuristics else self.value_filters:
            try:
                if call_function_with_arguments(
                    f, filename=filename, line=line, secret=secret, plugin=plugin, context=None
                ):
                    return True
            except TypeError:  # a filter that takes other arguments (detect-secrets' rule)
                continue
        return False

    def scan_lines(
        self,
        filename: str,
        lines: Sequence[str],
        *,
        patterns_only: bool,
        heuristics: bool = True,
        previous: Callable[[int], str] | None = None,
        shown: bool = False,
    ) -> list[tuple[int, Hit]]:
        """Suspected secrets in `lines` (no newlines inside), as (index, hit) in line order.

        detect-secrets' filters apply (`heuristics=False`: only those that judge the value
        itself). `previous(i)` gives the line before line i, for the allowlist pragma; without
        it nothing counts as allowlisted.
        """
        doc = Document(filename, lines, patterns_only, heuristics, previous, shown)
        return self.scan_documents([doc])[0]

    def scan_documents(self, docs: Sequence[Document]) -> list[list[tuple[int, Hit]]]:
        """`scan_lines` of each document, in one pass over them all. A pattern plugin first
        searches the joined text of every document once and then looks only at the lines it
        matched in (a match across a line or document boundary only adds candidates): the
        same findings as asking it line by line, much faster. A 5,000-file change has 5,000
        documents, and a search of each on its own cost more than the scan (issue 36)."""
        found: list[list[tuple[int, int, Hit]]] = [[] for _ in docs]
        which = [0 if d.shown else 1 if d.patterns_only else 2 for d in docs]
        for kind, plugins in enumerate((self.shown, self.patterns, self.all)):
            mine = [d for d, k in enumerate(which) if k == kind]  # judged by these plugins
            if not mine:
                continue
            joined = _Joined([docs[d] for d in mine])
            for rank, entry in enumerate(plugins):
                if entry.prefilter is not None:
                    candidates = joined.matched(entry.prefilter)
                else:
                    candidates = [
                        (n, i) for n, d in enumerate(mine) for i in range(len(docs[d].lines))
                    ]
                for n, i in candidates:
                    d = mine[n]
                    for hit in self._hits(docs[d], i, entry):
                        found[d].append((i, rank, hit))
        out = []
        for hits in found:
            hits.sort(key=lambda t: (t[0], t[1]))
            out.append([(i, hit) for i, _, hit in hits])
        return out

    def _hits(self, doc: Document, i: int, entry: _Plugin) -> list[Hit]:
        """What `entry`'s plugin finds on line i of `doc` that no filter drops."""
        from detect_secrets.core.potential_secret import PotentialSecret
        from detect_secrets.util.code_snippet import CodeSnippet

        plugin, line = entry.plugin, doc.lines[i]
        if entry.simple:
            values = {str(v) for v in plugin.analyze_string(line)}
        else:
            values = {
                str(s.secret_value)
                for s in plugin.analyze_line(filename=doc.filename, line=line, line_number=0)
            }
        # the keyword plugin is judged with the line heuristics, as verify's scan does
        judged = doc.heuristics or type(plugin).__name__ == _KEYWORD
        hits = []
        for value in sorted(values):
            if self._filtered(doc.filename, line, value, plugin, heuristics=judged):
                continue
            allowlisted = False
            if doc.previous is not None:
                context = CodeSnippet([doc.previous(i), line], start_line=0, target_index=1)
                allowlisted = bool(
                    self.allowlist(filename=doc.filename, line=line, context=context)
                )
            hits.append(
                Hit(str(plugin.secret_type), PotentialSecret.hash_secret(value), allowlisted)
            )
        return hits


class _Joined:
    """The lines of many documents as one text, and where each joined line came from."""

    def __init__(self, docs: Sequence[Document]) -> None:
        self.owner: list[tuple[int, int]] = []  # per joined line: (document, line in it)
        self.starts: list[int] = []
        pos = 0
        for d, doc in enumerate(docs):
            for i, line in enumerate(doc.lines):
                self.owner.append((d, i))
                self.starts.append(pos)
                pos += len(line) + 1
        self.text = "\n".join(line for doc in docs for line in doc.lines)

    def matched(self, patterns: Sequence[re.Pattern[str]]) -> list[tuple[int, int]]:
        """(document, line) of every line a match of any pattern touches, in order."""
        hit_lines: set[int] = set()
        for rx in patterns:
            for m in rx.finditer(self.text):
                first = bisect.bisect_right(self.starts, m.start()) - 1
                last = bisect.bisect_right(self.starts, max(m.start(), m.end() - 1)) - 1
                hit_lines.update(range(first, last + 1))
        return [self.owner[g] for g in sorted(hit_lines)]


def _base_analyze_line() -> Any:
    from detect_secrets.plugins.base import BasePlugin

    return BasePlugin.analyze_line


_built: list[_Engine] = []
_build_lock = threading.Lock()


def engine() -> _Engine:
    """The shared scanner (built on first use; detect-secrets' settings are global state, so
    they are touched only here, once, under a lock)."""
    with _build_lock:
        if not _built:
            _built.append(_Engine())
        return _built[0]


def _env_secrets(env: Mapping[str, str]) -> dict[str, str]:
    return {
        value: name
        for name, value in env.items()
        if _SECRET_NAME.search(name)
        and not _NOT_SECRET_NAME.search(name)
        and len(value.strip()) >= MIN_SECRET_LEN
    }


def scan(text: str, env: Mapping[str, str]) -> list[Finding]:
    """Findings in `text`, one per line at most (1-based line numbers)."""
    known = _env_secrets(env)
    lines = text.splitlines()
    first: dict[int, str] = {}
    for i, hit in engine().scan_lines(
        "adhoc-string-scan", lines, patterns_only=True, heuristics=False, shown=True
    ):
        first.setdefault(i, hit.type)
    findings: list[Finding] = []
    for i, line in enumerate(lines):
        kind = next((f"${name}" for value, name in known.items() if value in line), None)
        kind = kind or first.get(i)
        if kind is not None:
            findings.append(Finding(i + 1, kind))
    return findings


def redact(text: str, env: Mapping[str, str]) -> tuple[str, list[Finding]]:
    """`text` with every line that holds a credential replaced by a note."""
    findings = scan(text, env)
    if not findings:
        return text, []
    by_line = {f.line: f.kind for f in findings}
    lines = text.splitlines(keepends=True)
    for no, kind in by_line.items():
        ending = lines[no - 1][len(lines[no - 1].rstrip("\r\n")) :]
        lines[no - 1] = f"[line withheld by plan-build: looks like a credential ({kind})]{ending}"
    return "".join(lines), findings


def clean(text: str, env: Mapping[str, str]) -> str:
    """`text` redacted (the findings dropped)."""
    return redact(text, env)[0]


def refuse_secrets(text: str, where: str, env: Mapping[str, str], *, fix: str) -> None:
    """Stop (exit 2) naming each line of `where` that looks like a credential; never the value."""
    findings = scan(text, env)
    if findings:
        lines = ", ".join(f"{where}:{f.line} ({f.kind})" for f in findings[:5])
        more = f" and {len(findings) - 5} more" if len(findings) > 5 else ""
        raise PlanBuildError(
            f"{where} contains what looks like a credential: {lines}{more}",
            fix,
            code=ExitCode.USAGE,
        )


def clean_many(
    texts: Sequence[str], env: Mapping[str, str], paths: Sequence[tuple[str, str]] = ()
) -> list[str]:
    """Each text redacted, in one scan of them all (a report holds thousands of short texts;
    one detect-secrets pass each would cost seconds), then each machine path in `paths`
    shown as its stand-in (the repository as `.`, the home as `~`; longest first). A text's
    line breaks come back as newlines."""
    pieces = [t.splitlines() or [""] for t in texts]
    joined = "\n".join(line for lines in pieces for line in lines)
    out = clean(joined, env).split("\n")
    result: list[str] = []
    at = 0
    for lines in pieces:
        text = "\n".join(out[at : at + len(lines)])
        at += len(lines)
        for path, shown in paths:
            if path not in ("", "/"):
                text = text.replace(path, shown)
        result.append(text)
    return result


__all__ = [
    "NOISY",
    "Finding",
    "Hit",
    "clean",
    "clean_many",
    "engine",
    "redact",
    "refuse_secrets",
    "scan",
]
