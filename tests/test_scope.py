"""Scope entries: which changed paths a task's allowed scope covers."""

from __future__ import annotations

import pytest

from plan_build.dispatch.scope import Scope, problem


@pytest.mark.parametrize(
    ("pattern", "path", "allowed"),
    [
        ("src/app.py", "src/app.py", True),
        ("src/app.py", "src/app.pyc", False),
        ("src/app.py", "lib/src/app.py", False),
        ("src/audit", "src/audit/page.py", True),  # a directory covers what is inside
        ("src/audit/", "src/audit/deep/page.py", True),
        ("src/audit", "src/auditing.py", False),
        ("src/*.py", "src/app.py", True),
        ("src/*.py", "src/sub/app.py", False),  # * stays in one segment
        ("src/**/*.py", "src/app.py", True),  # ** may be empty
        ("src/**/*.py", "src/a/b/app.py", True),
        ("src/**", "src/a/b/c.txt", True),
        ("**/test_*.py", "tests/unit/test_page.py", True),
        ("tests/test_?.py", "tests/test_a.py", True),
        ("tests/test_[ab].py", "tests/test_c.py", False),
        ("tests/test_[!ab].py", "tests/test_c.py", True),
        ("./docs/api.md", "docs/api.md", True),
        ("docs/a+b (1).md", "docs/a+b (1).md", True),
    ],
)
def test_scope_patterns(pattern: str, path: str, allowed: bool) -> None:
    assert Scope((pattern,)).allows(path) is allowed


def test_outside_lists_paths_no_entry_allows_in_order() -> None:
    scope = Scope(("src/app.py", "tests/**"))
    changed = ["config/x.py", "src/app.py", "tests/a/b.py", "README.md"]
    assert scope.outside(changed) == ["config/x.py", "README.md"]


def test_unmatched_names_entries_that_match_no_file() -> None:
    scope = Scope(("src/app.py", "src/tpyo.py", "tests/**"))
    assert scope.unmatched(["src/app.py", "README.md"]) == ["src/tpyo.py", "tests/**"]


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("/etc/passwd", "is absolute"),
        ("C:\\src", "is absolute"),
        ("src\\app.py", "uses backslashes"),
        ("../other/x.py", "leaves the repository"),
        ("src/../../x", "leaves the repository"),
        (".git/config", "whole repository or .git"),
        ("**", "whole repository"),
        ("*", "whole repository"),
        (".", "whole repository"),
        ("  ", "empty scope entry"),
    ],
)
def test_entries_that_cannot_be_a_scope(pattern: str, why: str) -> None:
    message = problem(pattern)
    assert message is not None
    assert why in message


def test_ordinary_entries_are_fine() -> None:
    for pattern in ("src/app.py", "src/**", "tests/", "docs/*.md"):
        assert problem(pattern) is None
