"""Invoke entry in a checkout: `inv plan` runs exactly what `plan-build plan` runs.

When loaded by the `inv`/`invoke` binary, this hands the command line to plan-build's own
Program (same tasks, same strict flag rules and exit codes; see docs/adr/0003). Imported any
other way it just exposes the collection as `ns`.
"""

from __future__ import annotations

import sys
from pathlib import Path

_SRC = Path(__file__).resolve().parent / "src"
if _SRC.is_dir() and str(_SRC) not in sys.path:
    sys.path.insert(0, str(_SRC))

from plan_build.commands import namespace as ns  # noqa: E402

__all__ = ["ns"]

if Path(sys.argv[0]).name in {"inv", "invoke"}:
    from plan_build.program import build_program

    build_program(binary=Path(sys.argv[0]).name).run(["plan-build", *sys.argv[1:]])
    sys.exit(0)
