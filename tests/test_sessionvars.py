"""The session's variables and its id's grammar have one home (`sessionvars`, ADR 0186).

Dispatch telemetry tags a record with the session it ran in; the tag must be an id a baseline
could have (telemetry once took `a..b` and `x.lock`, which no baseline can be). And no module
but `sessionvars` types a session variable's name.
"""

from __future__ import annotations

import ast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_build.core import sessionvars
from plan_build.core.errors import PlanBuildError
from plan_build.delivery import baseline
from plan_build.dispatch import telemetry
from tests.support.paths import ROOT

SRC = ROOT / "src" / "plan_build"
NAMES = (sessionvars.SESSION, sessionvars.MEMORY_MODE, sessionvars.RELEASE)


def baseline_accepts(sid: str) -> bool:
    try:
        baseline.validate_id(sid)
    except PlanBuildError:
        return False
    return True


ID_TEXT = st.text(alphabet=st.sampled_from("aZ09._-. /é\t\n"), max_size=70)


@given(ID_TEXT | st.text(max_size=70))
def test_telemetry_tags_exactly_the_ids_a_baseline_accepts(value: str) -> None:
    tag = telemetry.session_of({sessionvars.SESSION: value})
    sid = value.strip()
    assert tag == (sid if baseline_accepts(sid) else None)


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        ("20261204-101500-3fa2c1", "20261204-101500-3fa2c1"),
        ("  s1 ", "s1"),
        ("a.b", "a.b"),
        ("x" * 64, "x" * 64),
        ("a..b", None),  # telemetry took these before; a baseline never did
        ("a.", None),
        ("s1.lock", None),
        ("x" * 65, None),
        (".a", None),
        ("-a", None),
        ("", None),
    ],
)
def test_the_ids_telemetry_once_took_and_a_baseline_refuses(value: str, tag: str | None) -> None:
    assert telemetry.session_of({sessionvars.SESSION: value}) == tag
    assert baseline_accepts(value.strip()) is (tag is not None)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string literal that is not a docstring."""
    docs: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docs.add(id(value))
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_only_sessionvars_types_a_session_variable_name() -> None:
    typed = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "sessionvars.py":
            continue
        for line, text in _strings(ast.parse(path.read_text())):
            typed += [f"{path.relative_to(SRC)}:{line}: {n}" for n in NAMES if n in text]
    assert typed == []
