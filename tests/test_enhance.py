"""Prompt enhancement through Auggie: what Auggie is asked, what the user approves, and what
happens when Auggie fails, hangs or is interrupted. Auggie is the stub on PATH (real process)."""

from __future__ import annotations

import io
import json
import os
import signal
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import config, gitrepo, interact
from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.interact import Choice
from plan_build.core.resources import locate
from plan_build.core.ui import Console
from plan_build.startup import enhance, enhancechecks
from plan_build.startup.enhance import TAG, Enhanced, enhance_payload
from tests.support.interaction import ScriptedInteraction
from tests.support.orphans import alive, survivors
from tests.support.stubs import Stubs

GOLDEN = Path(__file__).parent / "golden" / "enhance"
PAYLOAD = "add pagination to the audit log  \nkeep the API compatible\n"
ENHANCED = (
    "## Goal ✨\n"
    "Add cursor-based pagination to `GET /audit-log`.\n\n"
    "## Constraints\n- Keep the existing response fields and defaults 🚀\n"
)
NOISE = "Augment service is temporarily unavailable. Retrying in 1s…\n"


def reply(text: str) -> str:
    return f"<{TAG}>\n{text}</{TAG}>\n"


@pytest.fixture(autouse=True)
def no_stub_survives(request: pytest.FixtureRequest) -> Iterator[None]:
    """After every test: no stub auggie (or its grandchild) is still running."""
    stubs: Stubs | None = None
    if "stubs" in request.fixturenames:
        stubs = request.getfixturevalue("stubs")  # set up first, so it is torn down after this
    yield
    if stubs is not None:
        assert survivors(stubs.home) == [], "a stub process outlived the test"


class Harness:
    def __init__(self, answers: Sequence[str] = (), edits: Sequence[str] = ()) -> None:
        self.err = io.StringIO()
        self.ui = ScriptedInteraction(answers=list(answers), edits=list(edits))
        env = dict(os.environ)
        self.session = Session(
            cwd=Path.cwd(),
            env=env,
            console=Console(stream=self.err, fancy=False),
            ui=self.ui,
            resources=locate(env),
            stdin=None,
            stdout=io.StringIO(),
        )

    @property
    def said(self) -> str:
        return self.err.getvalue()

    def run(self, repo: Path | None, payload: str = PAYLOAD, timeout: float = 20) -> Enhanced:
        found = gitrepo.discover(repo) if repo is not None else None
        return enhance_payload(self.session, found, payload, timeout=timeout)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """plan-build's temporary files land here, so a test can see that none is left behind."""
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    monkeypatch.setenv("TMPDIR", str(where))
    return where


def leftovers(where: Path) -> list[str]:
    return sorted(p.name for p in where.iterdir() if p.name.startswith("plan-build"))


# --- what Auggie is asked -------------------------------------------------------------------


