"""An IndexNow endpoint on 127.0.0.1 that records every request and answers as scripted."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON (None when it was not JSON)

    @property
    def urls(self) -> list[str]:
        return list(self.body["urlList"])


class RecordingEndpoint:
    """``endpoint.url`` goes in INDEXNOW_ENDPOINT. ``answer(503, 503)`` scripts the next
    answers; after them, ``default`` (200)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.script: list[int] = []
        self.default = 200
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with endpoint._lock:
                    endpoint.requests.append(
                        Recorded("POST", self.path, dict(self.headers.items()), body)
                    )
                    status = endpoint.script.pop(0) if endpoint.script else endpoint.default
                reply = f'{{"status": {status}}}'.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/indexnow"

    def answer(self, *statuses: int, default: int = 200) -> None:
        with self._lock:
            self.script = list(statuses)
            self.default = default

    def submitted(self) -> list[str]:
        """Every URL of every request, in order (a URL twice if it was sent twice)."""
        return [url for request in self.requests for url in request.urls]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
