"""The Bash hook's judgement (startup/shellgate.py), the friendly first layer: the obvious forms
of a commit, a push, an approval, a write into .git or a discard of uncommitted work are refused
with a reason, through every wrapper, quoting and indirection named here; words that are only
data (an echo, a grep, a heredoc note, a read of .git) are not commands and pass."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plan_build.startup.shellgate import refusal

REFUSED = [
    "git commit -m x",
    "setsid -f git push",
    'bash -c "plan-build commit"',
    "timeout 5 git commit",
    "VAR=1 git commit",
    "true && git commit",
    "false || git push origin main",
    "ls; git commit -am x",
    "git status | git commit -F -",
    "(cd sub && git commit -m x)",
    "{ git push; }",
    "echo $(git commit -m x)",
    'echo "$(git push)"',
    "echo `git push`",
    "cat <(git commit -m x)",
    "/usr/bin/git -C . commit",
    "git -C /tmp/x commit -m y",
    "git -c user.name=x commit -m y",
    "git --git-dir=.git --work-tree=. commit",
    "git --no-pager -P push",
    "GIT_DIR=.git git commit",
    "env git commit",
    "env -i PATH=/usr/bin git push origin",
    "env -S 'git commit -m x'",
    "nohup git push &",
    "nice -n 5 git commit",
    "ionice -c3 git commit",
    "command git commit",
    "exec git push",
    "builtin command -p git commit",
    "sudo -u me git push",
    "xargs git commit < f",
    "find . -maxdepth 0 -exec git commit \\;",
    "stdbuf -o0 git push",
    "flock /tmp/l git commit",
    "script -qec 'git commit -m x' /dev/null",
    "su -c 'git push' me",
    "watch -n1 'git commit -m x'",
    "tmux new -d 'git push'",
    "systemd-run --user git push",
    "uv run git commit",
    "sh -c 'nice -n 5 git commit'",
    "bash -lc 'cd .. && git commit -m x'",
    "zsh -c \"bash -c 'git push'\"",
    "bash <<EOF\ngit commit -m x\nEOF",
    "bash <<< 'git push'",
    "eval 'git commit -m x'",
    'eval "$CMD" git commit',
    "c=commit; git $c -m x",
    "x=gi; y=t; $x$y commit",
    "GIT=git; $GIT commit",
    "$(which git) commit -m x",
    "echo Z2l0IGNvbW1pdA== | base64 -d | sh",
    '"gi""t" co\\mmit -m x',
    "'git' 'commit'",
    "g\\it push",
    "GIT commit",
    "git-commit -m x",
    "/usr/lib/git-core/git-push origin",
    "git ci -m x",
    "git config alias.ci commit",
    "git config --global alias.p '!git push'",
    "git -c alias.x=commit x",
    "git merge main",
    "git pull --rebase",
    "git rebase -i HEAD~2",
    "git cherry-pick abc",
    "git revert HEAD",
    "git am < patch",
    "git update-ref refs/heads/main abc",
    "git commit-tree HEAD^{tree} -m x",
    "git submodule foreach 'git push'",
    "hub push",
    "plan-build commit --message x",
    "plan-build -d commit",
    "plan-build review.approve",
    "~/.local/bin/plan-build review.approve",
    "inv verify commit",
    "invoke commit",
    "python -m plan_build commit",
    "python3.12 -m plan_build review.approve",
    "python -m invoke commit",
    'python3 -c \'import subprocess; subprocess.run(["git","commit"])\'',
    'node -e \'require("child_process").execSync("git push")\'',
    "perl -e 'system(\"git commit -m x\")'",
    "python -c \"import os,base64; os.system(base64.b64decode('Z2l0IHB1c2g=').decode())\"",
    "echo unfinished 'quote git commit",
    "git hash-object -w -t commit --stdin < c",
    "printf '%s' abc > .git/refs/heads/main",
    "cp x .git//HEAD",
    "rm .git/plan-build/claude/settings-0.json",
    "echo '#!/bin/sh' > .git/hooks/post-checkout",
    'python3 -c "from dulwich import porcelain; porcelain.commit(b".")"',
    "python3 <<EOF\nimport subprocess\nsubprocess.run(['git', 'push'])\nEOF",
    "git${IFS}commit",
    # a program fed from a pipe, when the line shows what it is
    "echo commit -qam x | xargs git",
    "echo push | xargs git",
    "printf 'git push\\n' | sh",
    "cat <<EOF | sh\ngit push\nEOF",
    "echo Z2l0IHB1c2g= | base64 --decode | bash",
    'cat <<EOF | xargs -I{} sh -c "{}"\ngit push\nEOF',
    "env -u CLAUDECODE script -qec 'plan-build commit --message x' /dev/null",
    # the worst chain: a detached commit with a faked terminal
    "setsid -f sh -c \"printf 'y\\n' | env -u CLAUDECODE script -qec 'plan-build commit' "
    '/dev/null"',
    "git reset --soft HEAD~1",
    "ssh host 'cd repo && git push'",
    "docker run --rm img git push",
    "cd .git && echo x > refs/heads/main",
    "tee .git/hooks/pre-commit < hook.sh",
    "ln -sf ../../hook.sh .git/hooks/pre-commit",
    "sed -i s/a/b/ .git/config",
    "dd if=x of=.git/index",
    "x=.git/HEAD; echo y > $x",
    "f() { git commit -m x; }",
    "case $x in a) git push;; esac",
    "time (git commit -m x)",
    "docker compose exec web git push",
]

# The six the issue found refused (issue 35, item 6): words that are data are not commands.
DATA_NOT_COMMANDS = [
    'echo "remember to git commit later"',
    'grep -rn "git commit" .',
    "cat > notes.md <<'EOF'\nremember: git commit after review\nEOF",
    "cat .git/HEAD",
    "ls .git/refs/heads",
    "ps -eo pid,comm,args | awk '$2 != \"claude\" && /codex exec/'",
]

# Throwing away the user's uncommitted work (issue 37): refused with "ask the user".
DESTROYS_WORK = [
    "git reset --hard",
    "git reset --hard HEAD~1",
    "git checkout -- .",
    "git checkout .",
    "git checkout -- src/app.py",
    "git checkout HEAD -- src/app.py",
    "git checkout -f main",
    "git restore .",
    "git restore src/app.py",
    "git restore --staged --worktree src/app.py",
    "git restore -SW .",
    "git stash",
    "git stash -u",
    "git stash push -m wip",
    "git stash pop",
    "git stash drop",
    "git stash clear",
    "git clean -f",
    "git clean -fd",
    "git clean -xfd",
    "git clean --force -d",
    "git switch --discard-changes main",
    "rm -rf .git",
    "rm -rf ./.git/",
    "bash -c 'git reset --hard origin/main'",
    "cd sub && git clean -fdx",
    "timeout 5 git -C sub stash",
]

ALLOWED = [
    "git status",
    "git log --oneline -5",
    "git diff -- src/plan_build/delivery/commit.py",
    "git show HEAD:src/commit.py",
    "git add -A",
    "git stash list",
    "git stash show -p stash@{0}",
    "git clean -n",
    "git clean -nd",
    "git restore --staged src/app.py",
    "git checkout -b topic",
    "git switch -c topic",
    "git reset",
    "git reset HEAD src/app.py",
    "git reset -- src/app.py",
    "cat .git/config",
    "cp .git/HEAD /tmp/head",
    "readlink -f .git",
    "du -sh .git",
    "find .git -name ORIG_HEAD",
    "git log --grep 'git push' --oneline",
    "printf '%s\\n' 'git commit' 'git push'",
    "rg -n 'plan-build commit' docs",
    "python3 -c 'print(\"git commit later\")'",
    "tee -a notes.md <<< 'git push after review'",
    "env bash -c 'pytest -q'",
    "curl -s localhost:8000/health | jq .",
    'eval "$(ssh-agent -s)"',
    "docker compose exec web git status",
    'ssh host "git log"',
    "git ls-files -z | xargs -0 git add",
    "x=$(git rev-parse HEAD); echo $x",
    "echo foo | tee .gitignore",
    "command -v git && git --version",
    "git branch --merged",
    "git log --no-merges",
    "git -C sub status",
    "ls -la",
    "pytest -q tests/test_commit.py",
    "python -m pytest -q",
    "echo hello",
    "cat README.md | head -20",
    "plan-build verify",
    "plan-build review.status --json",
    "inv --list",
    'for f in *.py; do echo "$f"; done',
    "npm test",
    "make",
    "rg -n TODO src",
    "sed -n 1,20p src/app.py",
    "ls .",
    "which python",
    "python3 <<EOF\nprint(1)\nEOF",
    'sh -c "(cd sub; make -n)"',
    "timeout 60 python -m pytest -x",
    "git log --oneline | head -3 && echo done",
]


@pytest.mark.parametrize("command", REFUSED)
def test_a_gated_act_is_refused_however_it_is_wrapped(command: str) -> None:
    assert refusal(command, cwd="/nonexistent") is not None, command


@pytest.mark.parametrize("command", ALLOWED + DATA_NOT_COMMANDS)
def test_ordinary_commands_pass(command: str) -> None:
    found = refusal(command, cwd="/nonexistent")
    assert found is None, (command, found)


@pytest.mark.parametrize("command", DESTROYS_WORK)
def test_throwing_away_uncommitted_work_is_refused_with_ask_the_user(command: str) -> None:
    found = refusal(command, cwd="/nonexistent")
    assert found is not None, command
    assert "uncommitted work" in found.reason, found
    assert found.advice is not None
    assert "Ask the user before discarding anything" in found.advice


def test_each_refusal_says_what_it_found_and_what_to_do() -> None:
    commit = refusal("timeout 5 git -C . commit -m x")
    assert commit is not None
    assert commit.reason == "`git commit` makes commits"
    assert commit.advice is None  # the hook's own: ask the user to run it outside Claude
    approve = refusal("python -m plan_build review.approve")
    assert approve is not None
    assert approve.reason == "it runs plan-build's `review.approve`, which needs the user"
    state = refusal("printf x > .git/refs/heads/main")
    assert state is not None
    assert state.reason == "it writes into git's own directory (.git/refs/heads/main)"
    assert state.advice is not None
    assert "read them if you need to" in state.advice
    unknown = refusal("git ci -m x")
    assert unknown is not None
    assert "use git's own command name" in unknown.reason


def test_a_path_in_the_work_tree_is_told_from_a_branch(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    assert refusal("git checkout src/app.py", cwd=str(tmp_path)) is not None
    assert refusal("git checkout main", cwd=str(tmp_path)) is None


def test_variables_set_earlier_in_the_line_are_read() -> None:
    assert refusal("x=gi; y=t; $x$y push") is not None
    assert refusal("sub=status; git $sub") is None
    assert refusal('msg="git commit later"; echo "$msg"') is None


def test_a_script_the_command_runs_is_read(tmp_path: Path) -> None:
    (tmp_path / "ship.sh").write_text("#!/bin/sh\nset -e\ngit add -A\ngit push origin main\n")
    (tmp_path / "ok.sh").write_text("#!/bin/sh\necho fine\n")
    (tmp_path / "Makefile").write_text("release:\n\tgit commit -am release\n")
    (tmp_path / "tool.py").write_text("import subprocess\nsubprocess.run(['git', 'push'])\n")
    (tmp_path / "plain.py").write_text("# about git commit messages\nprint('hi')\n")
    (tmp_path / "hidden.py").write_text(
        "import subprocess\nsubprocess.run([chr(103) + 'it', 'com' + 'mit'])\n"
    )
    (tmp_path / "lib.py").write_text("from dulwich import porcelain\nporcelain.commit('.')\n")
    (tmp_path / "package.json").write_text(
        '{"scripts": {"test": "pytest", "release": "npm version patch && git push"}}'
    )
    (tmp_path / "decodes.py").write_text(
        "import subprocess\nout = subprocess.run(['ls'], capture_output=True).stdout.decode()\n"
    )
    cwd = str(tmp_path)
    for command in ("bash ship.sh", "./ship.sh", "sh ./ship.sh", "source ship.sh", ". ship.sh"):
        found = refusal(command, cwd=cwd)
        assert found is not None, command
        assert "ship.sh" in found.reason, command
    assert refusal("make release", cwd=cwd) is not None
    assert refusal("python tool.py", cwd=cwd) is not None
    assert refusal("bash ok.sh", cwd=cwd) is None
    assert refusal("python plain.py", cwd=cwd) is None  # text that spawns nothing
    assert refusal("python hidden.py", cwd=cwd) is not None  # builds its program from text
    assert refusal("python decodes.py", cwd=cwd) is None
    assert refusal("timeout 9 python3 lib.py", cwd=cwd) is not None  # a git library, wrapped
    assert refusal("npm run release", cwd=cwd) is not None
    assert refusal("npm test", cwd=cwd) is None
    # options that are not program text do not hide the file
    assert refusal("bash --norc ship.sh", cwd=cwd) is not None
    assert refusal("bash -e ship.sh", cwd=cwd) is not None
    assert refusal("python -E tool.py", cwd=cwd) is not None
    assert refusal("python -m tool", cwd=cwd) is not None
    assert refusal("python -m pytest --cov -q", cwd=cwd) is None


def test_program_text_read_from_a_file_is_judged(tmp_path: Path) -> None:
    """`sh -c "$(cat x)"` and its kin run a file's text: the file is read like a script."""
    (tmp_path / "cmds.txt").write_text("ls\ngit push origin main\n")
    (tmp_path / "ok.txt").write_text("ls -la\necho 'git push later'\n")
    cwd = str(tmp_path)
    for command in (
        'sh -c "$(cat cmds.txt)"',
        "bash -c `cat cmds.txt`",
        'eval "$(cat cmds.txt)"',
        "source <(cat cmds.txt)",
    ):
        found = refusal(command, cwd=cwd)
        assert found is not None, command
        assert "cmds.txt" in found.reason, command
        assert refusal(command.replace("cmds.txt", "ok.txt"), cwd=cwd) is None, command


