"""A loopback HTTP server imitating AgentMemory's livez/health (and the slot read)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class MemoryServerState:
    livez_status: int = 200
    livez_body: Any = field(
        default_factory=lambda: {
            "status": "ok",
            "service": "agentmemory",
            "viewerPort": 3113,
            "viewerSkipped": False,
            "streamsPort": 3112,
        }
    )
    health_status: int = 200
    health_body: Any = field(
        default_factory=lambda: {
            "status": "healthy",
            "service": "agentmemory",
            "version": "0.9.29",
            "health": {"status": "healthy"},
            "viewerPort": 3113,
            "viewerSkipped": False,
            "streamsPort": 3112,
        }
    )
    secret: str | None = None
    slots_enabled: bool = True
    slots: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # answer every request with these bytes (garbage)
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    delay: float = 0.0  # seconds to wait before every answer (benchmarks)


class MemoryServer:
    def __init__(self, port: int = 0) -> None:
        self.state = MemoryServerState()
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                auth = self.headers.get("Authorization")
                state.requests.append((self.path, auth))
                if state.delay:
                    time.sleep(state.delay)
                if state.raw is not None:
                    self._send(200, state.raw)
                    return
                if self.path == "/agentmemory/livez":
                    self._send(state.livez_status, state.livez_body)
                    return
                if state.secret and auth != f"Bearer {state.secret}":
                    self._send(401, {"error": "unauthorized"})
                    return
                if self.path == "/agentmemory/health":
                    self._send(state.health_status, state.health_body)
                elif self.path.startswith("/agentmemory/slots"):
                    if not state.slots_enabled:
                        self._send(503, {"error": "Memory slots not enabled"})
                    else:
                        self._send(200, {"slots": [{"label": k} for k in state.slots]})
                elif self.path.startswith("/agentmemory/slot"):
                    if not state.slots_enabled:
                        self._send(503, {"error": "Memory slots not enabled"})
                        return
                    label = self.path.split("label=", 1)[-1]
                    if label in state.slots:
                        self._send(200, {"slot": {"label": label, "content": state.slots[label]}})
                    else:
                        self._send(404, {"success": False, "error": "slot not found"})
                else:
                    self._send(404, {"error": "not found"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> MemoryServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv: list[str]) -> None:
    """Serve on `--port N` until killed, slots on only with AGENTMEMORY_SLOTS=true: a stand-in
    for `npx -y @agentmemory/agentmemory` (tests of `plan-build setup`)."""
    import os

    port = int(argv[argv.index("--port") + 1]) if "--port" in argv else 3111
    server = MemoryServer(port)
    server.state.slots_enabled = os.environ.get("AGENTMEMORY_SLOTS") == "true"
    print(f"agentmemory stand-in on {server.url}", flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
