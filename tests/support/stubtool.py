"""A stand-in for claude, codex, coderabbit and auggie used by the end-to-end tests.

Each stub executable on PATH calls `main(<tool>)`. It appends one JSON line per call to
`$STUB_HOME/calls.jsonl` (tool, argv, cwd, environment) and answers from the first rule in
`$STUB_HOME/<tool>.json` whose `match` is a prefix of argv, falling back to DEFAULTS, which
reproduce the real CLIs' output shapes (docs: shared/docs/agent-cli-facts.md).

A rule: {"match": [...], "stdout": str, "stderr": str, "exit": int, "sleep": seconds,
"wait_for": path (block until that file exists),
"ignore_sigterm": bool, "grandchild": bool (spawn a long-lived grandchild that ignores
SIGTERM and write its pid to $STUB_HOME/<tool>.grandchild), "write": {path: text},
"stdout_file": path (answer with a file's text), "stdout_hex": hex (answer with these raw
bytes, e.g. invalid UTF-8), "copy_flag_file": {flag: path} (copy the file named by the
argument after `flag`, e.g. an instruction file, to `path` before answering), "write_flag":
{flag: text} (write text to the path given as the argument after `flag`, e.g. Codex's
`-o FILE`), "times": N (the rule answers only its first N matching calls; later calls fall
through to the next rule), "read_stdin": bool (read stdin to its end first and record it as
the call's "stdin"), "delete": [path, ...] (remove these files; relative paths are relative to
the call's cwd, as for "write"), "run": [argv...] (run this real command in the call's cwd
after the writes, e.g. `git init sub`)}. Every call writes its pid to $STUB_HOME/<tool>.pid,
so a test can check that an interrupted call was killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

CLAUDE_PLUGINS = [
    {
        "id": "agentmemory@agentmemory",
        "version": "0.9.29",
        "scope": "user",
        "enabled": True,
        "installPath": "/stub/.claude/plugins/cache/agentmemory/agentmemory/0.9.29",
        "installedAt": "2026-11-30T01:09:33.519Z",
        "lastUpdated": "2026-11-30T01:09:33.519Z",
        "projectEnabled": False,
    },
    {
        "id": "mattpocock-skills@mattpocock",
        "version": "1.2.0",
        "scope": "user",
        "enabled": True,
        "installPath": "/stub/.claude/plugins/cache/mattpocock/mattpocock-skills/1.2.0",
        "installedAt": "2026-11-30T01:09:33.519Z",
        "lastUpdated": "2026-11-30T01:09:33.519Z",
        "projectEnabled": False,
    },
    {
        "id": "cc-plugin-agents-md@builtin",
        "version": "unknown",
        "scope": "user",
        "enabled": True,
        "hasUserConfig": True,
    },
    {
        "id": "cc-plugin-plugin-authoring@builtin",
        "version": "unknown",
        "scope": "user",
        "enabled": True,
    },
    {"id": "cc-plugin-privacy@builtin", "version": "unknown", "scope": "user", "enabled": True},
    {"id": "cc-plugin-telemetry@builtin", "version": "unknown", "scope": "user", "enabled": True},
]

CODEX_PLUGINS = {
    "installed": [
        {
            "pluginId": "agentmemory@agentmemory",
            "name": "agentmemory",
            "marketplaceName": "agentmemory",
            "version": "0.9.29",
            "installed": True,
            "enabled": True,
            "source": {"source": "local", "path": "/stub/mkt/plugins/agentmemory"},
            "marketplaceSource": {"sourceType": "local", "source": "/stub/mkt"},
            "installPolicy": "AVAILABLE",
            "authPolicy": "ON_INSTALL",
        }
    ],
    "available": [],
}

CODEX_USAGE = {
    "input_tokens": 10,
    "cached_input_tokens": 0,
    "cache_write_input_tokens": 0,
    "output_tokens": 5,
    "reasoning_output_tokens": 0,
}


def codex_exec_events(
    message: str, *, thread_id: str = "01a22a0c-1f0b-7461-8cfe-43e314f760ae"
) -> str:
    """`codex exec --json` stdout for a turn that ends with `message` (codex-cli 0.171.0's
    shapes; tests/contract proves them against the real CLI). For a stub rule's `stdout`."""
    events = [
        {"type": "thread.started", "thread_id": thread_id},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {"id": "item_1", "type": "agent_message", "text": message},
        },
        {"type": "turn.completed", "usage": CODEX_USAGE},
    ]
    return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)


def codex_exec_failed_events(
    error: str, *, retries: int = 5, thread_id: str = "01a22a0c-1f0b-7461-8cfe-43e314f760ae"
) -> str:
    """`codex exec --json` stdout for a turn the API refused (exit 1): `Reconnecting...`
    errors, the final error, then `turn.failed`."""
    events: list[dict[str, object]] = [
        {"type": "thread.started", "thread_id": thread_id},
        {"type": "turn.started"},
    ]
    events += [
        {"type": "error", "message": f"Reconnecting... {n}/{retries} ({error})"}
        for n in range(1, retries + 1)
    ]
    events += [
        {"type": "error", "message": error},
        {"type": "turn.failed", "error": {"message": error}},
    ]
    return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)


