"""TASKS.md: what plan-build reads from a hand-written plan, and that it writes back only what
it owns (a status value and its evidence blocks), byte for byte everything else."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plan_build.dispatch import taskfile
from plan_build.dispatch.taskfile import parse, with_block, with_status
from tests.support.properties import examples

TASK = """\
## TASK-001: Add the model

Status: Pending
Dependencies: none

### Objective
Model it.

### Scope
- `src/model.py`
- tests/

### Context
None.

### Prompt
Write the model.

### Acceptance criteria
- it exists

### Tests
One unit test.

### Verification
```sh
python -m pytest -q tests/test_model.py
ruff check src
```

### CodeRabbit
Pending.

### Evidence
None yet.
"""


def messages(text: str) -> list[str]:
    return [p.human() for p in parse(text).problems]


def test_a_complete_task_reads_every_field() -> None:
    tf = parse("# Plan\n\n" + TASK)
    [task] = tf.tasks
    assert (task.id, task.title, task.status, task.dependencies) == (
        "TASK-001",
        "Add the model",
        "Pending",
        (),
    )
    assert task.scope == ("src/model.py", "tests/")
    assert [c.argv for c in task.commands] == [
        ("python", "-m", "pytest", "-q", "tests/test_model.py"),
        ("ruff", "check", "src"),
    ]
    assert task.prompt == "Write the model.\n"
    assert task.body("objective").strip() == "Model it."
    assert tf.problems == []


def test_bold_bullet_fields_and_heading_variants_are_understood() -> None:
    text = TASK.replace("## TASK-001: Add the model", "## TASK-001 — Add the model").replace(
        "Status: Pending\nDependencies: none",
        "- **Status:** in progress\n- **Depends on**: TASK-000\n- Owner: ana",
    )
    text = text.replace("### Scope", "### Allowed file scope").replace(
        "### Prompt", "### Codex prompt"
    )
    zero = TASK.replace("TASK-001: Add the model", "TASK-000: Base").replace(
        "Status: Pending", "Status: Complete"
    )
    tf = parse(zero + "\n" + text)
    task = tf.get("TASK-001")
    assert task is not None
    assert task.title == "Add the model"
    assert task.status == "In Progress"
    assert task.dependencies == ("TASK-000",)
    assert task.scope == ("src/model.py", "tests/")
    assert task.prompt == "Write the model.\n"
    assert tf.errors == []


def test_headings_inside_a_fenced_prompt_belong_to_the_prompt() -> None:
    text = TASK.replace(
        "Write the model.\n",
        "````markdown\nWrite the model.\n## Steps\n```python\nx = 1\n```\n````\n",
    )
    tf = parse(text + "\n## TASK-002: Next\n")
    task = tf.get("TASK-001")
    assert task is not None
    assert task.prompt == "Write the model.\n## Steps\n```python\nx = 1\n```\n"
    assert [t.id for t in tf.tasks] == ["TASK-001", "TASK-002"]


def test_verification_commands_may_be_bullets_with_backticks_and_continuations() -> None:
    text = TASK.replace(
        "```sh\npython -m pytest -q tests/test_model.py\nruff check src\n```",
        "- `pytest -q` must pass\n- `env CI=1 make check`",
    )
    assert [c.argv for c in parse(text).tasks[0].commands] == [
        ("pytest", "-q"),
        ("env", "CI=1", "make", "check"),
    ]
    text = TASK.replace("ruff check src", "$ ruff check \\\n    src 'a b'\n# a comment")
    assert [c.argv for c in parse(text).tasks[0].commands][1] == ("ruff", "check", "src", "a b")


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("pytest | tee log", "(|)"),
        ("make && make test", "(&&)"),
        ("CI=1 pytest", "(CI=1)"),
        ("echo $(date)", "($(...))"),
        ("pytest > out.txt", "(>)"),
    ],
)
def test_shell_syntax_in_verification_is_an_error(command: str, why: str) -> None:
    text = TASK.replace("ruff check src", command)
    line = text.splitlines().index(command) + 1
    assert any(
        m.startswith(f"TASKS.md:{line}: TASK-001: verification command") and why in m
        for m in messages(text)
    )


def test_an_unclosed_quote_is_reported_with_its_line() -> None:
    text = TASK.replace("ruff check src", "ruff check 'src")
    line = text.splitlines().index("ruff check 'src") + 1
    assert f"TASKS.md:{line}: TASK-001: cannot split verification command" in "\n".join(
        messages(text)
    )


def test_lint_names_the_task_and_line_of_each_problem() -> None:
    text = (
        "# Plan\n\n"
        "## TASK-001: One\nStatus: Done\nDependencies: TASK-002\n\n"
        "### Objective\nx\n"
        "## TASK-002: Two\nStatus: In Progress\nDependencies: TASK-001\n"
        "### Scope\n- /etc/passwd\n- ../outside\n"
        "## TASK-003: Three\nStatus: In Progress\nDependencies: TASK-009, TASK-003\n"
        "## TASK-003: Again\nStatus: Pending\nDependencies: whenever\n"
        "## TASK-4: Short id\n"
        "## Task 5 without an id\n"
    )
    found = messages(text)
    expected = [
        'TASKS.md:3: TASK-001: no "Scope", "Prompt", "Acceptance criteria", "Tests", '
        '"Verification" sections',
        'TASKS.md:3: warning: TASK-001: no "Context", "CodeRabbit", "Evidence" sections',
        "TASKS.md:4: TASK-001: unknown status 'Done' (use one of: Pending, In Progress, "
        "Blocked, Review, Complete)",
        "TASKS.md:5: TASK-001: dependency cycle: TASK-001 → TASK-002 → TASK-001",
        "TASKS.md:10: warning: TASK-002: more than one task is In Progress (TASK-002, "
        "TASK-003); only a wave (plan-build dispatch --wave) runs several at once",
        "TASKS.md:13: TASK-002: scope entry '/etc/passwd' is absolute; write it relative to "
        "the repository root",
        "TASKS.md:14: TASK-002: scope entry '../outside' leaves the repository (..)",
        "TASKS.md:17: TASK-003: depends on TASK-009, which does not exist",
        "TASKS.md:17: TASK-003: depends on itself",
        "TASKS.md:18: TASK-003: duplicate task id (first at line 15)",
        "TASKS.md:20: TASK-003: Dependencies 'whenever' names no task ids (write TASK-001, "
        "TASK-002 or none)",
        "TASKS.md:21: TASK-4: task id TASK-4 needs at least three digits (TASK-001)",
        "TASKS.md:22: heading 'Task 5 without an id' looks like a task but has no id of the "
        "form TASK-001",
    ]
    for line in expected:
        assert line in found, (line, found)


def test_missing_status_and_dependency_lines_say_what_to_add() -> None:
    found = "\n".join(messages("## TASK-001: Bare\n"))
    assert "TASKS.md:1: TASK-001: no Status line (add `Status: Pending` under the heading)" in found
    assert "no Dependencies line (add `Dependencies: none` or task ids)" in found


def test_a_file_without_tasks_is_an_error() -> None:
    assert messages("# Plan\n\nNothing yet.\n") == [
        "TASKS.md:1: no tasks found (a task is a heading like `## TASK-001: Title`)"
    ]


def test_unknown_sections_and_fields_are_kept_and_ignored() -> None:
    text = TASK.replace("### CodeRabbit", "### Risks\nMany.\n\n### CodeRabbit").replace(
        "Dependencies: none", "Dependencies: none\nEstimate: 2h"
    )
    tf = parse(text)
    assert tf.errors == []
    out = with_status(text, "TASK-001", "Review")
    assert out == text.replace("Status: Pending", "Status: Review")


def test_status_change_touches_only_the_value() -> None:
    text = TASK.replace("Status: Pending", "- **Status:**   `Pending`  ")
    out = with_status(text, "TASK-001", "In Progress")
    assert out == text.replace("`Pending`", "In Progress")


def test_a_missing_status_line_is_added_under_the_heading() -> None:
    text = TASK.replace("Status: Pending\n", "")
    out = with_status(text, "TASK-001", "In Progress")
    assert out.startswith("## TASK-001: Add the model\nStatus: In Progress\n\nDependencies")


def test_crlf_files_keep_crlf_and_lose_nothing() -> None:
    text = ("# Plan\n\n" + TASK).replace("\n", "\r\n")
    out = with_block(
        with_status(text, "TASK-001", "Review"), "TASK-001", "d1", "Outcome: Review\nline\n"
    )
    assert "\n" not in out.replace("\r\n", "")
    assert out.startswith(text.split("Status: Pending")[0] + "Status: Review\r\n")
    assert out.endswith(
        "None yet.\r\n\r\n<!-- plan-build:dispatch d1 begin -->\r\nOutcome: Review\r\nline\r\n"
        "<!-- plan-build:dispatch d1 end -->\r\n"
    )


def test_a_file_without_a_final_newline_gets_the_block_after_its_last_line() -> None:
    text = TASK.rstrip("\n")
    out = with_block(text, "TASK-001", "d1", "Outcome: Blocked\n")
    assert out == text + "\n\n<!-- plan-build:dispatch d1 begin -->\nOutcome: Blocked\n" + (
        "<!-- plan-build:dispatch d1 end -->\n"
    )


def test_a_byte_order_mark_survives() -> None:
    text = "\ufeff" + TASK
    tf = parse(text)
    assert tf.tasks[0].id == "TASK-001"
    out = with_status(text, "TASK-001", "Blocked")
    assert out.startswith("\ufeff## TASK-001: Add the model\n\nStatus: Blocked\n")


def test_blocks_are_replaced_in_place_and_read_back() -> None:
    text = TASK + "\n## TASK-002: Next\nStatus: Pending\n"
    one = with_block(text, "TASK-001", "d1", "Outcome: In Progress · attempt 1\n")
    two = with_block(one, "TASK-001", "d1", "Outcome: Review · verified\n- Attempt 1\n")
    assert two.count("plan-build:dispatch d1 begin") == 1
    assert "In Progress · attempt 1" not in two
    three = with_block(two, "TASK-001", "d2", "Outcome: Blocked · scope\n")
    task = parse(three).get("TASK-001")
    assert task is not None
    assert [(b.id, b.outcome) for b in task.blocks] == [("d1", "Review"), ("d2", "Blocked")]
    # the next task is untouched
    assert three.endswith(
        "<!-- plan-build:dispatch d2 end -->\n\n## TASK-002: Next\nStatus: Pending\n"
    )


def test_a_task_without_an_evidence_section_gets_one() -> None:
    text = TASK.split("### Evidence", maxsplit=1)[0].rstrip("\n") + "\n\n## TASK-002: Next\n"
    out = with_block(text, "TASK-001", "d1", "Outcome: Review\n")
    assert "Pending.\n\n### Evidence\n\n<!-- plan-build:dispatch d1 begin -->" in out
    assert out.endswith("<!-- plan-build:dispatch d1 end -->\n\n## TASK-002: Next\n")
    assert parse(out).get("TASK-001").sections["evidence"]  # type: ignore[union-attr]


def test_marker_text_inside_a_fence_is_not_a_block() -> None:
    fake = "```\n<!-- plan-build:dispatch zz begin -->\n```\n"
    text = TASK.replace("None yet.\n", "None yet.\n" + fake)
    assert parse(text).tasks[0].blocks == ()
    out = with_block(text, "TASK-001", "zz", "Outcome: Review\n")
    assert fake in out


def test_the_content_digest_ignores_status_and_evidence_only() -> None:
    tf = parse(TASK)
    base = tf.content_digest(tf.tasks[0])
    changed = with_block(with_status(TASK, "TASK-001", "Blocked"), "TASK-001", "d", "Outcome: X\n")
    tf2 = parse(changed)
    # the blank line before a new block is not owned, so compare via a block replacement
    tf3 = parse(with_block(changed, "TASK-001", "d", "Outcome: Y\n"))
    assert tf2.content_digest(tf2.tasks[0]) == tf3.content_digest(tf3.tasks[0])
    edited = TASK.replace("Write the model.", "Write the model carefully.")
    tf4 = parse(edited)
    assert tf4.content_digest(tf4.tasks[0]) != base


def test_reading_a_missing_or_non_utf8_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(taskfile.TaskFileError) as missing:
        taskfile.read(tmp_path / "TASKS.md")
    assert "does not exist" in str(missing.value)
    assert "fix: write the task plan first" in str(missing.value)
    bad = tmp_path / "TASKS.md"
    bad.write_bytes(b"# Plan\n\n\xff\xfe broken\n")
    with pytest.raises(taskfile.TaskFileError) as garbled:
        taskfile.read(bad)
    assert f"{bad}:3: not UTF-8 text" in str(garbled.value)


PROSE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="#`~<\r"),
    max_size=200,
)


@settings(max_examples=examples(60), deadline=None)
@given(before=PROSE, after=PROSE, crlf=st.booleans())
def test_every_byte_around_the_owned_parts_is_preserved(
    before: str, after: str, crlf: bool
) -> None:
    text = "# Plan\n" + before + "\n\n" + TASK + "\n## Notes\n" + after
    if crlf:
        text = text.replace("\n", "\r\n")
    out = with_status(text, "TASK-001", "In Progress")
    out = with_block(out, "TASK-001", "d1", "Outcome: In Progress\n")
    out = with_block(out, "TASK-001", "d1", "Outcome: Review\n")
    out = with_status(out, "TASK-001", "Review")
    nl = "\r\n" if crlf else "\n"
    block = (
        f"{nl}<!-- plan-build:dispatch d1 begin -->{nl}Outcome: Review{nl}"
        f"<!-- plan-build:dispatch d1 end -->{nl}"
    )
    assert out.replace(block, "", 1).replace("Status: Review", "Status: Pending", 1) == text


def test_with_own_lines_takes_only_the_status_and_the_dispatchs_block_from_now() -> None:
    """What a resume expects TASKS.md to hold: the saved text, with plan-build's own writes
    since (the task's Status, its dispatch block) and nothing else carried over."""
    task = "## TASK-001: A\n\nStatus: {s}\n\n### Evidence\n\n{b}\n## TASK-002: B\n\nStatus: {o}\n"
    block = "<!-- plan-build:dispatch D1 begin -->\n{t}\n<!-- plan-build:dispatch D1 end -->"
    saved = task.format(s="In Progress", b=block.format(t="attempt 1 running"), o="Pending")
    now = task.format(s="in-progress", b=block.format(t="attempt 2 running"), o="Complete")
    expected = task.format(s="in-progress", b=block.format(t="attempt 2 running"), o="Pending")
    assert taskfile.with_own_lines(saved, now, "TASK-001", "D1") == expected
    same = task.format(s="in-progress", b=block.format(t="attempt 2 running"), o="Pending")
    assert taskfile.with_own_lines(saved, same, "TASK-001", "D1") == same
