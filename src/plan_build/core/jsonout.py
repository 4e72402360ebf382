"""Machine output: the one way a `--json` command prints its data.

Indented two spaces, keys sorted and ASCII only (non-ASCII as `\\u` escapes): the bytes are
the same for the same data, whatever order the code built it in, two runs compare line by
line, and any terminal or pipe encoding can carry them. Always one document, one newline.
"""

from __future__ import annotations

import json
from typing import Any, TextIO


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=True) + "\n"


def write(stream: TextIO, data: Any) -> None:
    stream.write(dumps(data))
