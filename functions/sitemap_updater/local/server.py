"""Serve the bucket at the site root over HTTP, the way CloudFront serves it.

``GET /robots.txt``, ``/sitemap.xml`` and ``/sitemap-pages-00001.xml.gz`` return the
objects with their stored Content-Type, Cache-Control and ETag; ``If-None-Match`` gets a
304; anything else is a 404. Only GET and HEAD are allowed.
"""

from __future__ import annotations

import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


def make_handler(s3: S3Client, bucket: str) -> type[BaseHTTPRequestHandler]:
    class SiteHandler(BaseHTTPRequestHandler):
        server_version = "sitemap-updater-local"

        def do_GET(self) -> None:
            self._serve(with_body=True)

        def do_HEAD(self) -> None:
            self._serve(with_body=False)

        def _serve(self, with_body: bool) -> None:
            key = unquote(urlsplit(self.path).path).lstrip("/")
            if not key:
                self._plain(HTTPStatus.NOT_FOUND, b"not found\n", with_body)
                return
            try:
                response: Any = s3.get_object(Bucket=bucket, Key=key)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code in {"NoSuchKey", "404"}:
                    self._plain(HTTPStatus.NOT_FOUND, b"not found\n", with_body)
                    return
                raise
            etag = response["ETag"]
            if self.headers.get("If-None-Match") == etag:
                self.send_response(HTTPStatus.NOT_MODIFIED)
                self.send_header("ETag", etag)
                self.end_headers()
                return
            body = response["Body"].read()
            self.send_response(HTTPStatus.OK)
            self.send_header(
                "Content-Type", response.get("ContentType", "application/octet-stream")
            )
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", etag)
            if response.get("CacheControl"):
                self.send_header("Cache-Control", response["CacheControl"])
            if response.get("LastModified"):
                self.send_header(
                    "Last-Modified", response["LastModified"].strftime("%a, %d %b %Y %H:%M:%S GMT")
                )
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def _plain(self, status: HTTPStatus, body: bytes, with_body: bool) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the CLI prints its own summary."""

    return SiteHandler


class SiteServer:
    def __init__(self, s3: S3Client, bucket: str, port: int = 0, host: str = "127.0.0.1"):
        self._server = ThreadingHTTPServer((host, port), make_handler(s3, bucket))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> SiteServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
