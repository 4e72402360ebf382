"""Keep credentials out of what plan-build sends to Codex or writes into TASKS.md.

Two mechanical checks, no entropy guessing (hashes and tree ids are everywhere here):
- the values of environment variables whose names say they are secret (…TOKEN, …SECRET,
  …KEY, …PASSWORD, …) when they appear verbatim;
- detect-secrets' pattern plugins (AWS, GitHub, GitLab, Slack, Stripe, private keys, JWTs, …).
A line with a finding is replaced by a note naming the kind of secret, never the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTH)",
    re.IGNORECASE,
)
_NOISY = {
    "Base64HighEntropyString",
    "HexHighEntropyString",
    "KeywordDetector",
    "IPPublicDetector",
}
_NOT_SECRET_NAME = re.compile(r"(FILE|PATH|DIR|URL|HOME|ORITY|SOCK|MODE)$", re.IGNORECASE)
MIN_SECRET_LEN = 8


@dataclass(frozen=True)
class Finding:
    line: int
    kind: str


def _env_secrets(env: Mapping[str, str]) -> dict[str, str]:
    return {
        value: name
        for name, value in env.items()
        if _SECRET_NAME.search(name)
        and not _NOT_SECRET_NAME.search(name)
        and len(value.strip()) >= MIN_SECRET_LEN
    }


def _plugins() -> list[dict[str, str]]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes: list[type] = list(get_mapping_from_secret_type_to_class().values())
    names = sorted({c.__name__ for c in classes})
    return [{"name": n} for n in names if n not in _NOISY]


def scan(text: str, env: Mapping[str, str]) -> list[Finding]:
    """Findings in `text`, one per line at most (1-based line numbers)."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    known = _env_secrets(env)
    findings: list[Finding] = []
    with transient_settings({"plugins_used": _plugins()}):
        for no, line in enumerate(text.splitlines(), start=1):
            hit = next((f"${name}" for value, name in known.items() if value in line), None)
            if hit is None and line.strip():
                secret = next(iter(scan_line(line)), None)
                hit = secret.type if secret is not None else None
            if hit is not None:
                findings.append(Finding(no, hit))
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
