"""The CI definition for the real systems (.github/workflows/ci.yml) cannot run here; these
checks keep it saying what the docs promise: each system runs the README's test command, and
the portable session (or its file-system half) where it applies. `nox -s lint` checks the
file against GitHub's workflow schema."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _workflow() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    assert isinstance(data, dict)
    return data


def _readme_test_command() -> str:
    text = (ROOT / "README.md").read_text()
    found = re.search(r"Pass the tests.*?```sh\n(.+?)\n```", text, re.DOTALL)
    assert found, "README.md lost its test command"
    return found.group(1).strip()


def _runs(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) for step in job["steps"])


def test_each_system_runs_the_readme_test_command() -> None:
    jobs = _workflow()["jobs"]
    assert {name: job["runs-on"] for name, job in jobs.items()} == {
        "ubuntu": "ubuntu-latest",
        "macos": "macos-latest",
        "wsl": "windows-latest",
    }
    command = _readme_test_command()
    for name, job in jobs.items():
        assert command in _runs(job), name


def test_the_portable_session_runs_where_it_applies() -> None:
    jobs = _workflow()["jobs"]
    assert "nox -s portable" in _runs(jobs["ubuntu"])
    assert "nox -s portable" in _runs(jobs["wsl"])
    script = "tests/portable/fs_gitconfig.py"
    assert script in _runs(jobs["macos"])
    assert (ROOT / script).is_file()


def test_wsl_runs_inside_wsl_on_the_linux_file_system() -> None:
    wsl = _workflow()["jobs"]["wsl"]
    assert wsl["defaults"]["run"]["shell"] == "wsl-bash {0}"
    uses = [step.get("uses", "") for step in wsl["steps"]]
    assert any(u.startswith("Vampire/setup-wsl@v") for u in uses)
    assert "git clone" in _runs(wsl)
    assert "~/plan-build" in _runs(wsl)


def test_every_action_is_pinned_to_a_version() -> None:
    for job in _workflow()["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", step["uses"]), step["uses"]


def test_the_readme_first_command_works_on_an_externally_managed_python_and_ci_runs_it() -> None:
    text = (ROOT / "README.md").read_text()
    found = re.search(r"Run the main job.*?```sh\n(.+?)\n```", text, re.DOTALL)
    assert found, "README.md lost its first command"
    first = found.group(1).strip()
    assert first.startswith("python3 -m venv .venv && .venv/bin/pip install")
    assert ";" not in first  # a failed install must stop the line
    assert "pip install" not in first.replace(".venv/bin/pip install", "")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "Run the main job" in ci  # .ci/run reads the command from README itself
    assert _readme_test_command() in ci
