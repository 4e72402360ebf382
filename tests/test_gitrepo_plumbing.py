"""What `discover` makes of git's plumbing answers, one faked process at a time
(pytest-subprocess): the outputs a real repository rarely gives but a broken git or an odd
checkout can. Real repositories are covered end to end by the tests that use the `repo`
fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from plan_build.core import gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError

# As plan-build runs it: one rev-parse (outside a work tree git answers the first three, then
# fails), with the read-only-index options every git call carries (git_argv).
PROBE = gitrepo.git_argv(
    [
        "rev-parse",
        *("--is-bare-repository", "--is-inside-git-dir", "--is-inside-work-tree"),
        *("--show-toplevel", "--absolute-git-dir", "--git-common-dir"),
    ]
)


def refused(tmp_path: Path) -> PlanBuildError:
    with pytest.raises(PlanBuildError) as info:
        gitrepo.discover(tmp_path, {})
    assert info.value.code == ExitCode.PREFLIGHT
    return info.value


def test_git_refusing_the_directory_is_not_a_repository(fp: Any, tmp_path: Path) -> None:
    fp.register(PROBE, stderr="fatal: not a git repository\n", returncode=128)
    err = refused(tmp_path)
    assert str(err).startswith(f"{tmp_path} is not inside a git repository")
    assert "git init" in str(err)


def test_a_bare_repository_is_refused_with_the_worktree_fix(fp: Any, tmp_path: Path) -> None:
    fp.register(PROBE, stdout="true\nfalse\nfalse\n")
    assert "git worktree add" in str(refused(tmp_path))


def test_inside_the_git_directory_points_at_the_top_level(fp: Any, tmp_path: Path) -> None:
    fp.register(PROBE, stdout="false\ntrue\nfalse\n")
    assert "is inside the .git directory" in str(refused(tmp_path))


def test_truncated_plumbing_output_is_not_a_usable_work_tree(fp: Any, tmp_path: Path) -> None:
    fp.register(PROBE, stdout=f"false\nfalse\ntrue\n{tmp_path}\n")  # two lines missing
    assert "is not inside a usable git work tree" in str(refused(tmp_path))


def test_a_relative_common_dir_is_taken_from_where_git_ran(fp: Any, tmp_path: Path) -> None:
    fp.register(PROBE, stdout=f"false\nfalse\ntrue\n{tmp_path}\n{tmp_path}/.git\n.git\n")
    repo = gitrepo.discover(tmp_path, {})
    assert (repo.root, repo.common_dir) == (tmp_path, (tmp_path / ".git").resolve())
    assert repo.state_dir == (tmp_path / ".git").resolve() / "plan-build"
