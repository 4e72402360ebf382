"""Offline secret scanning of added lines, through detect-secrets' Python API.

Only lines the change adds are scanned, so a secret that was already in a file is not blamed
on the session. The scan never touches the network: detect-secrets' CLI would ask vendors'
APIs to confirm candidates unless told not to; its Python API under `default_settings()` has
no verification filter, and any such filter is removed here anyway. A clean result counts only
after a canary (a synthetic AWS key built at run time, so this source holds none) was caught by
the very same code path. A line marked `pragma: allowlist secret` is skipped (detect-secrets'
own rule), and secrets recorded in a committed `.secrets.baseline` are not reported again.

detect-secrets 1.5.0 is pinned exactly: `_process_line_based_plugins` is the function its own
`scan_diff` uses per file (that one needs `unidiff`, which we do not install); the canary
catches an upgrade that breaks it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CANARY_PATH = "plan-build-canary.txt"
BASELINE_FILE = ".secrets.baseline"


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    type: str


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


def _known_hashes(root: Path | None) -> dict[str, set[str]]:
    """Secrets a committed `.secrets.baseline` already accepts, per file."""
    if root is None:
        return {}
    path = root / BASELINE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        results = data.get("results", {})
        return {
            name: {str(r.get("hashed_secret")) for r in rows if isinstance(r, dict)}
            for name, rows in results.items()
            if isinstance(rows, list)
        }
    except (OSError, ValueError, AttributeError):
        return {}


def scan(
    added: Mapping[str, Sequence[tuple[int, str]]], *, root: Path | None = None
) -> list[Finding]:
    """Potential secrets in the added lines, per path. Raises ScannerUnavailable."""
    try:
        from detect_secrets.core import scan as ds_scan
        from detect_secrets.settings import default_settings
    except ImportError as exc:  # pragma: no cover - a pinned dependency
        raise ScannerUnavailable(f"detect-secrets cannot be imported ({exc})") from exc
    process = getattr(ds_scan, "_process_line_based_plugins", None)
    filtered_out = getattr(ds_scan, "_is_filtered_out", None)
    if process is None or filtered_out is None:  # pragma: no cover - guarded by the pin
        raise ScannerUnavailable("this detect-secrets version lacks the line-scanning API")
    known = _known_hashes(root)
    findings: list[Finding] = []
    with default_settings() as settings:
        # Paths are repository paths, not files under the cwd; and never verify online.
        unwanted = [
            name
            for name in settings.filters
            if name.endswith(".is_invalid_file") or "verification" in name
        ]
        if unwanted:
            settings.disable_filters(*unwanted)
        for path, lines in added.items():
            if path == BASELINE_FILE or not lines:
                continue  # the baseline holds hashes of accepted secrets, as detect-secrets does
            if filtered_out(required_filter_parameters=["filename"], filename=path):
                continue
            for secret in process(list(lines), filename=path):
                if secret.secret_hash in known.get(path, set()):
                    continue
                findings.append(Finding(path, int(secret.line_number), str(secret.type)))
    return sorted(set(findings), key=lambda f: (f.path, f.line, f.type))


def canary_caught() -> bool:
    """True when the scanner finds the canary through the same diff parsing and scan path."""
    from plan_build.delivery.intended import parse_added

    found = scan(parse_added(canary_diff()))
    return any(f.path == CANARY_PATH and f.type == "AWS Access Key" for f in found)


__all__ = ["Finding", "ScannerUnavailable", "canary_caught", "canary_secret", "scan"]
