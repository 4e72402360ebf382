"""Credentials never travel into a prompt or into TASKS.md evidence."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from plan_build.core import redact
from tests.support.tokens import aws_key, github_token


def test_known_secret_patterns_are_withheld_line_by_line() -> None:
    text = "ok\nkey=AKIAIOSFODNN7EXAMPLE\n-----BEGIN RSA PRIVATE KEY-----\nfine\n"
    out, found = redact.redact(text, {})
    assert out.splitlines() == [
        "ok",
        "[line withheld by plan-build: looks like a credential (AWS Access Key)]",
        "[line withheld by plan-build: looks like a credential (Private Key)]",
        "fine",
    ]
    assert [f.line for f in found] == [2, 3]


def test_values_of_secret_environment_variables_are_withheld_by_name() -> None:
    out, found = redact.redact(
        "Authorization failed for s3cr3t-value-42\n", {"SHOP_API_TOKEN": "s3cr3t-value-42"}
    )
    assert "s3cr3t-value-42" not in out
    assert "($SHOP_API_TOKEN)" in out
    assert found[0].kind == "$SHOP_API_TOKEN"


def test_hashes_paths_and_short_values_are_not_secrets() -> None:
    text = (
        "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
        "fingerprint sha256:f10e0aca2f6630ae5e57e02ceadbad29b6d59bfec88ce1939fbc828f75afc1b8\n"
        "normal text with a /home/ana/.ssh/known_hosts path\n"
        "server at 203.0.113.7\n"
    )
    env = {"SSH_AUTH_SOCK": "/home/ana/.ssh/known_hosts", "GH_TOKEN": "short"}
    assert redact.redact(text, env) == (text, [])


# --- the shared scanner ------------------------------------------------------------------

FRAGMENTS = [
    github_token(),
    aws_key(),
    "xoxb-1234567890-abcdefghij",
    "sk_live_" + "Fake" * 6,
    "-----BEGIN RSA PRIVATE KEY-----",
    "glpat-" + "Fake" * 5,
    "https://user:hunter2hunter2@example.com/x",
    "ibm_cloud_iam_api_key = '" + "F" * 44 + "'",
    '"',
    "'",
    " = ",
    ": ",
    "\t",
    "\r",
    " ",
]
LINE = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(alphabet="aZ09_-.:/=@ ", max_size=6)),
    max_size=6,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(LINE, max_size=10), st.booleans())
def test_searching_the_joined_text_finds_what_line_by_line_finds(
    lines: list[str], patterns_only: bool
) -> None:
    engine = redact.engine()
    slow = object.__new__(type(engine))  # every plugin asked about every line
    slow.__dict__.update(engine.__dict__)
    slow.all = [dataclasses.replace(p, prefilter=None) for p in engine.all]
    slow.patterns = [dataclasses.replace(p, prefilter=None) for p in engine.patterns]

    fast = engine.scan_lines("x.py", lines, patterns_only=patterns_only)
    expected = slow.scan_lines("x.py", lines, patterns_only=patterns_only)

    assert fast == expected


def test_the_joined_search_is_used_for_the_token_plugins() -> None:
    names = {type(p.plugin).__name__ for p in redact.engine().patterns if p.prefilter is None}
    assert names == set(), names  # every pattern plugin qualifies today (detect-secrets 1.5.0)


def test_lines_found_by_the_joined_search_keep_their_numbers() -> None:
    lines = ["a", f"t = '{github_token()}'", "b", "c", f"k={aws_key()}"]
    found = redact.engine().scan_lines("x.py", lines, patterns_only=True)
    assert [(i, h.type) for i, h in found] == [(1, "GitHub Token"), (4, "AWS Access Key")]


def test_what_verify_flags_with_the_keyword_plugin_is_withheld_too() -> None:
    """Issue 36: the report kept `password = "hunter2hunter2"`, which verify's scan flags."""
    texts = ['password = "hunter2hunter2"', "the password is wrong", "x = get_password()"]
    assert redact.clean_many(texts, {}) == [
        "[line withheld by plan-build: looks like a credential (Secret Keyword)]",
        "the password is wrong",
        "x = get_password()",
    ]


def test_every_prefilter_finds_what_asking_line_by_line_finds_across_many_files() -> None:
    """The full scan (entropy and keyword plugins too) of many files at once gives each file
    what asking each plugin about each line of that file alone gives."""
    engine = redact.engine()
    line = st.sampled_from(
        [
            'token = "c2VjcmV0LXZhbHVlLXdpdGgtZW50cm9weS0xMjM0NTY3ODkw"',
            "key: '8f14e45fceea167a5a36dedd4bea2543d2f1c6b1'",
            'x = "short" + "AKIAQWERTYUIOPASDFGH"',
            "'unterminated c2VjcmV0LXZhbHVlLXdpdGgtZW50cm9weS0x",
            '"',
            'password = "hunter2hunter2"',
            "plain prose with no quotes",
            "ip 8.8.8.8 and 10.0.0.1",
        ]
    )
    files = st.lists(st.lists(line, max_size=6), max_size=5)

    @settings(max_examples=50, deadline=None)
    @given(files=files, noisy=st.booleans())
    def check(files: list[list[str]], noisy: bool) -> None:
        docs = [
            redact.Document(f"f{i}.py", lines, patterns_only=noisy and i % 2 == 0)
            for i, lines in enumerate(files)
        ]
        fast = engine.scan_documents(docs)
        saved = (engine.all, engine.patterns)
        engine.all = [dataclasses.replace(p, prefilter=None) for p in saved[0]]
        engine.patterns = [dataclasses.replace(p, prefilter=None) for p in saved[1]]
        try:
            slow = [
                engine.scan_lines(d.filename, d.lines, patterns_only=d.patterns_only) for d in docs
            ]
        finally:
            engine.all, engine.patterns = saved
        assert fast == slow

    check()


def test_the_keyword_prefilter_finds_what_asking_line_by_line_finds() -> None:
    engine = redact.engine()
    line = st.sampled_from(
        [
            'password = "hunter2hunter2"',
            "db_pass: 's3cr3tvalue99'",
            'API_KEY="abcdef123456"',
            "the Secret is out",
            "nothing here",
            'pwd := "zz9plural"',
        ]
    )

    @settings(max_examples=50, deadline=None)
    @given(lines=st.lists(line, max_size=12))
    def check(lines: list[str]) -> None:
        fast = engine.scan_lines("x", lines, patterns_only=True, heuristics=False, shown=True)
        saved = engine.shown
        engine.shown = [dataclasses.replace(p, prefilter=None) for p in saved]
        try:
            slow = engine.scan_lines("x", lines, patterns_only=True, heuristics=False, shown=True)
        finally:
            engine.shown = saved
        assert fast == slow

    check()
