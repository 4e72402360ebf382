"""Path comparisons on file systems that fold case or Unicode normalisation (macOS, Windows
drives under WSL): git records them as core.ignorecase and core.precomposeunicode, and scope,
by-products, TASKS.md's exclusion and the symlink-escape check compare names the same way.
On Linux (both off) every spelling stays its own name.

Linux cannot make a case-insensitive directory here, so each test sets the git setting and
spells one side the other way, as macOS would report it."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from plan_build.core import fsutil, gitrepo
from plan_build.core.errors import PlanBuildError
from plan_build.core.fsutil import NameRules
from plan_build.dispatch import attempt
from plan_build.dispatch.scope import Byproducts, Scope
from tests.support.dispatching import PLAN, codex_edits, make_plan, status_of
from tests.support.gitcmd import git
from tests.support.stubs import Stubs

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}
NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")
MACOS = NameRules(ignorecase=True, precompose=True)


def test_the_repository_reports_its_file_system_rules(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GIT_CONFIG_COUNT", raising=False)  # the portable run's settings
    assert gitrepo.discover(repo).names == NameRules()
    git(repo, "config", "core.ignorecase", "true")
    git(repo, "config", "core.precomposeunicode", "yes")
    assert gitrepo.discover(repo).names == MACOS
    git(repo, "config", "core.ignorecase", "false")
    assert gitrepo.discover(repo).names == NameRules(precompose=True)


def test_the_rules_also_come_from_git_config_in_the_environment(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.ignoreCase")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "true")
    assert gitrepo.discover(repo).names.ignorecase


def test_scope_compares_names_as_the_file_system_does() -> None:
    scope = ("src/Audit/", f"docs/{NFD}.md", "lib/*.PY")
    on_linux, on_macos = Scope(scope), Scope(scope, MACOS)
    for path in ("src/audit/page.py", f"docs/{NFC}.md", "lib/x.py"):
        assert not on_linux.allows(path)
        assert on_macos.allows(path)
    assert on_macos.outside(["src/other.py", "src/AUDIT/x"]) == ["src/other.py"]
    assert on_macos.unmatched(["SRC/AUDIT/a.py"]) == [f"docs/{NFD}.md", "lib/*.PY"]


def test_byproducts_compare_names_as_the_file_system_does() -> None:
    patterns = ("Build/", "*.PYC", "out/Cache")
    on_linux, on_macos = Byproducts(patterns), Byproducts(patterns, MACOS)
    for path in ("a/build/x.o", "m/__pycache__/m.pyc", "OUT/cache/1"):
        assert not on_linux.matches(path)
        assert on_macos.matches(path)


def test_tasks_md_in_another_case_stays_out_of_the_snapshot(repo: Path) -> None:
    # on macOS plan-build's TASKS.md is the tracked tasks.md; its own edits are no change
    git(repo, "config", "core.ignorecase", "true")
    (repo / "tasks.md").write_text("# Tasks\n")
    git(repo, "add", "tasks.md")
    git(repo, "commit", "-qm", "plan")
    r = gitrepo.discover(repo)
    before = attempt.tree(r)
    (repo / "tasks.md").write_text("# Tasks\n\nStatus: In Progress\n")
    assert attempt.tree(r) == before
    (repo / "README.md").write_text("changed\n")
    assert attempt.tree(r) != before  # everything else still counts


def test_a_link_into_git_in_another_spelling_is_refused(repo: Path) -> None:
    # macOS resolves `.GIT/hooks` to the repository's own .git/hooks
    (repo / "hooks").symlink_to(repo / ".GIT" / "hooks")
    with pytest.raises(PlanBuildError) as err:
        gitrepo.discover(repo).inside(repo / "hooks" / "pre-commit")
    assert "into the repository's .git" in err.value.what


def test_a_link_inside_in_another_spelling_is_followed_where_names_fold(
    tmp_path: Path, repo: Path
) -> None:
    # the link names the repository's own directory with other case and NFD accents
    (repo / NFC).mkdir()
    spelled = tmp_path / repo.name.upper() / NFD
    (repo / "docs").symlink_to(spelled, target_is_directory=True)
    with pytest.raises(PlanBuildError) as err:
        fsutil.confine(repo / "docs" / "a.md", repo)
    assert "outside the repository" in err.value.what
    assert fsutil.confine(repo / "docs" / "a.md", repo, names=MACOS) == repo / "docs" / "a.md"
    # a real way out is refused whatever the rules
    (repo / "out").symlink_to(tmp_path)
    with pytest.raises(PlanBuildError):
        fsutil.confine(repo / "out" / "x", repo, names=MACOS)


def _scoped_plan(repo: Path, scope_line: str) -> Path:
    text = PLAN.replace("- `src/app.py`", scope_line).replace("{verify}", "true")
    return make_plan(repo, text=text)


def test_dispatch_allows_an_edit_whose_case_differs_from_the_scope_on_macos(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = _scoped_plan(repo, "- `SRC/App.py`")
    git(repo, "config", "core.ignorecase", "true")
    codex_edits(stubs, {"src/app.py": "fixed\n"})
    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr
    assert status_of(tasks_md, "TASK-002") == "Review"


def test_dispatch_allows_a_name_that_differs_only_by_normalisation_on_macos(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = _scoped_plan(repo, f"- `src/app.py`\n- `src/{NFC}.py`")
    git(repo, "config", "core.precomposeunicode", "true")
    codex_edits(stubs, {"src/app.py": "fixed\n", f"src/{NFD}.py": "menu = []\n"})
    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr
    assert status_of(tasks_md, "TASK-002") == "Review"


def test_on_linux_a_scope_in_another_case_still_blocks(repo: Path, stubs: Stubs, cli) -> None:
    if gitrepo.discover(repo).names.ignorecase:  # the portable session folds case for all
        pytest.skip("core.ignorecase is set for every git call")
    _scoped_plan(repo, "- `SRC/App.py`")
    codex_edits(stubs, {"src/app.py": "fixed\n"})
    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
    assert r.code == 6
    assert "outside the scope: src/app.py" in r.stderr


@pytest.mark.parametrize("setting", ["core.autocrlf=true", "core.fileMode=false"])
def test_line_counts_and_whitespace_follow_what_git_stores(
    repo: Path, setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CRLF work-tree files under autocrlf are stored (and counted) as LF lines, with no
    trailing-CR whitespace error; without a trusted exec bit a chmod is no change."""
    from plan_build.delivery import baseline, verifychecks
    from plan_build.delivery import intended as change

    key, value = setting.split("=")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", key)
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", value)
    (repo / "app.py").write_bytes(b"a = 1\r\nb = 2\r\n")
    (repo / "run.sh").write_text("echo hi\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "files")
    r = gitrepo.discover(repo)
    base = baseline.capture(r, session_id="s")
    (repo / "app.py").write_bytes(b"a = 1\r\nb = 3\r\nc = 4\r\n")
    (repo / "run.sh").chmod(0o755)

    now = change.compute(r, base)
    counts = {f.path: (f.status, f.added, f.deleted) for f in now.files}
    if key == "core.autocrlf":
        assert counts == {"app.py": ("M", 2, 1), "run.sh": ("M", 0, 0)}  # the mode
        assert verifychecks.check_diff(r, now).status == "pass"
        added = change.added_lines(r, base.worktree_tree, now.tree)["app.py"]
        assert added == [(2, "b = 3"), (3, "c = 4")]  # no "\r" for the secret scan to see
    else:
        assert "run.sh" not in counts  # git would not commit the mode either
