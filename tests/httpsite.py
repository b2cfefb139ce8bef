"""A hand-made site on 127.0.0.1: whatever bytes a test puts at a path, served over HTTP."""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


@dataclass
class Response:
    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    drip: float = 0.0  # seconds between bytes of the body: a slow (or hostile) server


class StaticSite:
    """``site.put("/robots.txt", b"...")``; ``site.origin`` is ``http://127.0.0.1:PORT``."""

    def __init__(self) -> None:
        self.files: dict[str, Response] = {}
        self.requests: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                site.requests.append(path)
                found = site.files.get(path, Response(b"not found\n", 404))
                self.send_response(found.status)
                for name, value in found.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(found.body)))
                self.end_headers()
                if not found.drip:
                    self.wfile.write(found.body)
                    return
                try:
                    for byte in found.body:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(found.drip)
                except OSError:
                    pass  # the client gave up

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def url(self, path: str) -> str:
        return f"{self.origin}{path}"

    def put(
        self, path: str, body: bytes | str, status: int = 200, drip: float = 0.0, **headers: str
    ) -> None:
        """Serve ``body`` at ``path``; ``drip``: sleep that long after each byte."""
        data = body.encode() if isinstance(body, str) else body
        self.files[path] = Response(
            data, status, {k.replace("_", "-"): v for k, v in headers.items()}, drip
        )

    def redirect(self, path: str, to: str, status: int = 302) -> None:
        self.put(path, b"", status, Location=to)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def urlset(*entries: str) -> str:
    """A <urlset>; each entry is the inside of one <url> (e.g. "<loc>...</loc>")."""
    body = "".join(f"<url>{entry}</url>\n" for entry in entries)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}">\n{body}</urlset>\n'
    )


def sitemapindex(*entries: str) -> str:
    body = "".join(f"<sitemap>{entry}</sitemap>\n" for entry in entries)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<sitemapindex xmlns="{SITEMAP_NS}">\n{body}</sitemapindex>\n'
    )


def gz(text: str) -> bytes:
    return gzip.compress(text.encode(), mtime=0)
