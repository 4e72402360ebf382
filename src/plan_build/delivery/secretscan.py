"""Offline secret scanning of the lines a change adds, with detect-secrets' plugins.

What is scanned: every line the intended change adds, as git's diff of the two snapshot trees
gives them with `--text --no-textconv --no-ext-diff` (`intended.added_lines`), so neither
`.gitattributes` (`binary`, `-diff`, a textconv driver) nor `core.bigFileThreshold` can hide a
file. A secret that was already in a file is not blamed on the session.

The rules, through the shared scanner in `plan_build.core.redact` (detect-secrets' plugins and
filters, called directly; never online):
- a source file: every default plugin and filter;
- a file detect-secrets skips by name to cut noise (lock files, swagger files, `.css`, `.png`
  and other "non-text" extensions), `.secrets.baseline` itself, and binary content (a NUL
  byte in an added line, scanned as its printable runs): the pattern plugins only, so a token
  is still found while integrity hashes and random bytes are not;
- a secret recorded in `.secrets.baseline` as committed in the baseline's HEAD is accepted;
  the work tree's copy is part of the change and accepts nothing;
- a secret that `pragma: allowlist secret` on its line (or `pragma: allowlist nextline
  secret` on the line before) would silence is reported as allowlisted: an agent can write a
  pragma as easily as a secret, so only the user can accept it, at the commit.

A clean result counts only after a canary (a synthetic AWS key built at run time, so this
source holds none) was caught by the very same code path.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CANARY_PATH = "plan-build-canary.txt"
BASELINE_FILE = ".secrets.baseline"
MAX_BASELINE_BYTES = 16 * 1024 * 1024
# Printable runs inside binary content: what a token embedded in a binary file looks like.
_PRINTABLE = re.compile(r"[^\x00-\x08\x0a-\x1f\x7f\ufffd]{8,}")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    type: str
    allowlisted: bool = False

    def as_json(self) -> dict[str, Any]:
        from plan_build.delivery.intended import path_json

        return {"path": path_json(self.path), "line": self.line, "type": self.type}


class ScannerUnavailable(Exception):
    """detect-secrets cannot be imported or used here."""


def canary_secret() -> str:
    """A well-formed, never-issued AWS access key id, built so no literal key is in the source."""
    tail = base64.b32encode(hashlib.sha256(b"plan-build canary").digest()).decode()[:16]
    return "AKIA" + tail


def canary_diff() -> bytes:
    line = f'aws_key = "{canary_secret()}"'
    return (
        f"diff --git a/{CANARY_PATH} b/{CANARY_PATH}\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        f"+++ b/{CANARY_PATH}\n"
        "@@ -0,0 +1 @@\n"
        f"+{line}\n"
    ).encode()


def accepted_hashes(data: bytes | None) -> dict[str, set[str]]:
    """Secrets a committed `.secrets.baseline` accepts, per file (its bytes as in HEAD)."""
    if not data or len(data) > MAX_BASELINE_BYTES:
        return {}
    try:
        parsed = json.loads(data.decode("utf-8"))
        results = parsed.get("results", {})
        return {
            str(name): {str(r.get("hashed_secret")) for r in rows if isinstance(r, dict)}
            for name, rows in results.items()
            if isinstance(rows, list)
        }
    except (ValueError, AttributeError, RecursionError):
        return {}


def _engine() -> Any:
    from plan_build.core import redact

    try:
        return redact.engine()
    except ImportError as exc:  # pragma: no cover - a pinned dependency
        raise ScannerUnavailable(f"detect-secrets cannot be imported ({exc})") from exc
    except (AttributeError, TypeError, StopIteration) as exc:  # pragma: no cover - the pin
        raise ScannerUnavailable(f"this detect-secrets version does not fit ({exc})") from exc


def scan(
    added: Mapping[str, Sequence[tuple[int, str]]],
    *,
    accepted: bytes | None = None,
    line_before: Callable[[str, int], str] | None = None,
) -> list[Finding]:
    """Suspected secrets in the added lines, per path. Raises ScannerUnavailable.

    `accepted` is `.secrets.baseline` as committed before the session; `line_before(path, n)`
    is line n-1 of the new file, asked only when a finding's previous line was not added (a
    `nextline` pragma may sit there).
    """
    from plan_build.core.redact import Document

    scanner = _engine()
    known = accepted_hashes(accepted)
    docs: list[Document] = []
    rows: list[tuple[str, list[int]]] = []
    for path, lines in added.items():
        if not lines:
            continue
        by_no = {no: text.rstrip() for no, text in lines}
        binary = any("\0" in text for _, text in lines)
        patterns_only = binary or path == BASELINE_FILE or scanner.noisy_name(path)
        numbers: list[int] = []
        texts: list[str] = []
        for no, text in lines:
            for piece in _PRINTABLE.findall(text) if binary else [text.rstrip()]:
                numbers.append(no)
                texts.append(piece)

        def previous(
            i: int, path: str = path, by_no: dict[int, str] = by_no, numbers: list[int] = numbers
        ) -> str:
            no = numbers[i]
            if no - 1 in by_no:
                return by_no[no - 1]
            return line_before(path, no).rstrip() if line_before is not None and no > 1 else ""

        docs.append(Document(path, texts, patterns_only, previous=previous))
        rows.append((path, numbers))
    findings: list[Finding] = []
    for (path, numbers), hits in zip(rows, scanner.scan_documents(docs), strict=True):
        accepted_here = known.get(path, set())
        for i, hit in hits:
            if hit.secret_hash not in accepted_here:
                findings.append(Finding(path, numbers[i], hit.type, hit.allowlisted))
    return sorted(set(findings), key=lambda f: (f.path, f.line, f.type, f.allowlisted))


def canary_caught() -> bool:
    """True when the scanner finds the canary through the same diff parsing and scan path."""
    from plan_build.delivery.intended import parse_added

    try:
        found = scan(parse_added(canary_diff()))
    except RuntimeError:  # the plugin set lacks what the canary needs: not a clean scanner
        return False
    return any(
        f.path == CANARY_PATH and f.type == "AWS Access Key" and not f.allowlisted for f in found
    )


__all__ = [
    "BASELINE_FILE",
    "Finding",
    "ScannerUnavailable",
    "accepted_hashes",
    "canary_caught",
    "canary_secret",
    "scan",
]