def test_make_and_npm_judge_the_target_that_runs(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text(
        ".PHONY: test release\n"
        "test: lint\n\tpytest -q\n"
        "lint:\n\t@ruff check .\n"
        "release: test\n\tgit tag v1 && git push --tags\n"
        "ship:\n\t$(MAKE) lint && \\\n\t  git commit -am ship\n"
    )
    (tmp_path / "package.json").write_text(
        '{"scripts": {"test": "jest", "prerelease": "npm test", "release": "np",'
        ' "postrelease": "git push --follow-tags"}}'
    )
    cwd = str(tmp_path)
    assert refusal("make", cwd=cwd) is None  # the first target: test (and lint)
    assert refusal("make test", cwd=cwd) is None
    assert refusal("make -n release", cwd=cwd) is None  # a dry run runs nothing
    found = refusal("make release", cwd=cwd)
    assert found is not None
    assert found.reason.startswith("Makefile's recipe: `git push`")
    assert refusal("make -j2 ship", cwd=cwd) is not None
    assert refusal("npm test", cwd=cwd) is None
    found = refusal("npm run release", cwd=cwd)
    assert found is not None
    assert "package.json's `postrelease` script" in found.reason


def test_odd_input_is_refused_or_passed_but_never_crashes() -> None:
    assert refusal("git\0 commit") is not None
    assert refusal("x" * (2 * 1024 * 1024)) is not None
    deep = "bash -c " + shlex.quote("bash -c " + shlex.quote("bash -c 'git push'"))
    assert refusal(deep) is not None
    nested = "echo " + "$(" * 200 + "git commit" + ")" * 200
    assert refusal(nested) is not None


WRAPPERS = [
    "env",
    "VAR=1",
    "timeout 5",
    "setsid -f",
    "nohup",
    "nice -n 3",
    "command",
    "exec",
    "sudo",
    "xargs",
    "time",
    "stdbuf -oL",
    "ionice -c2",
    "chrt -i 0",
    "taskset -c 0",
    "unbuffer",
    "some-unknown-tool --flag",
]
GIT = ["git", "/usr/bin/git", "git -C .", "git -c k=v", "git --no-pager", "'git'", "g''it"]
ACTS = ["commit -m x", "push", "push origin HEAD", "merge x", "rebase main"]
JOINS = ["{}", "true && {}", "true; {}", "false || {}", "({})", "echo $({})", "{} &", "x | {}"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(WRAPPERS), max_size=4),
    st.sampled_from(GIT),
    st.sampled_from(ACTS),
    st.sampled_from(JOINS),
    st.integers(min_value=0, max_value=2),
)
def test_any_composition_of_wrappers_around_a_git_act_is_refused(
    wrappers: list[str], git: str, act: str, join: str, shells: int
) -> None:
    command = join.format(" ".join([*wrappers, git, act]))
    for _ in range(shells):
        command = "bash -c " + shlex.quote(command)
    assert refusal(command) is not None, command


