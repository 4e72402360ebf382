"""Issue 37 with the real claude: launched by `plan-build plan --yolo`, a scripted model runs the
six commands that destroyed uncommitted work, a script that truncates files and a Write over a
file the user had edited. Claude's own hook takes the checkpoints before each call; afterwards
`plan-build restore` brings back every byte of the user's work and their index, HEAD unmoved,
and the intended change is the one the session started with."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import gitrepo
from plan_build.delivery import baseline, intended
from tests.contract.conftest import Lab, Plugins
from tests.contract.test_claude_layer_contract import env_for
from tests.contract.test_sandbox_contract import prepared, through_plan
from tests.support.gitcmd import git
from tests.support.runcli import run_cli

pytestmark = pytest.mark.contract

DESTROY = [
    "git reset -q --hard",
    "git checkout -q -- .",
    "git restore .",
    "git stash -q",
    "git clean -q -fdx",
    "rm -rf .git",
    "sh -c 'for f in README.md app.py notes.txt data.bin; do : > \"$f\"; done'",
]
NOTES = b"my notes\r\nsecond line\r\n"
DATA = bytes(range(256))


def user_work(repo: Path) -> dict[str, Any]:
    """What the user has and would lose: the files, the index as git lists it, HEAD."""
    names = ("README.md", "app.py", "notes.txt", "data.bin")
    return {
        "files": {n: (repo / n).read_bytes() if (repo / n).exists() else None for n in names},
        "staged": git(repo, "ls-files", "-s"),
        "status": git(repo, "status", "--porcelain=v1", "--untracked-files=all"),
        "HEAD": git(repo, "rev-parse", "HEAD"),
    }


def test_after_every_destructive_call_restore_brings_back_every_byte(
    lab: Lab, plugins: Plugins
) -> None:
    tmux, repo, agents, api = lab.tmux, lab.ready, lab.agents, lab.api
    prepared(repo)  # a staged app.py and an unstaged README.md edit
    (repo / "notes.txt").write_bytes(NOTES)  # untracked, CRLF
    (repo / "data.bin").write_bytes(DATA)  # untracked, binary
    before = user_work(repo)
    readme = str(repo / "README.md")
    api.commands = [*DESTROY, ("Write", {"file_path": readme, "content": "the agent's\n"})]
    env = env_for(agents, repo, api)

    results = through_plan(tmux, api, repo, env)

    assert (repo / "README.md").read_text() == "the agent's\n"  # the work was damaged
    assert (repo / "notes.txt").read_bytes() != NOTES
    assert (repo / ".git").is_dir(), results["rm -rf .git"]  # the sandbox kept git's state
    listed = run_cli("checkpoints", "--json", cwd=repo, env=env)
    assert listed.code == 0, listed.stderr
    rows = json.loads(listed.stdout)
    first = rows[-1]  # newest first: the oldest is the one before the first call
    assert "Bash" in " ".join(first["calls"]), first
    assert rows[0]["calls"], rows[0]  # the hook noted the calls that followed each one

    done = run_cli("restore", str(first["number"]), "--force", cwd=repo, env=env)

    assert done.code == 0, done.stderr
    assert "HEAD did not move" in done.stderr
    assert user_work(repo) == before
    # the user's work is the session's baseline again: the intended change is empty
    found = gitrepo.discover(repo)
    assert intended.compute(found, baseline.current(found, {})).as_json()["files"] == 0


def test_a_restore_from_the_agent_is_refused_and_the_checkpoints_stay(
    lab: Lab, plugins: Plugins
) -> None:
    """Restore writes the user's work tree from plan-build's records: a person's decision, so
    through the session's broker it is refused, and the agent cannot delete the checkpoints."""
    tmux, repo, agents, api = lab.tmux, lab.ready, lab.agents, lab.api
    prepared(repo)
    pb = shlex.join([sys.executable, "-m", "plan_build"])
    api.commands = [
        "echo one > one.txt",
        f"{pb} restore --force",
        "git update-ref -d $(git for-each-ref --format='%(refname)' refs/plan-build/checkpoints "
        "| head -1)",
    ]
    env = env_for(agents, repo, api)

    results = through_plan(tmux, api, repo, env)

    assert "checkpoints" in results[f"{pb} restore --force"]
    assert (repo / "one.txt").read_text() == "one\n"
    refs = git(repo, "for-each-ref", "refs/plan-build/checkpoints")
    assert len(refs.splitlines()) >= 2, refs
