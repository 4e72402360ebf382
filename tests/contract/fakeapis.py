"""Loopback stand-ins for the model APIs, so the real CLIs run complete turns offline.

Both servers bind 127.0.0.1 on a free port, record every request (method, path, headers, JSON
body) and answer from a scenario the test sets:

- `ModelsApi` (Anthropic Messages API, for Claude Code via ANTHROPIC_BASE_URL): every request
  gets HTTP 400 with an error body, so an interactive turn ends at once with `API Error: 400`
  and Claude goes back to its input box (no retry loop to wait out).
- `ResponsesApi` (OpenAI Responses API, for Codex via a `model_providers` entry): `reply`
  streams one assistant message (after asking Codex to run each of `commands` with its
  `exec_command` tool, one per turn request), `unauthorized` answers 401, `hang` accepts the
  request and never answers (the caller's timeout must end the run). Every streamed response
  ends with `response.completed` carrying `usage` (the Responses API's shape; None leaves it
  out), which Codex reports back as its `turn.completed` usage.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON
    at: float = field(default_factory=time.monotonic)  # when it arrived (bench_claude_calls)


@dataclass
class _Recorder:
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)

    def add(self, request: Request) -> None:
        with self.lock:
            self.requests.append(request)

    def snapshot(self) -> list[Request]:
        with self.lock:
            return list(self.requests)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    api: _LoopbackApi  # set on the subclass each server makes

    def log_message(self, *args: Any) -> None:
        pass

    def _record(self) -> Request:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        text = raw.decode("utf-8", "replace")
        try:
            body: Any = json.loads(text) if text else None
        except json.JSONDecodeError:
            body = text
        request = Request(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        self.api.recorder.add(request)
        return request

    def send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status: int, value: Any) -> None:
        self.send(status, "application/json", json.dumps(value).encode())

    def do_GET(self) -> None:
        self.api.answer(self, self._record())

    do_POST = do_GET
    do_HEAD = do_GET


class _LoopbackApi:
    def __init__(self) -> None:
        self.recorder = _Recorder()
        handler = type("Handler", (_Handler,), {"api": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[Request]:
        return self.recorder.snapshot()

    def answer(self, h: _Handler, request: Request) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __enter__(self) -> _LoopbackApi:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.recorder.closing.set()
        self._server.shutdown()
        self._server.server_close()


class ModelsApi(_LoopbackApi):
    """Anthropic-shaped: HTTP 400 `invalid_request_error` for every request."""

    MESSAGE = "plan-build contract test: no model here"

    def answer(self, h: _Handler, request: Request) -> None:
        h.send_json(
            400,
            {"type": "error", "error": {"type": "invalid_request_error", "message": self.MESSAGE}},
        )

    def user_texts(self) -> list[str]:
        """Every user text block Claude sent to /v1/messages, in order."""
        texts = []
        for r in self.requests:
            if r.method != "POST" or not r.path.startswith("/v1/messages"):
                continue
            for message in (r.body or {}).get("messages", []):
                if message.get("role") != "user":
                    continue
                content = message.get("content")
                blocks = (
                    [{"type": "text", "text": content}] if isinstance(content, str) else content
                )
                texts += [b.get("text", "") for b in blocks or [] if b.get("type") == "text"]
        return texts


Scenario = Literal["reply", "unauthorized", "hang"]
DEFAULT_USAGE: dict[str, Any] = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class ResponsesApi(_LoopbackApi):
    """OpenAI Responses-shaped, for `codex exec` with a custom model provider."""

    def __init__(self) -> None:
        super().__init__()
        self.scenario: Scenario = "reply"
        self.reply = "MOCK-REPLY: done"
        self.commands: list[str] = []  # shell commands Codex is asked to run before replying
        # per prompt: the first key found in a turn's user text picks that turn's commands
        # (several Codex runs at once, e.g. a wave's tasks, each get their own edits)
        self.commands_by_prompt: dict[str, list[str]] = {}
        # called while the turn is open, just before the reply: something a user does meanwhile
        self.before_reply: Callable[[], None] | None = None
        # the Responses `usage` of every streamed response (None: the field is left out)
        self.usage: dict[str, Any] | None = dict(DEFAULT_USAGE)

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def codex_flags(self) -> list[str]:
        """`-c` overrides that point Codex at this server (key read from MOCK_API_KEY)."""
        provider = (
            f'{{name="mock",base_url="{self.base_url}",env_key="MOCK_API_KEY",'
            'wire_api="responses"}'
        )
        return [
            "-c",
            "model=mock-model",
            "-c",
            "model_provider=mock",
            "-c",
            f"model_providers.mock={provider}",
        ]

    def configure(self, codex_home: Path) -> None:
        """Make this server Codex's default provider in `codex_home/config.toml`, for argv
        that plan-build builds itself (no `-c` overrides of ours in it). Top-level keys go
        first: TOML would read them as part of a table written before them."""
        config = codex_home / "config.toml"
        existing = config.read_text(encoding="utf-8") if config.exists() else ""
        config.write_text(
            'model_provider = "mock"\nmodel = "mock-model"\n\n'
            + existing
            + "\n[model_providers.mock]\n"
            + f'name = "mock"\nbase_url = "{self.base_url}"\n'
            + 'env_key = "MOCK_API_KEY"\nwire_api = "responses"\n',
            encoding="utf-8",
        )

    def answer(self, h: _Handler, request: Request) -> None:
        if request.method != "POST":
            h.send_json(200, {"object": "list", "data": [], "models": []})
            return
        if self.scenario == "unauthorized":
            h.send_json(
                401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
            )
            return
        if self.scenario == "hang":
            self.recorder.closing.wait(600)  # until the server shuts down
            return
        items = (request.body or {}).get("input", [])
        done = sum(
            1
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        )
        commands = self.commands
        if self.commands_by_prompt:
            text = json.dumps(items)
            commands = next(
                (cmds for key, cmds in self.commands_by_prompt.items() if key in text), commands
            )
        if done < len(commands):
            call = {
                "type": "function_call",
                "id": f"fc_{done}",
                "call_id": f"call_{done}",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": commands[done]}),
            }
            h.send(200, "text/event-stream", self._stream(call))
            return
        if self.before_reply is not None:
            self.before_reply()
        message = {
            "type": "message",
            "id": "msg_contract",
            "role": "assistant",
            "content": [{"type": "output_text", "text": self.reply, "annotations": []}],
        }
        h.send(200, "text/event-stream", self._stream(message))

    def _stream(self, item: dict[str, Any]) -> bytes:
        response: dict[str, Any] = {"id": "r1", "output": [item]}
        if self.usage is not None:
            response["usage"] = self.usage
        return b"".join(
            [
                _sse("response.created", {"type": "response.created", "response": {"id": "r1"}}),
                _sse(
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": 0, "item": item},
                ),
                _sse(
                    "response.completed",
                    {
                        "type": "response.completed",
                        "response": response,
                    },
                ),
            ]
        )

    def turns(self) -> list[Request]:
        return [r for r in self.requests if r.method == "POST" and r.path.endswith("/responses")]

    def last_user_text(self, turn: int = -1) -> str:
        """The text of the last user message of one recorded turn: the prompt Codex sent."""
        body = self.turns()[turn].body
        users = [i for i in body["input"] if i.get("type") == "message" and i.get("role") == "user"]
        return "".join(c.get("text", "") for c in users[-1]["content"])

    def turn_metadata(self, turn: int = -1) -> dict[str, Any]:
        raw = self.turns()[turn].headers.get("x-codex-turn-metadata", "{}")
        value = json.loads(raw)
        return value if isinstance(value, dict) else {}


SCRIPTED = "toolu_scripted_"
SUBAGENT = "SUBAGENT-SCRIPT"


class ScriptedMessagesApi(_LoopbackApi):
    """Anthropic-Messages-shaped, for a real Claude Code turn that uses tools offline: each
    request of the main loop (the one that offers Claude's `Bash` tool) is answered, streamed,
    with a `tool_use` block running the next of `commands`; once every command has its
    `tool_result`, with one text block (`reply`). Any other request (a title, a topic check)
    gets a short text. What Claude sent back for each command is read from the requests."""

    def __init__(self) -> None:
        super().__init__()
        # a Bash command, or (tool name, tool input) for another tool such as Write
        self.commands: list[str | tuple[str, dict[str, Any]]] = []
        self.reply = "SCRIPTED-REPLY: done"
        self.tool = "Bash"
        # a subagent's own script: a conversation whose first message holds SUBAGENT (the
        # prompt the main script's Agent call gives it) is answered from these instead
        self.subagent: list[str | tuple[str, dict[str, Any]]] = []

    def answer(self, h: _Handler, request: Request) -> None:
        if request.method != "POST" or not request.path.startswith("/v1/messages"):
            h.send_json(404, {"type": "error", "error": {"type": "not_found_error"}})
            return
        body = request.body if isinstance(request.body, dict) else {}
        if request.path.startswith("/v1/messages/count_tokens"):
            h.send_json(200, {"input_tokens": 10})
            return
        tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
        sub = SUBAGENT in json.dumps((body.get("messages") or [None])[0])
        prefix, script = ("toolu_sub_", self.subagent) if sub else (SCRIPTED, self.commands)
        done = len(self._results(body, prefix))
        if self.tool in tools and done < len(script):
            step = script[done]
            name, tool_input = (
                (self.tool, {"command": step, "description": f"step {done}"})
                if isinstance(step, str)
                else step
            )
            block = {
                "type": "tool_use",
                "id": f"{prefix}{done:03d}",
                "name": name,
                "input": tool_input,
            }
            stop = "tool_use"
        else:
            text = self.reply if self.tool in tools else "Scripted"
            block = {"type": "text", "text": text}
            stop = "end_turn"
        if body.get("stream"):
            h.send(200, "text/event-stream", self._stream(block, stop, body.get("model")))
        else:
            h.send_json(200, self._message(block, stop, body.get("model")))

    @staticmethod
    def _results(body: dict[str, Any], prefix: str = SCRIPTED) -> list[dict[str, Any]]:
        found = []
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            found += [
                b
                for b in (content if isinstance(content, list) else [])
                if isinstance(b, dict)
                and b.get("type") == "tool_result"
                and str(b.get("tool_use_id", "")).startswith(prefix)
            ]
        return found

    def results(self, subagent: bool = False) -> dict[str, str]:
        """command (or tool name and file path) → the text of the tool_result Claude sent for
        it (last request wins): the main script's, or with `subagent` the subagent's."""
        prefix, script = ("toolu_sub_", self.subagent) if subagent else (SCRIPTED, self.commands)
        out: dict[str, str] = {}
        for r in self.requests:
            if not isinstance(r.body, dict):
                continue
            for b in self._results(r.body, prefix):
                index = int(str(b["tool_use_id"]).rsplit("_", 1)[1])
                content = b.get("content")
                if isinstance(content, list):
                    content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
                step = script[index]
                key = step if isinstance(step, str) else f"{step[0]} {step[1].get('file_path')}"
                out[key] = f"{'[error] ' if b.get('is_error') else ''}{content}"
        return out

    @staticmethod
    def _message(block: dict[str, Any], stop: str, model: Any) -> dict[str, Any]:
        return {
            "id": "msg_scripted",
            "type": "message",
            "role": "assistant",
            "model": model or "claude-scripted",
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }

    def _stream(self, block: dict[str, Any], stop: str, model: Any) -> bytes:
        start = dict(self._message(block, stop, model), content=[], stop_reason=None)
        if block["type"] == "tool_use":
            opening = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        return b"".join(
            [
                _sse("message_start", {"type": "message_start", "message": start}),
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": opening},
                ),
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                ),
                _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
                _sse(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": 5},
                    },
                ),
                _sse("message_stop", {"type": "message_stop"}),
            ]
        )
