"""release.build: one self-contained bundle from a checkout, same content → same id."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from plan_build.release import bundle
from tests.support.releases import make_checkout


@pytest.fixture
def built(real_bundle: bundle.Built) -> bundle.Built:
    return real_bundle


def test_build_writes_a_bundle_directory_and_an_archive_named_by_the_release_id(
    built: bundle.Built,
) -> None:
    assert built.directory.name == f"plan-build-{built.id}"
    assert built.archive.name == f"plan-build-{built.id}.tar.gz"
    shipped = sorted(p.relative_to(built.directory).as_posix() for p in built.directory.rglob("*"))
    assert shipped == [
        "ARCHITECT.md",
        "MANIFEST.sha256",
        "SKILL.md",
        "plan-build.pyz",
        "templates",
        "templates/launch",
        "templates/launch/standard.md.j2",  # .gitkeep (hidden, empty) is not shipped
    ]
    assert built.id == built.digest[:16]


def test_the_manifest_is_checked_by_sha256sum_and_names_the_release(built: bundle.Built) -> None:
    check = subprocess.run(
        ["sha256sum", "-c", "--strict", "MANIFEST.sha256"],
        cwd=built.directory,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "plan-build.pyz: OK" in check.stdout
    digest = subprocess.run(
        ["sha256sum", "MANIFEST.sha256"],
        cwd=built.directory,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[0]
    assert digest == built.digest


def test_the_zipapp_runs_on_its_own_bundled_dependencies(built: bundle.Built) -> None:
    # -S: no site-packages at all, so invoke, jinja2 and yaml must come from the zipapp.
    run = subprocess.run(
        [sys.executable, "-S", "-E", str(built.directory / "plan-build.pyz"), "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"plan-build {built.version}"


def test_the_zipapp_holds_pure_python_and_bytecode_only(built: bundle.Built) -> None:
    with zipfile.ZipFile(built.directory / "plan-build.pyz") as archive:
        names = archive.namelist()
    assert "plan_build/release/binding.py" in names
    assert "plan_build/release/binding.pyc" in names
    assert any(n.startswith("invoke/") for n in names)
    assert any(n.startswith("jinja2/") for n in names)
    assert any(n.startswith("yaml/") for n in names)
    assert not [n for n in names if n.endswith((".so", ".pyd", ".dylib"))]
    assert not [n for n in names if n.endswith(("RECORD", "direct_url.json"))]
    assert not [n for n in names if n.startswith("psutil")]  # native: taken from the Python
    assert "psutil" in built.not_bundled


def test_building_the_same_checkout_again_gives_the_same_id_and_bytes(
    built: bundle.Built, tmp_path: Path
) -> None:
    checkout = make_checkout(tmp_path / "again")
    again = bundle.build(checkout, tmp_path / "out")
    assert again.id == built.id
    assert (again.directory / "plan-build.pyz").read_bytes() == (
        built.directory / "plan-build.pyz"
    ).read_bytes()
    assert again.archive.read_bytes() == built.archive.read_bytes()


def test_different_content_gives_a_different_id(built: bundle.Built, tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "other", marker="B")
    other = bundle.build(checkout, tmp_path / "out")
    assert other.id != built.id


def test_build_without_skills_says_which_files_are_missing(cli, tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "checkout", skills=False)
    r = cli("release.build", cwd=checkout)
    assert r.code == 3
    assert "skills/SKILL.md and skills/ARCHITECT.md are missing" in r.stderr
    assert "fix: add the standard (skills/SKILL.md) and architect" in r.stderr
    assert not (checkout / "dist").exists()


def test_build_refuses_a_skill_without_front_matter(cli, tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "checkout")
    (checkout / "skills" / "ARCHITECT.md").write_text("# Architect\nno front matter\n")
    r = cli("release.build", cwd=checkout)
    assert r.code == 3
    assert "skills/ARCHITECT.md does not start with a '---' front matter block" in r.stderr


def test_build_outside_a_checkout_asks_for_one(cli, tmp_path: Path) -> None:
    # The entry point would fall back to its own checkout; hide it by pointing at a plain dir.
    r = cli("release.build", "--checkout", str(tmp_path), cwd=tmp_path)
    assert r.code == 3
    assert f"{tmp_path} is not a plan-build checkout" in r.stderr


def test_build_prints_the_pin_and_json_for_scripts(cli, tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "checkout")
    r = cli("release.build", "--json", "--out", str(tmp_path / "out"), cwd=checkout)
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["activation"] is None
    assert f"pin      --sha256 {data['build']['digest']}" in r.stderr
    assert Path(data["build"]["archive"]).is_file()