DEFAULTS: dict[str, list[dict[str, object]]] = {
    "claude": [
        {"match": ["--version"], "stdout": "2.1.332 (Claude Code)\n"},
        # pretty-printed like the real CLI (both Claude and Codex indent by two spaces)
        {
            "match": ["plugin", "list", "--json"],
            "stdout": json.dumps(CLAUDE_PLUGINS, indent=2) + "\n",
        },
        {"match": [], "stdout": ""},
    ],
    "codex": [
        {"match": ["--version"], "stdout": "codex-cli 0.171.0\n"},
        {
            "match": ["plugin", "list", "--json"],
            "stdout": json.dumps(CODEX_PLUGINS, indent=2) + "\n",
        },
        {"match": [], "stdout": ""},
    ],
    "coderabbit": [
        {"match": ["--version"], "stdout": "0.3.4\n"},
        {"match": [], "stdout": ""},
    ],
    "auggie": [
        {"match": ["--version"], "stdout": "0.36.0 (commit 7c61e5bb)\n"},
        {
            "match": ["token", "print"],
            "stdout": 'SESSION={"accessToken":"stub","tenantURL":"https://stub.example/","scopes":["email"]}\n',
        },
        {"match": [], "stdout": ""},
    ],
}


def _rules(tool: str, home: Path) -> list[dict[str, object]]:
    spec = home / f"{tool}.json"
    rules: list[dict[str, object]] = []
    if spec.is_file():
        rules = json.loads(spec.read_text(encoding="utf-8"))
    return rules + DEFAULTS.get(tool, [{"match": []}])


def _pick(tool: str, home: Path, argv: list[str]) -> dict[str, object]:
    counts_path = home / f"{tool}.counts.json"
    counts = json.loads(counts_path.read_text()) if counts_path.is_file() else {}
    for index, rule in enumerate(_rules(tool, home)):
        if argv[: len(rule["match"])] != rule["match"]:  # type: ignore[arg-type]
            continue
        if "times" in rule:
            used = counts.get(str(index), 0)
            if used >= int(rule["times"]):  # type: ignore[call-overload]
                continue
            counts[str(index)] = used + 1
            counts_path.write_text(json.dumps(counts))
        return rule
    raise SystemExit(f"stub {tool}: no rule matches {argv}")


def main(tool: str) -> None:
    home = Path(os.environ["STUB_HOME"])
    argv = sys.argv[1:]
    rule = _pick(tool, home, argv)
    record = {
        "tool": tool,
        "argv": argv,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "pid": os.getpid(),
        "stdin_tty": sys.stdin.isatty() if sys.stdin else None,
    }
    if rule.get("read_stdin"):
        record["stdin"] = sys.stdin.read() if sys.stdin else None
    with (home / "calls.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    (home / f"{tool}.pid").write_text(str(os.getpid()))
    if rule.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if rule.get("grandchild"):
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import signal, time\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "time.sleep(300)",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        (home / f"{tool}.grandchild").write_text(str(child.pid))
    for path, text in dict(rule.get("write") or {}).items():  # type: ignore[call-overload]
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(str(text), encoding="utf-8")
    for path in list(rule.get("delete") or []):  # type: ignore[call-overload]
        Path(path).unlink(missing_ok=True)
    if rule.get("run"):
        subprocess.run([str(a) for a in rule["run"]], check=False)  # type: ignore[union-attr]
    for flag, text in dict(rule.get("write_flag") or {}).items():  # type: ignore[call-overload]
        if flag in argv and argv.index(flag) + 1 < len(argv):
            target = Path(argv[argv.index(flag) + 1])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(str(text), encoding="utf-8")
    for flag, dest in dict(rule.get("copy_flag_file") or {}).items():  # type: ignore[call-overload]
        if flag in argv and argv.index(flag) + 1 < len(argv):
            Path(dest).write_bytes(Path(argv[argv.index(flag) + 1]).read_bytes())
    if rule.get("wait_for"):  # block until another process creates this file (bounded)
        marker = Path(str(rule["wait_for"]))
        deadline = time.monotonic() + float(rule.get("wait_timeout", 20))  # type: ignore[arg-type]
        while not marker.exists():
            if time.monotonic() > deadline:
                sys.stderr.write(f"stub {tool}: {marker} never appeared\n")
                sys.exit(97)
            time.sleep(0.05)
    if rule.get("sleep"):
        time.sleep(float(rule["sleep"]))  # type: ignore[arg-type]
    out = str(rule.get("stdout", ""))
    if rule.get("stdout_file"):
        out = Path(str(rule["stdout_file"])).read_text(encoding="utf-8")
    sys.stdout.write(out)
    sys.stdout.flush()
    if rule.get("stdout_hex"):
        sys.stdout.buffer.write(bytes.fromhex(str(rule["stdout_hex"])))
        sys.stdout.buffer.flush()
    sys.stderr.write(str(rule.get("stderr", "")))
    sys.stdout.flush()
    sys.exit(int(rule.get("exit", 0)))  # type: ignore[call-overload]
