"""A stand-in for claude, codex, coderabbit and auggie used by the end-to-end tests.

Each stub executable on PATH calls `main(<tool>)`. It appends one JSON line per call to
`$STUB_HOME/calls.jsonl` (tool, argv, cwd, environment) and answers from the first rule in
`$STUB_HOME/<tool>.json` whose `match` is a prefix of argv, falling back to DEFAULTS, which
reproduce the real CLIs' output shapes (docs: shared/docs/agent-cli-facts.md).

A rule: {"match": [...], "stdout": str, "stderr": str, "exit": int, "sleep": seconds,
"wait_for": path (block until that file exists), "ignore_sigterm": bool, "grandchild": bool
(spawn a long-lived grandchild that ignores SIGTERM and write its pid to
$STUB_HOME/<tool>.grandchild), "write": {path: text}, "stdout_file": path (answer with a file's
text), "stdout_hex": hex (answer with these raw bytes, e.g. invalid UTF-8), "copy_flag_file":
{flag: path} (copy the file named by the argument after `flag`, e.g. an instruction file, to
`path` before answering), "write_flag": {flag: text} (write text to the path given as the
argument after `flag`, e.g. Codex's `-o FILE`), "times": N (the rule answers only its first N
matching calls; later calls fall through to the next rule), "contains": text (the rule answers
only calls with an argument that contains this text, e.g. a prompt naming one task),
"read_stdin": bool (read stdin to its end first and record it as the call's "stdin"), "delete":
[path, ...] (remove these files; relative paths are relative to the call's cwd, as for
"write"), "run": [argv...] (run this real command in the call's cwd after the writes, e.g. `git
init sub`), "emulate": "plugins" (answer `plugin ...` calls from and into the state file
$STUB_HOME/<tool>.plugins.json, see `emulate_plugins`)}. Every call writes its pid to
$STUB_HOME/<tool>.pid, so a test can check that an interrupted call was killed.
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


def _publish(path: Path, text: str) -> None:
    """Write a pid file whole (rename), so a test polling for it never reads it half-written."""
    part = path.with_name(f".{path.name}.{os.getpid()}")
    part.write_text(text)
    part.replace(path)


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
        if "contains" in rule and not any(str(rule["contains"]) in a for a in argv):
            continue
        if "times" in rule:
            used = counts.get(str(index), 0)
            if used >= int(rule["times"]):  # type: ignore[call-overload]
                continue
            counts[str(index)] = used + 1
            counts_path.write_text(json.dumps(counts))
        return rule
    raise SystemExit(f"stub {tool}: no rule matches {argv}")


def _codex_config() -> Path:
    codex_home = os.environ.get("CODEX_HOME")
    base = Path(codex_home) if codex_home else Path(os.environ["HOME"]) / ".codex"
    return base / "config.toml"


def _flag(argv: list[str], flag: str, default: str) -> str:
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else default


def emulate_plugins(tool: str, home: Path, argv: list[str]) -> tuple[str, str, int]:
    """The plugin commands of the real CLIs (agent-cli-facts.md §1.2, §2.3) over a state file:
    {"plugins": [entries], "marketplaces": [names], "sources": {source: marketplace name},
    "stay_disabled": [ids]}. Codex reads `enabled` from its config.toml, as the real one does,
    and fails like it when that file is not valid TOML."""
    import tomllib

    path = home / f"{tool}.plugins.json"
    state = json.loads(path.read_text()) if path.is_file() else {}
    entries: list[dict[str, object]] = state.setdefault("plugins", [])
    markets: list[str] = state.setdefault("marketplaces", [])
    known: dict[str, str] = state.setdefault("sources", {})
    stay = set(state.get("stay_disabled", []))
    words = [a for a in argv if a != "--json"]

    def save() -> None:
        path.write_text(json.dumps(state))

    if tool == "claude":
        if words[:3] == ["plugin", "marketplace", "list"]:
            return json.dumps([{"name": m, "source": "directory"} for m in markets]), "", 0
        if words[:3] == ["plugin", "marketplace", "add"]:
            source = words[3]
            if source not in known:
                msg = f"Path does not exist: {source}"
                out = {"command": "marketplace-add", "outcome": "failed", "message": msg}
                return json.dumps(out) + "\n", f"✘ {msg}\n", 1
            if known[source] not in markets:
                markets.append(known[source])
            save()
            out = {"command": "marketplace-add", "outcome": "ok", "marketplace": known[source]}
            return json.dumps(out) + "\n", "", 0
        if words[:2] == ["plugin", "list"]:
            return json.dumps(entries + CLAUDE_PLUGINS[2:], indent=2) + "\n", "", 0
        if words[:2] in (["plugin", "install"], ["plugin", "enable"]):
            plugin, scope = words[2], _flag(words, "--scope", "user")
            mine = [e for e in entries if e["id"] == plugin]
            if words[1] == "install" and not mine:
                if plugin.split("@")[1] not in markets:
                    out = {"command": "install", "outcome": "failed", "failureCode": "not_found"}
                    return json.dumps(out) + "\n", f"✘ Failed to install plugin {plugin}\n", 1
                entry = {"id": plugin, "version": "1.0.0", "scope": scope, "enabled": True}
                entries.append(entry)
                mine = [entry]
            for e in mine:
                e["enabled"] = plugin not in stay
            save()
            return (
                json.dumps({"command": words[1], "outcome": "ok", "plugin": plugin}) + "\n",
                "",
                0,
            )
    if tool == "codex":
        config = _codex_config()
        text = config.read_text() if config.is_file() else ""
        try:
            switches = tomllib.loads(text).get("plugins", {})
        except tomllib.TOMLDecodeError as exc:
            return "", f"Error: failed to load configuration\n\nCaused by:\n    {exc}\n", 1
        if words[:3] == ["plugin", "marketplace", "list"]:
            return json.dumps({"marketplaces": [{"name": m} for m in markets]}, indent=2), "", 0
        if words[:3] == ["plugin", "marketplace", "add"]:
            source = words[3]
            if source not in known:
                return "", "Error: failed to resolve local marketplace source path\n", 1
            if known[source] not in markets:
                markets.append(known[source])
            save()
            return json.dumps({"marketplaceName": known[source]}, indent=2), "", 0
        if words[:2] == ["plugin", "list"]:
            installed = [
                {
                    "pluginId": e["id"],
                    "version": "0.9.29",
                    "installed": True,
                    "enabled": switches.get(e["id"], {}).get("enabled") is True,
                }
                for e in entries
            ]
            return json.dumps({"installed": installed, "available": []}, indent=2), "", 0
        if words[:2] == ["plugin", "add"]:
            plugin = words[2]
            if plugin.split("@")[1] not in markets:
                return "", f"Error: marketplace for `{plugin}` was not found\n", 1
            if all(e["id"] != plugin for e in entries):
                entries.append({"id": plugin})
            header = f'[plugins."{plugin}"]\n'
            if plugin not in switches:  # the real `add` writes the table, or turns it on
                config.parent.mkdir(parents=True, exist_ok=True)
                config.write_text(text + ("\n" if text else "") + header + "enabled = true\n")
            elif header in text:
                head, _, rest = text.partition(header)
                config.write_text(
                    head + header + rest.replace("enabled = false", "enabled = true", 1)
                )
            save()
            return json.dumps({"pluginId": plugin}, indent=2), "", 0
    return "", f"stub {tool}: cannot emulate {argv}\n", 2


def main(tool: str) -> None:
    home = Path(os.environ["STUB_HOME"])
    argv = sys.argv[1:]
    rule = _pick(tool, home, argv)
    if rule.get("emulate") == "plugins":
        out, err, code = emulate_plugins(tool, home, argv)
        rule = {**rule, "stdout": out, "stderr": err, "exit": code}
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
    _publish(home / f"{tool}.pid", str(os.getpid()))
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
        _publish(home / f"{tool}.grandchild", str(child.pid))
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
