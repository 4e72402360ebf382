"""The benchmarks are not run by CI, so a rename must not break them unnoticed: every plan_build
name a bench script imports (at the top or inside a function) still exists."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def imported_names(script: Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None, line) for each plan_build import in the script."""
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("plan_build"):
            found += [(node.module or "", alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [
                (a.name, None, node.lineno) for a in node.names if a.name.startswith("plan_build")
            ]
    return found


@pytest.mark.parametrize("script", sorted(BENCH.glob("*.py")), ids=lambda p: p.name)
def test_every_plan_build_name_a_benchmark_imports_exists(script: Path) -> None:
    missing = []
    for module, name, line in imported_names(script):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            missing.append(f"{script.name}:{line}: no module {module}")
            continue
        if name is not None and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{script.name}:{line}: {module} has no {name}")
    assert missing == []