def test_auggie_rewrites_in_ask_mode_from_an_empty_temporary_workspace_by_default(
    repo: Path, stubs: Stubs, private_tmp: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "instruction.md"
    stubs.rule(
        "auggie",
        {
            "match": ["--print"],
            "stdout": reply(ENHANCED),
            "stderr": NOISE,
            "copy_flag_file": {"--instruction-file": str(copy)},
        },
    )
    h = Harness(["n", "a", "n"])
    result = h.run(repo)

    assert result == Enhanced(ENHANCED, PAYLOAD, "enhanced", False)
    (call,) = stubs.calls("auggie")
    argv = call["argv"]
    assert argv[:3] == ["--print", "--quiet", "--ask"]
    assert "--enhance-prompt" not in argv
    assert argv[argv.index("--max-turns") + 1] == "1"
    assert argv[argv.index("--retry-timeout") + 1] == "5"
    assert "--allow-indexing" not in argv
    workspace = argv[argv.index("--workspace-root") + 1]
    assert call["cwd"] == workspace
    assert Path(workspace).parent.parent == private_tmp  # …/plan-build-enhance-*/workspace
    assert Path(call["cwd"]) != repo
    assert not Path(call["cwd"]).exists()  # removed with the rest of the temporary files
    assert leftovers(private_tmp) == []
    assert call["env"]["NO_COLOR"] == "1"
    asked = copy.read_text(encoding="utf-8")
    assert "```text\n" + PAYLOAD + "```" in asked
    assert "Use no tools at all" in asked
    assert f"<{TAG}>" in asked
    assert ENHANCED.rstrip("\n") in h.said  # shown in full before the approval
    assert h.ui.asked == [
        "Let Auggie index this repository?",
        "Use this request?",
        "Also keep your original wording in the prompt, for context?",
    ]


def test_the_indexing_question_says_what_indexing_means(repo: Path, stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    h = Harness(["n", "a", "n"])
    h.run(repo)
    assert f"Auggie can index {repo}" in h.said
    assert "sends the repository's files to Augment's service" in h.said
    assert "empty temporary directory" in h.said


def test_with_indexing_allowed_auggie_runs_in_the_repository_and_may_retrieve(
    repo: Path, stubs: Stubs, tmp_path: Path
) -> None:
    copy = tmp_path / "instruction.md"
    stubs.rule(
        "auggie",
        {
            "match": ["--print"],
            "stdout": reply(ENHANCED),
            "copy_flag_file": {"--instruction-file": str(copy)},
        },
    )
    result = Harness(["y", "a", "n"]).run(repo)
    assert result.source == "enhanced"
    (call,) = stubs.calls("auggie")
    argv = call["argv"]
    assert Path(call["cwd"]) == repo
    assert argv[argv.index("--workspace-root") + 1] == str(repo)
    assert "--allow-indexing" in argv
    assert argv[argv.index("--max-turns") + 1] == "4"
    assert "codebase retrieval" in copy.read_text(encoding="utf-8")


def test_outside_a_repository_there_is_nothing_to_index_and_no_question(stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    h = Harness(["a", "n"])
    assert h.run(None).text == ENHANCED
    assert "Let Auggie index this repository?" not in h.ui.asked


def test_auggie_changing_files_despite_ask_mode_stops_everything(repo: Path, stubs: Stubs) -> None:
    stubs.rule(
        "auggie",
        {
            "match": ["--print"],
            "stdout": reply(ENHANCED),
            "write": {str(repo / "README.md"): "rewritten by the agent\n"},
        },
    )
    h = Harness(["y"])
    with pytest.raises(PlanBuildError) as err:
        h.run(repo)
    assert err.value.code == ExitCode.BLOCKED
    assert "files changed" in err.value.what
    assert "README.md" in err.value.what


# --- the approval -----------------------------------------------------------------------------


def test_approving_and_keeping_the_original_for_context(repo: Path, stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    assert Harness(["n", "a", "y"]).run(repo) == Enhanced(ENHANCED, PAYLOAD, "enhanced", True)


def test_an_edit_is_shown_again_and_approved_as_edited(repo: Path, stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    h = Harness(["n", "e", "a", "n"], edits=["my own wording ✍\n"])
    result = h.run(repo)
    assert result == Enhanced("my own wording ✍\n", PAYLOAD, "edited", False)
    assert "Your edited request:" in h.said
    assert h.said.index("Auggie's enhanced request:") < h.said.index("my own wording ✍")


def test_an_edit_that_empties_the_text_is_not_used(repo: Path, stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    h = Harness(["n", "e", "a", "n"], edits=["  \n\n"])
    result = h.run(repo)
    assert result.source == "enhanced"
    assert result.text == ENHANCED
    assert "the edited request is empty; it was not used" in h.said


def test_a_failing_editor_says_so_and_asks_again(repo: Path, stubs: Stubs) -> None:
    class BrokenEditor(ScriptedInteraction):
        def edit(self, text: str, *, suffix: str = ".md") -> str:
            raise PlanBuildError(
                "the editor (vim) exited 1; the text was not changed",
                "save and quit normally",
                code=ExitCode.APPROVAL,
            )

    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    h = Harness()
    h.session.ui = h.ui = BrokenEditor(answers=["n", "e", "s"])
    with pytest.raises(PlanBuildError) as err:
        h.run(repo)
    assert err.value.code == ExitCode.APPROVAL
    assert "edit failed: the editor (vim) exited 1" in h.said
    assert h.ui.asked.count("Use this request?") == 2


def test_using_the_original_request(repo: Path, stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    assert Harness(["n", "o"]).run(repo) == Enhanced(PAYLOAD, PAYLOAD, "original", False)


def test_stopping_at_the_approval_is_exit_4(repo: Path, stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    with pytest.raises(PlanBuildError) as err:
        Harness(["n", "s"]).run(repo)
    assert err.value.code == ExitCode.APPROVAL
    assert "stopped at the enhanced-request approval" in err.value.what


def test_the_default_answer_is_stop(repo: Path, stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    with pytest.raises(PlanBuildError) as err:
        Harness(["", ""]).run(repo)  # Enter at both questions: no indexing, then stop
    assert err.value.code == ExitCode.APPROVAL
    assert stubs.calls("auggie")[0]["argv"].count("--allow-indexing") == 0


def test_without_a_terminal_nothing_runs_and_the_exit_is_3(repo: Path, stubs: Stubs) -> None:
    h = Harness()
    h.session.ui = ScriptedInteraction(interactive=False)
    with pytest.raises(PlanBuildError) as err:
        h.run(repo)
    assert err.value.code == ExitCode.PREFLIGHT
    assert "needs a terminal" in err.value.what
    assert stubs.calls("auggie") == []


def test_escape_sequences_in_the_reply_never_reach_the_terminal(repo: Path, stubs: Stubs) -> None:
    hostile = "Fix \x1b[31mred\x1b[0m bug\x1b]0;pwned\x07 now\x07\r\nline two\r\n"
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(hostile)})
    h = Harness(["n", "a", "n"])
    assert h.run(repo).text == "Fix red bug now\nline two\n"
    assert "\x1b" not in h.said


def test_text_around_the_block_is_ignored_and_the_last_block_wins(repo: Path, stubs: Stubs) -> None:
    out = f"I will answer with <{TAG}>draft</{TAG}>.\n\n{reply('the real one')}\nDone.\n"
    stubs.rule("auggie", {"match": ["--print"], "stdout": out})
    assert Harness(["n", "a", "n"]).run(repo).text == "the real one\n"


# --- when Auggie does not deliver --------------------------------------------------------------

BIG = 2 * 1024 * 1024
FAILURES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "not logged in",
        {
            "exit": 1,
            "stderr": "❌ No auth provided. Please log in with `auggie login` or set the "
            "AUGMENT_SESSION_AUTH environment variable.\n",
        },
        "Auggie exited 1:\n    ❌ No auth provided.",
        "auggie login",
    ),
    (
        "service unreachable",
        {
            "exit": 1,
            "stderr": NOISE * 3 + "❌ Agent execution failed: Request failed after exceeding "
            "retry timeout of 3s\n",
        },
        "exceeding retry timeout",
        "could not be reached",
    ),
    ("empty reply", {"stdout": "\n \n"}, "Auggie returned an empty reply", "retry"),
    (
        "no marker (the --enhance-prompt shape)",
        {"stdout": "✨ Enhancing prompt...\n✨ Enhanced prompt:\nbetter text\n\nworking on it\n"},
        f"has no <{TAG}> block",
        "original request",
    ),
    ("cut off", {"stdout": f"<{TAG}>\nhalf of it"}, "is never closed", "retry"),
    ("empty block", {"stdout": f"<{TAG}>\n\n</{TAG}>\n"}, "enhanced request is empty", "retry"),
    (
        "not UTF-8",
        {"stdout_hex": f"<{TAG}>caf\xe9</{TAG}>".encode("latin-1").hex()},
        "not valid UTF-8",
        "retry",
    ),
    ("huge reply", {"stdout": "x" * BIG}, "2.0 MiB, more than the 1.0 MiB", "retry"),
    (
        "huge enhanced text",
        {"stdout": reply("y" * 70_000 + "\n")},
        "68 KiB, more than the 64 KiB",
        "retry",
    ),
]


@pytest.mark.parametrize(
    ("rule", "message", "fix"), [f[1:] for f in FAILURES], ids=[f[0] for f in FAILURES]
)
def test_a_failure_is_named_and_stopping_there_is_exit_4(
    repo: Path, stubs: Stubs, rule: dict[str, Any], message: str, fix: str
) -> None:
    stubs.rule("auggie", {"match": ["--print"], **rule})
    h = Harness(["n", "s"])
    with pytest.raises(PlanBuildError) as err:
        h.run(repo)
    assert err.value.code == ExitCode.APPROVAL
    assert "stopped at the failed prompt enhancement" in err.value.what
    assert "prompt enhancement failed: " in h.said
    assert message in h.said
    assert fix in h.said
    assert h.ui.asked[-1] == "Your request was not enhanced."
    assert "Use this request?" not in h.ui.asked  # nothing was offered for approval


def test_after_a_failure_the_original_request_can_be_used(repo: Path, stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "exit": 1, "stderr": "boom\n"})
    assert Harness(["n", "o"]).run(repo) == Enhanced(PAYLOAD, PAYLOAD, "original", False)


def test_after_a_failure_a_retry_runs_auggie_again(repo: Path, stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "exit": 1, "stderr": "boom\n"})

    class FixesThenRetries(ScriptedInteraction):
        def choose(self, question: str, choices: Sequence[Choice], default: str) -> str:
            if question == "Your request was not enhanced.":
                stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
            return super().choose(question, choices, default)

    h = Harness()
    h.session.ui = h.ui = FixesThenRetries(answers=["n", "r", "a", "n"])
    assert h.run(repo).text == ENHANCED
    assert len(stubs.calls("auggie")) == 2
    assert "Auggie exited 1:\n    boom" in h.said


def test_a_hanging_auggie_is_stopped_with_its_children_at_the_timeout(
    repo: Path, stubs: Stubs, private_tmp: Path
) -> None:
    stubs.rule(
        "auggie",
        {"match": ["--print"], "sleep": 60, "ignore_sigterm": True, "grandchild": True},
    )
    h = Harness(["n", "s"])
    with pytest.raises(PlanBuildError) as err:
        h.run(repo, timeout=1.5)
    assert err.value.code == ExitCode.APPROVAL
    assert "Auggie did not answer within 1.5s and was stopped" in h.said
    assert "enhance.timeout" in h.said
    grandchild = int((stubs.home / "auggie.grandchild").read_text())
    assert not alive(grandchild)
    assert not alive(stubs.calls("auggie")[0]["pid"])
    assert leftovers(private_tmp) == []


def test_a_slow_auggie_shows_it_is_alive(
    repo: Path, stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(enhance, "HEARTBEAT_EVERY", 0.4)
    stubs.rule("auggie", {"match": ["--print"], "sleep": 1.2, "stdout": reply(ENHANCED)})
    h = Harness(["n", "a", "n"])
    assert h.run(repo).text == ENHANCED
    assert "still waiting for Auggie (" in h.said


def test_sigterm_while_auggie_runs_kills_its_tree_removes_temp_files_and_interrupts(
    repo: Path, stubs: Stubs, private_tmp: Path
) -> None:
    stubs.rule(
        "auggie",
        {"match": ["--print"], "sleep": 60, "ignore_sigterm": True, "grandchild": True},
    )
    marker = stubs.home / "auggie.grandchild"
    before = signal.getsignal(signal.SIGTERM)

    def terminate_when_started() -> None:
        for _ in range(200):
            if marker.exists():
                break
            threading.Event().wait(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate_when_started, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        Harness(["n"]).run(repo, timeout=60)
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is put back
    assert not alive(int(marker.read_text()))
    assert not alive(stubs.calls("auggie")[0]["pid"])
    assert leftovers(private_tmp) == []


# --- preflight checks -------------------------------------------------------------------------

SESSION = {
    "accessToken": "sekrit-token-123",
    "tenantURL": "https://t.example/",
    "scopes": ["email"],
}


def write_session(home: Path, text: str) -> Path:
    path = home / ".augment" / "session.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def by_id(checks: list[Any]) -> dict[str, Any]:
    return {c.id: c for c in checks}


def test_checks_pass_with_auggie_and_a_session_file(stubs: Stubs, private_home: Path) -> None:
    write_session(private_home, json.dumps(SESSION))
    checks = enhancechecks.auggie_checks(os.environ, private_home)
    assert [c.id for c in checks] == ["tool.auggie", "auggie.login"]
    tool, login = checks
    assert (tool.status, login.status) == ("pass", "pass")
    assert tool.detail.startswith("auggie 0.36.0 (")
    assert login.detail == "session in ~/.augment/session.json"
    assert [c["argv"] for c in stubs.calls("auggie")].count(["token", "print"]) == 1


def test_auggie_missing_from_path(stubs: Stubs, private_home: Path) -> None:
    write_session(private_home, json.dumps(SESSION))
    stubs.remove("auggie")
    env = dict(os.environ, PATH=str(stubs.bin))
    c = by_id(enhancechecks.auggie_checks(env, private_home))
    assert c["tool.auggie"].status == "fail"
    assert c["tool.auggie"].detail == "auggie is not on PATH"
    assert "npm install -g @augmentcode/auggie" in c["tool.auggie"].remediation


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        (None, "not logged in to Augment (~/.augment/session.json is missing)"),
        ("", "~/.augment/session.json is empty"),
        ("  \n", "~/.augment/session.json is empty"),
        ("{not json", "~/.augment/session.json is not valid JSON"),
        ('{"tenantURL": "https://t.example/"}', "~/.augment/session.json has no accessToken"),
    ],
)
def test_a_missing_or_bad_session_file_fails_the_login_check(
    stubs: Stubs, private_home: Path, content: str | None, detail: str
) -> None:
    if content is not None:
        write_session(private_home, content)
    login = by_id(enhancechecks.auggie_checks(os.environ, private_home))["auggie.login"]
    assert login.status == "fail"
    assert login.detail == detail
    assert "auggie login" in login.remediation


def test_an_unreadable_session_file_says_why(stubs: Stubs, private_home: Path) -> None:
    (private_home / ".augment" / "session.json").mkdir(parents=True)
    login = by_id(enhancechecks.auggie_checks(os.environ, private_home))["auggie.login"]
    assert login.status == "fail"
    assert login.detail == "~/.augment/session.json cannot be read (Is a directory)"


def test_auggie_refusing_the_session_fails_without_showing_the_token(
    stubs: Stubs, private_home: Path
) -> None:
    write_session(private_home, json.dumps(SESSION))
    stubs.rule(
        "auggie",
        {
            "match": ["token", "print"],
            "exit": 1,
            "stderr": "❌ You are not currently logged in to Augment.\n",
        },
    )
    login = by_id(enhancechecks.auggie_checks(os.environ, private_home))["auggie.login"]
    assert login.status == "fail"
    assert "You are not currently logged in to Augment." in login.detail


def test_the_token_never_appears_in_a_check(stubs: Stubs, private_home: Path) -> None:
    write_session(private_home, json.dumps(SESSION))
    stubs.rule(
        "auggie",
        {"match": ["token", "print"], "stdout": f"SESSION={json.dumps(SESSION)}\n"},
    )
    checks = enhancechecks.auggie_checks(os.environ, private_home)
    assert "sekrit" not in json.dumps([c.as_json() for c in checks])


def test_a_session_in_the_environment_counts_as_login(stubs: Stubs, private_home: Path) -> None:
    env = dict(os.environ, AUGMENT_SESSION_AUTH=json.dumps(SESSION))
    login = by_id(enhancechecks.auggie_checks(env, private_home))["auggie.login"]
    assert (login.status, login.detail) == ("pass", "session from AUGMENT_SESSION_AUTH")
    bad = dict(os.environ, AUGMENT_SESSION_AUTH="token-without-json")
    login = by_id(enhancechecks.auggie_checks(bad, private_home))["auggie.login"]
    assert (login.status, login.detail) == ("fail", "AUGMENT_SESSION_AUTH is not valid JSON")


# --- configuration and the rewrite instruction -------------------------------------------------


def test_the_timeout_comes_from_the_project_config(repo: Path) -> None:
    assert enhance.timeout_from_config(config.load(repo)) == enhance.DEFAULT_TIMEOUT == 120.0
    assert enhance.timeout_from_config(None) == 120.0
    (repo / ".plan-build.yaml").write_text("enhance:\n  timeout: 45\n")
    assert enhance.timeout_from_config(config.load(repo)) == 45.0
    (repo / ".plan-build.yaml").write_text("enhance:\n  timeout: 0\n")
    with pytest.raises(PlanBuildError) as err:
        enhance.timeout_from_config(config.load(repo))
    assert err.value.code == ExitCode.USAGE
    assert ":2: enhance.timeout must be between 0 and 86400 seconds" in err.value.what


@pytest.mark.parametrize("indexing", [False, True], ids=["plain", "indexing"])
def test_the_rewrite_instruction_matches_its_golden_file(indexing: bool) -> None:
    h = Harness()
    payload = "Fix ```the``` {{ parser }}\n--yolo EOF\n"
    text = enhance.instruction(h.session, payload, indexing=indexing)
    golden = GOLDEN / f"rewrite-{'indexing' if indexing else 'plain'}.md"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")
    assert "````text\n" + payload + "````" in text


def test_a_second_signal_during_cleanup_does_not_cut_it_short() -> None:
    cleaned = []

    def interrupted_step() -> None:
        with interact.interruptible():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                threading.Event().wait(2)  # the handler raises before this returns
            finally:
                os.kill(os.getpid(), signal.SIGINT)  # the user presses Ctrl-C again
                threading.Event().wait(0.1)
                cleaned.append(True)

    with pytest.raises(KeyboardInterrupt):
        interrupted_step()
    assert cleaned == [True]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_terminal_mode_is_put_back_after_an_interruption() -> None:
    import pty
    import termios
    import tty

    master, slave = pty.openpty()

    def editor_killed_mid_screen(stream: Any) -> None:
        with interact.interruptible(stream):
            tty.setraw(slave)  # what an editor does
            raise KeyboardInterrupt

    with os.fdopen(slave, "r") as stream:
        before = termios.tcgetattr(slave)
        with pytest.raises(KeyboardInterrupt):
            editor_killed_mid_screen(stream)
        assert termios.tcgetattr(slave) == before
    os.close(master)


def test_a_change_made_before_a_timeout_is_caught_too(repo: Path, stubs: Stubs) -> None:
    stubs.rule(
        "auggie",
        {"match": ["--print"], "sleep": 30, "write": {str(repo / "new.py"): "print(1)\n"}},
    )
    with pytest.raises(PlanBuildError) as err:
        Harness(["y"]).run(repo, timeout=1)
    assert err.value.code == ExitCode.BLOCKED
    assert "new.py" in err.value.what
