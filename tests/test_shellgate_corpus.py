"""Ordinary work passes the Bash hook (issue 35, item 6): every command of
tests/data/ordinary_commands.txt, run in a project that has the files they name (a Makefile and
a package.json whose `release` would push, a justfile, a virtualenv), is let through."""

from __future__ import annotations

from pathlib import Path

import pytest

from plan_build.startup.shellgate import refusal

CORPUS = Path(__file__).resolve().parent / "data" / "ordinary_commands.txt"


def load_corpus(path: Path = CORPUS) -> list[str]:
    """One command a line; a command of several lines between two lines `---`; `#` comments."""
    commands: list[str] = []
    block: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line == "---":
            if block is not None:
                commands.append("\n".join(block))
            block = None if block is not None else []
        elif block is not None:
            block.append(line)
        elif line.strip() and not line.startswith("#"):
            commands.append(line)
    assert block is None, f"{path}: a `---` block is not closed"
    return commands


def make_project(root: Path) -> Path:
    """A small project whose files the corpus names; its release targets push (so `make test`
    and `npm test` pass only if the target that runs is the one judged)."""
    (root / ".git" / "refs" / "heads").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "tests").mkdir()
    (root / "Makefile").write_text(
        ".PHONY: all test lint build release\n"
        "all: test\n"
        "test: lint\n\tpytest -q\n"
        "lint:\n\t@ruff check src tests\n"
        "build:\n\tpython -m build\n"
        "release: test\n\tgit tag v$(VERSION)\n\tgit push --follow-tags\n"
    )
    (root / "justfile").write_text(
        "test:\n    pytest -q\n\nrelease: test\n    git push origin main\n"
    )
    (root / "package.json").write_text(
        '{"scripts": {"test": "jest", "build": "tsc -p .", "lint": "eslint src",'
        ' "dev": "vite", "release": "npm version patch && git push --follow-tags"}}\n'
    )
    venv = root / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "activate").write_text(
        'deactivate () {\n    unset VIRTUAL_ENV\n}\nVIRTUAL_ENV="/srv/app/.venv"\n'
        'export VIRTUAL_ENV\nPATH="$VIRTUAL_ENV/bin:$PATH"\nexport PATH\nhash -r 2>/dev/null\n'
    )
    (root / "scripts").mkdir()
    (root / "scripts" / "gen_schema.py").write_text("import json\nprint(json.dumps({}))\n")
    return root


def test_the_corpus_is_large_and_holds_the_issues_six() -> None:
    commands = load_corpus()
    assert len(commands) >= 200
    assert len(set(commands)) == len(commands), "a command is listed twice"
    for named in (
        'echo "remember to git commit later"',
        'grep -rn "git commit" .',
        "cat .git/HEAD",
        "ls .git/refs/heads",
        "ps -eo pid,comm,args | awk '$2 != \"claude\" && /codex exec/'",
    ):
        assert named in commands
    assert any(c.startswith("cat > notes.md <<'EOF'\n") and "git commit" in c for c in commands)


def test_no_ordinary_command_is_refused(tmp_path: Path) -> None:
    cwd = str(make_project(tmp_path))
    refused = [(c, found.reason) for c in load_corpus() if (found := refusal(c, cwd=cwd))]
    assert refused == []


@pytest.mark.parametrize("command", ["make release", "just release", "npm run release"])
def test_the_same_project_still_refuses_its_release(tmp_path: Path, command: str) -> None:
    found = refusal(command, cwd=str(make_project(tmp_path)))
    assert found is not None
    assert "`git push` sends commits away" in found.reason
