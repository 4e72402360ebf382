"""`plan-build enhance` end to end: the request piped in, the questions on a real terminal (a
pseudo-terminal that is the command's controlling terminal), the approved text on stdout."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.orphans import alive
from tests.support.pty_run import run_on_pty
from tests.support.stubs import Stubs
from tests.test_enhance import (  # noqa: F401 - the autouse orphan check applies here too
    ENHANCED,
    SESSION,
    no_stub_survives,
    reply,
    write_session,
)

# Make the pseudo-terminal the controlling terminal (so /dev/tty is it), then run plan-build.
LAUNCHER = (
    "import fcntl, os, sys, termios\n"
    "fcntl.ioctl(2, termios.TIOCSCTTY, 0)\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'plan_build', *sys.argv[1:]])\n"
)


class Terminal:
    """A user at a terminal: reads what plan-build shows there and types answers."""

    def __init__(self, *args: str, payload: str, cwd: Path, env: dict[str, str]) -> None:
        import pty

        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        assert self.proc.stdin is not None
        self.proc.stdin.write(payload.encode())
        self.proc.stdin.close()
        self.seen = b""

    @property
    def screen(self) -> str:
        return self.seen.decode("utf-8", "replace").replace("\r\n", "\n")

    def _drain(self, wait: float) -> None:
        ready, _, _ = select.select([self.master], [], [], wait)
        if ready:
            try:
                self.seen += os.read(self.master, 65536)
            except OSError:  # the other side closed
                time.sleep(wait)

    def expect(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self._drain(0.2)
                if text in self.screen:
                    return
                raise AssertionError(f"never saw {text!r}; the terminal shows:\n{self.screen}")
            self._drain(0.1)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"plan-build did not exit; the terminal shows:\n{self.screen}")
            self._drain(0.1)
        self._drain(0.1)
        assert self.proc.stdout is not None
        out = self.proc.stdout.read().decode()
        self.proc.stdout.close()
        os.close(self.master)
        return self.proc.returncode, out


@pytest.fixture
def user(repo: Path, stubs: Stubs, private_home: Path, tmp_path: Path) -> dict[str, object]:
    write_session(private_home, json.dumps(SESSION))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    return {"repo": repo, "env": env, "tmp": tmp}


def start(user: dict[str, object], payload: str = "add pagination\nEOF\n") -> Terminal:
    return Terminal(
        "enhance",
        payload=payload,
        cwd=user["repo"],  # type: ignore[arg-type]
        env=user["env"],  # type: ignore[arg-type]
    )


def leftovers(user: dict[str, object]) -> list[str]:
    tmp: Path = user["tmp"]  # type: ignore[assignment]
    return [p.name for p in tmp.iterdir() if p.name.startswith("plan-build")]


def test_the_approved_text_is_printed_on_stdout(user: dict[str, object], stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED), "stderr": "noise\n"})
    t = start(user)
    t.expect("Let Auggie index this repository?")
    t.type("n\n")
    t.expect("Print this request as the result?")
    t.type("a\n")
    code, out = t.finish()
    assert code == 0, t.screen
    assert out == ENHANCED
    assert "Auggie's enhanced request:" in t.screen
    assert "Add cursor-based pagination to `GET /audit-log`." in t.screen
    assert "keep your original" not in t.screen  # only `plan --prompt` has a context section
    (call,) = [c for c in stubs.calls("auggie") if c["argv"][:1] == ["--print"]]
    assert call["stdin_tty"] is False


def test_stopping_prints_nothing_and_exits_4(user: dict[str, object], stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    t = start(user)
    t.expect("index this repository?")
    t.type("\n")
    t.expect("Print this request as the result?")
    t.type("s\n")
    code, out = t.finish()
    assert (code, out) == (4, "")
    assert "plan-build: stopped at the enhanced-request approval" in t.screen


def test_an_edit_in_the_users_editor_is_what_is_printed(
    user: dict[str, object], stubs: Stubs, tmp_path: Path
) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys\nprint('EDITOR SCREEN')\n"
        "open(sys.argv[1], 'w', encoding='utf-8').write('edited by hand ✍\\n')\n"
    )
    user["env"] = dict(user["env"], VISUAL=f"{sys.executable} {editor}")  # type: ignore[arg-type]
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    t = start(user)
    t.expect("index this repository?")
    t.type("n\n")
    t.expect("Print this request as the result?")
    t.type("e\n")
    t.expect("Your edited request:")
    t.type("a\n")
    code, out = t.finish()
    assert (code, out) == (0, "edited by hand ✍\n"), t.screen
    assert "EDITOR SCREEN" in t.screen  # the editor gets the terminal, not the captured stdout
    assert leftovers(user) == []


def test_an_editor_that_leaves_the_file_empty_changes_nothing(
    user: dict[str, object], stubs: Stubs
) -> None:
    user["env"] = dict(user["env"], EDITOR="truncate -s 0")  # type: ignore[arg-type]
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    t = start(user)
    t.expect("index this repository?")
    t.type("n\n")
    t.expect("Print this request as the result?")
    t.type("e\n")
    t.expect("the edited request is empty; it was not used")
    t.type("a\n")
    code, out = t.finish()
    assert (code, out) == (0, ENHANCED)


def test_a_failing_editor_is_reported_and_the_question_comes_back(
    user: dict[str, object], stubs: Stubs
) -> None:
    user["env"] = dict(user["env"], VISUAL="false")  # type: ignore[arg-type]
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    t = start(user)
    t.expect("index this repository?")
    t.type("n\n")
    t.expect("Print this request as the result?")
    t.type("e\n")
    t.expect("edit failed: the editor (false) exited 1; the text was not changed")
    t.type("s\n")
    code, out = t.finish()
    assert (code, out) == (4, "")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "Ctrl-C"])
def test_interrupting_while_auggie_runs_leaves_no_process_and_no_file(
    user: dict[str, object], stubs: Stubs, how: str
) -> None:
    stubs.rule(
        "auggie",
        {"match": ["--print"], "sleep": 120, "ignore_sigterm": True, "grandchild": True},
    )
    t = start(user)
    t.expect("index this repository?")
    t.type("n\n")
    t.expect("asking Auggie to enhance the request")
    marker = stubs.home / "auggie.grandchild"
    for _ in range(300):
        if marker.exists():
            break
        time.sleep(0.05)
    grandchild = int(marker.read_text())
    (call,) = [c for c in stubs.calls("auggie") if c["argv"][:1] == ["--print"]]
    assert alive(grandchild)
    assert alive(call["pid"])
    if how.startswith("SIG"):
        t.proc.send_signal(getattr(signal, how))
    else:
        t.type("\x03")  # the terminal turns it into SIGINT for the foreground process group
    code, out = t.finish()
    assert (code, out) == (130, "")
    assert "plan-build: interrupted" in t.screen
    assert not alive(grandchild)
    assert not alive(call["pid"])
    assert leftovers(user) == []


def test_ctrl_c_at_a_question_exits_130(user: dict[str, object], stubs: Stubs) -> None:
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    t = start(user)
    t.expect("index this repository?")
    t.type("n\n")
    t.expect("Print this request as the result?")
    t.type("\x03")
    code, out = t.finish()
    assert (code, out) == (130, "")


def test_not_logged_in_stops_before_the_request_is_read(
    user: dict[str, object], stubs: Stubs, private_home: Path
) -> None:
    (private_home / ".augment" / "session.json").unlink()
    t = start(user)
    code, out = t.finish()
    assert (code, out) == (3, "")
    assert "auggie.login" in t.screen
    assert "auggie login" in t.screen
    assert "prompt enhancement is not ready (auggie.login)" in t.screen
    assert not [c for c in stubs.calls("auggie") if c["argv"][:1] == ["--print"]]


def test_a_blank_request_is_a_usage_error(user: dict[str, object], stubs: Stubs) -> None:
    t = start(user, payload="\n   \nEOF\n")
    code, out = t.finish()
    assert (code, out) == (2, "")
    assert "the request is empty" in t.screen
    assert not [c for c in stubs.calls("auggie") if c["argv"][:1] == ["--print"]]


def test_auggie_failing_then_the_original_is_chosen(user: dict[str, object], stubs: Stubs) -> None:
    stubs.rule(
        "auggie",
        {"match": ["--print"], "exit": 1, "stderr": "❌ Agent execution failed: boom\n"},
    )
    t = start(user, payload="keep   my words\nEOF\n")
    t.expect("index this repository?")
    t.type("n\n")
    t.expect("Your request was not enhanced.")
    t.type("o\n")
    code, out = t.finish()
    assert (code, out) == (0, "keep   my words\n")
    assert "prompt enhancement failed: Auggie exited 1" in t.screen
    assert "Agent execution failed: boom" in t.screen


def test_without_any_terminal_it_exits_3_before_anything_runs(
    cli, repo: Path, stubs: Stubs, private_home: Path
) -> None:
    write_session(private_home, json.dumps(SESSION))
    r = cli("enhance", cwd=repo, input="add pagination\nEOF\n")
    assert (r.code, r.stdout) == (3, "")
    assert "needs a terminal to ask for approval" in r.stderr
    assert stubs.calls("auggie") == []


def prompt_section(out: str) -> str:
    return out.split(" ---\n", 3)[3].split("--- end ---", 1)[0]


def logged_in(home: Path, tmp_path: Path) -> dict[str, str]:
    write_session(home, json.dumps(SESSION))
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return dict(os.environ, TMPDIR=str(tmp))


def test_plan_prompt_launches_claude_with_the_approved_text_only(
    ready: Path, stubs: Stubs, private_home: Path, tmp_path: Path
) -> None:
    env = logged_in(private_home, tmp_path)
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    r = run_on_pty(
        [sys.executable, "-m", "plan_build", "plan", "--prompt"],
        cwd=ready,
        env={**env, "NO_COLOR": "1"},
        typed=[
            ("> ", "add pagination\n"),
            ("> ", "EOF\n"),
            ("index this repository?", "n\n"),
            ("Launch Claude Code with this request?", "a\n"),
            ("for context?", "\n"),
        ],
    )
    assert r.code == 0, r.output
    probed = [c["argv"] for c in stubs.calls("auggie")]
    assert ["--version"] in probed  # preflight in --prompt mode checks Auggie and its login
    assert ["token", "print"] in probed
    assert r.output.index("ready · standard") < r.output.index("Describe the work")
    assert r.output.index("EOF") < r.output.index("index this repository?")
    [call] = [c for c in stubs.calls("claude") if c["argv"][2:3] == ["--"]]
    assert call["argv"][0] == "--settings"  # plan-build's settings layer, then the prompt
    prompt = call["argv"][3]
    assert "```text\n" + ENHANCED + "```" in prompt
    assert "add pagination" not in prompt  # the original was not kept
    assert "original wording" not in prompt
    assert [p.name for p in (tmp_path / "tmp").iterdir()] == []


def test_plan_prompt_stopped_at_the_approval_launches_nothing(
    ready: Path, stubs: Stubs, private_home: Path, tmp_path: Path
) -> None:
    env = logged_in(private_home, tmp_path)
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    r = run_on_pty(
        [sys.executable, "-m", "plan_build", "plan", "--prompt"],
        cwd=ready,
        env={**env, "NO_COLOR": "1"},
        typed=[
            ("> ", "add pagination\n"),
            ("> ", "EOF\n"),
            ("index this repository?", "n\n"),
            ("Launch Claude Code with this request?", "s\n"),
        ],
    )
    assert r.code == 4, r.output
    assert "stopped at the enhanced-request approval; nothing was used" in r.output
    assert [c for c in stubs.calls("claude") if "--" in c["argv"]] == []


@pytest.mark.parametrize("keep", [True, False], ids=["keep-original", "enhanced-only"])
def test_plan_prompt_dry_run_shows_the_approved_text_in_the_launch_prompt(
    ready: Path, stubs: Stubs, private_home: Path, tmp_path: Path, keep: bool
) -> None:
    env = logged_in(private_home, tmp_path)
    stubs.rule("auggie", {"match": ["--print"], "stdout": reply(ENHANCED)})
    t = Terminal(
        "plan", "--prompt", "--dry-run", payload="add pagination\nEOF\n", cwd=ready, env=env
    )
    t.expect("index this repository?")
    t.type("n\n")
    t.expect("Launch Claude Code with this request?")
    t.type("a\n")
    t.expect("Also keep your original wording in the prompt, for context?")
    t.type("y\n" if keep else "n\n")
    code, out = t.finish()
    assert (code, out.rstrip().splitlines()[-1]) == (0, "would launch"), t.screen + out
    assert "auggie 0.36.0" in t.screen  # preflight in --prompt mode checks Auggie
    assert "Auggie login" in t.screen
    request = prompt_section(out).split("## Request", 1)[1]
    assert "```text\n" + ENHANCED + "```" in request
    assert ("original wording" in request) is keep
    assert ("```text\nadd pagination\n```" in request) is keep


def test_plan_prompt_dry_run_with_auggie_logged_out_shows_the_request_as_typed(
    ready: Path, stubs: Stubs, tmp_path: Path
) -> None:
    t = Terminal(
        "plan",
        "--prompt",
        "--dry-run",
        payload="add pagination\nEOF\n",
        cwd=ready,
        env=dict(os.environ),
    )
    code, out = t.finish()
    assert code == 3
    assert "not logged in to Augment" in t.screen
    assert "```text\nadd pagination\n```" in prompt_section(out)
    assert out.rstrip().splitlines()[-1] == "would not launch: preflight failed: auggie.login"
    assert not [c for c in stubs.calls("auggie") if c["argv"][:1] == ["--print"]]