SHELLISH = st.lists(
    st.sampled_from(
        ["git ", "commit ", "push ", "$(", ")", "`", "'", '"', "<<EOF\n", "\nEOF\n", "|",
         "&&", ";", "${x}", "$x", "x=", "bash -c ", "eval ", "<(", "> ", ".git/", "\\",
         "$'\\x67'", "{ ", " }", "(", "[[ ", " ]]", "find . -exec ", "\\;", "xargs ",
         "env -S ", "-c ", "-- ", " ", "\n"]
    )
).map("".join)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=60), SHELLISH))
def test_any_text_is_judged_without_an_error(text: str) -> None:
    """An exception would refuse the call as a hook failure, with no reason the model can use."""
    found = refusal(text, cwd="/nonexistent")
    assert found is None or found.reason


def test_a_brace_before_a_four_byte_character_does_not_crash_the_hook() -> None:
    """tree-sitter-bash 0.25.1 reads past its buffer on `{` then a four-byte UTF-8 character
    (upstream issue 337); the hook's process would die and Claude Code would let the call run.
    A child process reads the crashers, so a crash fails this test instead of the worker."""
    import subprocess
    import sys

    program = (
        "from plan_build.startup.shellgate import refusal\n"
        "for c in [*range(0x1F600, 0x1F640), *range(0x31860, 0x318A0), 0x10FFFF]:\n"
        "    refusal('{' + chr(c)); refusal('echo {x' + chr(c) + ' y')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_text_after_a_four_byte_character_is_read_where_it_stands() -> None:
    found = refusal('echo "{\U0001f600 \U00031860" ; git commit -m "\U0001f680 done"')
    assert found is not None
    assert "commit" in found.reason
    assert refusal('echo "{\U0001f600"; git status') is None
