"""plan-build's own command line: only its core options, no invoke configuration, help that
helps (issue 13). Most tests run the real Program in this process; the ones that must prove
nothing was launched or committed run the real entry point on a terminal with stub agents."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from plan_build import __version__
from tests.support.gitcmd import git
from tests.support.pty_run import run_on_pty
from tests.support.stubs import Stubs

GOLDEN = Path(__file__).parent / "golden" / "cli"
COMPLETION = ["--print-completion-script", "--complete"]
FIX = "fix: see 'plan-build --help' or 'plan-build <command> --help'"

# invoke's core and task-runner flags; none of them means anything to plan-build
REMOVED = [
    ("--dry", "--dry"),
    ("-R", "-R"),
    ("--echo", "--echo"),
    ("-e", "-e"),
    ("--pty", "--pty"),
    ("-p", "-p"),
    ("--hide=both", "--hide"),
    ("--warn-only", "--warn-only"),
    ("-w", "-w"),
    ("--command-timeout=5", "--command-timeout"),
    ("-T", "-T"),
    ("--config=x.yaml", "--config"),
    ("-f", "-f"),
    ("--prompt-for-sudo-password", "--prompt-for-sudo-password"),
    ("--write-pyc", "--write-pyc"),
    ("--list-depth=1", "--list-depth"),
    ("-D", "-D"),
    ("--list-format=json", "--list-format"),
    ("-F", "-F"),
    ("--collection=x", "--collection"),
    ("-c", "-c"),
    ("--no-dedupe", "--no-dedupe"),
    ("--search-root=.", "--search-root"),
    ("-r", "-r"),
]


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


@pytest.fixture
def here(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """Run `plan-build ARGS` through the real Program in this process, in `cwd`."""

    def run(*args: str, cwd: Path) -> Run:
        from plan_build.program import build_program

        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            build_program().run(["plan-build", *args])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return Run(code, out.out, out.err)

    return run


def crash_log(home: Path) -> Path:
    return home / ".local" / "state" / "plan-build" / "plan-build.log"


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize(("flag", "name"), REMOVED)
def test_every_former_invoke_flag_is_an_unknown_option(  # noqa: PLR0917
    here, repo: Path, private_home: Path, flag: str, name: str, where: str
) -> None:
    before = git(repo, "status", "--porcelain", "--ignored")
    args = [flag, "identity"] if where == "before" else ["identity", flag]
    r = here(*args, cwd=repo)
    assert (r.code, r.stdout) == (2, ""), r.stderr
    assert r.stderr == f"plan-build: unknown option {name}\n  {FIX}\n"
    assert git(repo, "status", "--porcelain", "--ignored") == before
    assert not crash_log(private_home).exists()


def test_the_help_lists_exactly_plan_builds_options(here, tmp_path: Path) -> None:
    r = here("--help", cwd=tmp_path)
    assert r.code == 0
    options = r.stdout.split("options:\n", 1)[1].split("\n\n", 1)[0]
    flags = sorted(w.rstrip(",") for line in options.splitlines() for w in line.split()[:2])
    assert [f for f in flags if f.startswith("-")] == sorted(
        ["-h", "--help", "-V", "--version", "-l", "--list", "-d", "--debug", *COMPLETION]
    )
    for word in ("--dry", "--pty", "--hide", "--echo", "--config", "sudo", "--write-pyc"):
        assert word not in r.stdout


def golden(name: str, text: str) -> None:
    from plan_build.cli.helptext import manual

    text = text.replace(f"manual: {manual()}", "manual: <the manual shipped with plan-build>")
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_no_arguments_prints_the_grouped_overview(here, tmp_path: Path) -> None:
    r = here(cwd=tmp_path)
    assert (r.code, r.stderr) == (0, "")
    golden("overview.txt", r.stdout)
    assert "--pty" not in r.stdout
    shown = Path(r.stdout.split("manual: ")[1].splitlines()[0])
    assert shown.name == "USER_MANUAL.md"
    assert shown.is_file()  # a path on this machine, not one in a source tree it may lack
    for heading in ("start a session", "during a session", "finish", "architect", "releases"):
        assert f"\n{heading}\n" in r.stdout
    assert "\nsetup and diagnosis\n" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 80


def test_the_overview_follows_the_registered_commands(here, tmp_path: Path) -> None:
    """A command appears once it is registered and has a grouping-table entry (`setup`)."""
    from plan_build.cli import helptext
    from plan_build.cli.strict import command
    from plan_build.commands import namespace

    registered = "setup" in namespace.tasks
    text = here(cwd=tmp_path).stdout
    assert ("\n  setup " in text) == registered
    if not registered:

        @command
        def setup(c: object) -> None:
            """Install and check what a session needs."""

        namespace.add_task(setup)
        try:
            assert "\n  setup " in helptext.overview(namespace, "plan-build")
        finally:
            del namespace.tasks["setup"]


def test_help_matches_its_golden_file(here, tmp_path: Path) -> None:
    r = here("--help", cwd=tmp_path)
    assert (r.code, r.stderr) == (0, "")
    golden("help.txt", r.stdout)


def test_list_shows_each_command_once(here, tmp_path: Path) -> None:
    r = here("--list", cwd=tmp_path)
    assert r.code == 0
    rows = [line for line in r.stdout.splitlines() if line.startswith("  ") and line[2] != " "]
    names = [row.split()[0] for row in rows]
    assert len(names) == len(set(names))
    assert "review" in names
    assert "release" in names
    assert "review.review" not in r.stdout
    assert "(review)" not in r.stdout
    assert "release.status (release)" not in r.stdout
    for name in ("plan", "architect", "dispatch", "review.plan", "release.activate"):
        assert name in names


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["dispatch", "--help"], "usage: plan-build dispatch [--options] TASK-ID"),
        (["dispatch", "-h"], "usage: plan-build dispatch [--options] TASK-ID"),
        (["dispatch", "--json", "--help"], "usage: plan-build dispatch [--options] TASK-ID"),
        (["dispatch", "TASK-001", "--help"], "usage: plan-build dispatch [--options] TASK-ID"),
        (["--help", "dispatch"], "usage: plan-build dispatch [--options] TASK-ID"),
        (["--help=review.status"], "usage: plan-build review.status [--options]"),
        (["release.activate", "--help"], "usage: plan-build release.activate [--options] SOURCE"),
        (["-h", "release.activate"], "usage: plan-build release.activate [--options] SOURCE"),
        (["plan", "--help"], "usage: plan-build plan [--options]"),
        (["review", "--help"], "usage: plan-build review [--options]"),
        (["enhance", "--help"], "usage: plan-build enhance"),
    ],
)
def test_command_help_always_shows_that_commands_help(
    here, tmp_path: Path, args: list[str], usage: str
) -> None:
    r = here(*args, cwd=tmp_path)
    assert (r.code, r.stderr) == (0, ""), r.stderr
    assert r.stdout.startswith(usage + "\n")
    assert "other tasks here" not in r.stdout
    assert "--core-opts" not in r.stdout


def test_command_help_names_the_positional_argument_and_each_option(here, tmp_path: Path) -> None:
    out = here("dispatch", "--help", cwd=tmp_path).stdout
    assert "Run one approved TASKS.md task through Codex" in out
    assert "arguments:\n  TASK-ID " in out
    assert "the task to run, e.g. TASK-001" in out
    for flag in ("--accept-recipe", "--dry-run", "--json"):
        assert f"\n  {flag} " in out
    assert "--task-id" not in out
    out = here("review.plan", "--help", cwd=tmp_path).stdout
    assert "\n  --workflow ID " in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["dispatch", "--json-x"], "unknown option --json-x"),
        (["dispatch", "--json-x", "TASK-001"], "unknown option --json-x"),
        (["release.activate", "--sha-256"], "unknown option --sha-256"),
        (["dispatch"], "dispatch needs TASK-ID"),
        (["--help", "nosuchcommand"], "unknown command nosuchcommand"),
        (["nosuchcommand", "--help"], "unknown command or argument nosuchcommand"),
        (
            ["--print-completion-script", "tcsh"],
            "--print-completion-script takes bash, zsh or fish, not 'tcsh'",
        ),
        (["plan", "--", "--yolo"], "unexpected arguments after --: --yolo"),
    ],
)
def test_bad_command_lines_say_one_thing_and_exit_2(  # noqa: PLR0917
    here, repo: Path, private_home: Path, stubs: Stubs, args: list[str], message: str
) -> None:
    before = git(repo, "status", "--porcelain", "--ignored")
    r = here(*args, cwd=repo)
    assert (r.code, r.stdout) == (2, ""), r.stderr
    assert r.stderr == f"plan-build: {message}\n  {FIX}\n"
    assert git(repo, "status", "--porcelain", "--ignored") == before
    assert stubs.calls() == []
    assert not crash_log(private_home).exists()


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_and_candidates(here, tmp_path: Path, shell: str) -> None:
    r = here("--print-completion-script", shell, cwd=tmp_path)
    assert r.code == 0
    assert "--complete --" in r.stdout
    assert "plan-build" in r.stdout
    r = here("--complete", "--", "plan-build", "rel", cwd=tmp_path)
    assert r.code == 0
    assert "release.activate" in r.stdout.split()
    r = here("--complete", "--", "plan-build", "", cwd=tmp_path)
    words = r.stdout.split()
    assert "review" in words
    assert "review.review" not in words
    assert len(words) == len(set(words))
    r = here("--complete", "--", "plan-build", "--", cwd=tmp_path)
    assert sorted(r.stdout.split()) == sorted(
        ["--help", "--version", "--list", "--debug", "--print-completion-script", "--complete"]
    )
    r = here("--complete", "--", "plan-build", "dispatch", "--", cwd=tmp_path)
    assert {"--accept-recipe", "--dry-run", "--json"} <= set(r.stdout.split())


def test_version_and_list_are_still_answered(here, tmp_path: Path) -> None:
    assert here("-V", cwd=tmp_path).stdout == f"plan-build {__version__}\n"
    assert here("-d", "--version", cwd=tmp_path).stdout == f"plan-build {__version__}\n"
    r = here("--version", "--dry", cwd=tmp_path)  # a lone --version answers early; not this
    assert (r.code, r.stdout) == (2, "")
    assert "unknown option --dry" in r.stderr
    assert here("-l", cwd=tmp_path).stdout == here("--list", cwd=tmp_path).stdout


def test_debug_prints_the_traceback_of_an_internal_error(
    capsys: pytest.CaptureFixture[str], private_home: Path
) -> None:
    from invoke.collection import Collection

    from plan_build.cli.strict import command
    from plan_build.program import PlanBuildProgram

    @command
    def boom(c: object) -> None:
        """Fail like a bug would."""
        raise RuntimeError("a bug")

    program = PlanBuildProgram(namespace=Collection(boom), name="plan-build", binary="plan-build")
    for args, traceback in ((["boom"], False), (["-d", "boom"], True), (["boom", "-d"], True)):
        with pytest.raises(SystemExit) as exit_:
            program.run(["plan-build", *args])
        assert exit_.value.code == 1
        err = capsys.readouterr().err
        assert err.startswith("plan-build: internal error: RuntimeError: a bug\n  details: ")
        assert ("Traceback (most recent call last):" in err) is traceback
        assert ('raise RuntimeError("a bug")' in err) is traceback
    assert crash_log(private_home).read_text().count("RuntimeError: a bug") == 3


# ---- configuration isolation ------------------------------------------------------------

LOUD_PY = "raise SystemExit('invoke configuration was executed: {where}')\n"
SNEAKY_YAML = "run:\n  dry: true\n  echo: true\ntasks:\n  executor_class: os.nothing\n"


def loud_py(directory: Path, stem: str, where: str) -> None:
    """An invoke config file that stops the program if it is ever executed."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{stem}.py").write_text(LOUD_PY.format(where=where))


def sneaky_yaml(directory: Path, stem: str) -> Path:
    """An invoke config file that would turn on dry/echo and a bogus executor if read."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem}.yaml"
    path.write_text(SNEAKY_YAML)
    return path


def test_a_users_invoke_files_and_variables_never_reach_plan_build(
    cli, repo: Path, private_home: Path
) -> None:
    loud_py(private_home, ".invoke", "~/.invoke.py")
    loud_py(private_home, ".plan-build", "~/.plan-build.py")
    sneaky_yaml(repo, "invoke")  # project level (beside tasks.py for invoke's own program)
    runtime = repo.parent / "runtime.py"
    runtime.write_text(LOUD_PY.format(where="INVOKE_RUNTIME_CONFIG"))
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "files a user keeps")
    env = {
        "INVOKE_RUNTIME_CONFIG": str(runtime),
        "INVOKE_DEBUG": "1",
        "INVOKE_RUN_DRY": "1",
        "INVOKE_TASKS_EXECUTOR_CLASS": "os.nothing",
    }
    for args in (["--version"], ["--list"], ["identity", "--set", "github.com/ana/shop"]):
        r = cli(*args, cwd=repo, env=env)
        assert "executed" not in r.stdout + r.stderr
        assert "invoke." not in r.stderr  # invoke's debug log (INVOKE_DEBUG) stays off
        assert "plan_build." not in r.stderr  # and so does plan-build's own
        assert r.code == (5 if args[0] == "identity" else 0), r.stderr
    assert (repo / ".agentmemory-project").read_text() == "github.com/ana/shop\n"


def test_system_level_invoke_config_is_never_loaded(tmp_path: Path) -> None:
    """The same for /etc through a fake system prefix, on every load path invoke has; plain
    invoke does run these files (so this test can fail)."""
    from invoke.config import Config

    from plan_build.program import PlanBuildConfig

    etc, home = tmp_path / "etc", tmp_path / "home"
    for stem in ("invoke", "plan-build"):
        loud_py(etc, stem, f"/etc/{stem}.py")
        loud_py(home, f".{stem}", f"~/.{stem}.py")
    with pytest.raises(SystemExit, match=r"executed: /etc/invoke\.py"):
        Config(system_prefix=f"{etc}/", user_prefix=f"{tmp_path}/nowhere/.")
    with pytest.raises(SystemExit, match=r"executed: ~/\.invoke\.py"):
        Config(system_prefix=f"{tmp_path}/nowhere/", user_prefix=f"{home}/.")

    config = PlanBuildConfig(system_prefix=f"{etc}/", user_prefix=f"{home}/.")
    config.load_system()
    config.load_user()
    config.load_base_conf_files()
    project = tmp_path / "project"
    sneaky_yaml(project, "invoke")
    config.set_project_location(str(project))
    config.load_project()
    config.set_runtime_path(str(sneaky_yaml(tmp_path, "runtime")))
    config.load_runtime()
    os.environ["INVOKE_RUN_DRY"] = "1"
    try:
        config.load_shell_env()
    finally:
        del os.environ["INVOKE_RUN_DRY"]
    for checked in (config, config.clone()):
        assert checked.run.dry is False
        assert checked.run.echo is False
        assert checked.tasks.executor_class is None


# ---- the removed flags never reach a launch or a commit ---------------------------------


def test_inv_in_a_checkout_refuses_the_same_flags(tmp_path: Path) -> None:
    """`inv --dry plan` is invoke's binary, but the command line ends in plan-build's Program."""
    import subprocess

    from tests.support.paths import ROOT

    inv = Path(sys.executable).parent / "inv"
    for args in (["--dry", "plan"], ["-e", "plan"], ["dispatch", "--json-x"]):
        r = subprocess.run([str(inv), *args], cwd=ROOT, capture_output=True, text=True, check=False)
        assert r.returncode == 2, r.stderr
        assert "plan-build: unknown option" in r.stderr
    r = subprocess.run(
        [str(inv), "dispatch", "--help"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert r.stdout.startswith("usage: inv dispatch [--options] TASK-ID\n")


def on_pty(cwd: Path, *args: str, typed=()):
    env = {**os.environ, "NO_COLOR": "1"}
    return run_on_pty([sys.executable, "-m", "plan_build", *args], cwd=cwd, env=env, typed=typed)


def launched(stubs: Stubs) -> list[dict]:
    return [c for c in stubs.calls("claude") if c["argv"][:1] not in (["--version"], ["plugin"])]


@pytest.mark.parametrize("flag", ["--dry", "-R", "-e"])
def test_dry_or_echo_before_plan_launches_nothing(ready: Path, stubs: Stubs, flag: str) -> None:
    typed = [("> ", "a request\n"), ("> ", "EOF\n")]
    r = on_pty(ready, flag, "plan", typed=typed)
    assert r.code == 2, r.output
    assert f"unknown option {flag}" in r.output
    assert launched(stubs) == []
    assert git(ready, "for-each-ref", "refs/plan-build/") == ""


def test_dry_before_commit_commits_nothing(cli, repo: Path) -> None:
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", "a")
    assert cli("baseline", cwd=repo).code == 0
    (repo / "a.txt").write_text("two\n")
    assert cli("verify", cwd=repo).code == 0
    head = git(repo, "rev-parse", "HEAD")
    r = on_pty(repo, "-R", "commit", "--message", "session", typed=[("Nothing is pushed.", "y\n")])
    assert r.code == 2, r.output
    assert "unknown option -R" in r.output
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == " M a.txt\n"


def test_a_flag_without_its_value_is_one_plan_build_message(repo: Path, cli) -> None:
    r = cli("report", "--format", cwd=repo)
    assert r.code == 2
    assert r.stderr.startswith("plan-build: --format needs a value\n")
    assert "StrictArgument" not in r.stderr


def test_commit_dash_m_names_the_long_option(repo: Path, cli) -> None:
    r = cli("commit", "-m", "x", cwd=repo)
    assert r.code == 2
    assert "unknown option -m (did you mean --message?)" in r.stderr
