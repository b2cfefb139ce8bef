"""The bucket at the site root over HTTP, as CloudFront serves it (stored Content-Type,
Cache-Control and ETag; 304 for ``If-None-Match``; 404 for anything else), and with
connectors ``POST /hooks/<name>``, as the deployed function URL answers it."""

from __future__ import annotations

import json
import threading
import time
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from botocore.exceptions import ClientError

from sitemap_updater.connectors import request

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from sitemap_updater.usecases.webhook import ReceiveWebhook


class SiteHandler(BaseHTTPRequestHandler):
    server_version = "sitemap-updater-local"
    server: SiteServer

    def do_POST(self) -> None:
        """A webhook, as the function URL answers it (405 for another method on /hooks/)."""
        webhook = self.server.webhook
        if webhook is None:  # as http.server answers a method it has no handler for
            self.send_error(HTTPStatus.NOT_IMPLEMENTED, f"Unsupported method ({self.command!r})")
            return
        length = self.headers.get("Content-Length", "")
        if self.command != "POST":
            length = "0"  # refused for its method, unread
        # Chunked or none: the size would be known only once read. (isdigit() takes "²".)
        if not (length.isascii() and length.isdigit()):
            self._send(HTTPStatus.LENGTH_REQUIRED, {}, b"")
            return
        answer = webhook.too_large(int(length))
        if answer is None:
            body = self.rfile.read(int(length))
            received = request(self.command, self.path, self.headers.items(), body, time.time())
            answer = webhook(received, uuid.uuid4().hex)
        json_type = {"Content-Type": "application/json"}
        self._send(HTTPStatus(answer.status), json_type, json.dumps(answer.body).encode())

    do_PUT = do_DELETE = do_PATCH = do_POST

    def do_GET(self) -> None:
        if self.server.webhook is not None and self.path.startswith("/hooks/"):
            self.do_POST()
            return
        response = self._object(unquote(urlsplit(self.path).path).lstrip("/"))
        if response is None:
            plain = {"Content-Type": "text/plain; charset=utf-8"}
            self._send(HTTPStatus.NOT_FOUND, plain, b"not found\n")
        elif self.headers.get("If-None-Match") == response["ETag"]:
            self._send(HTTPStatus.NOT_MODIFIED, {"ETag": response["ETag"]})
        else:
            modified = response.get("LastModified")
            headers = {
                "Content-Type": response.get("ContentType", "application/octet-stream"),
                "ETag": response["ETag"],
                "Cache-Control": response.get("CacheControl"),
                "Last-Modified": modified and modified.strftime("%a, %d %b %Y %H:%M:%S GMT"),
            }
            self._send(HTTPStatus.OK, headers, response["Body"].read())

    do_HEAD = do_GET  # the same headers; _send leaves the body out

    def _object(self, key: str) -> Any:
        if not key:
            return None
        try:
            return self.server.s3.get_object(Bucket=self.server.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"NoSuchKey", "404"}:
                return None
            raise

    def _send(self, status: HTTPStatus, headers: dict[str, Any], body: bytes | None = None) -> None:
        """Headers without a value are left out; a body is announced by its length."""
        self.send_response(status)
        if body is not None:
            headers["Content-Length"] = str(len(body))
        for name, value in headers.items():
            if value:
                self.send_header(name, value)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the CLI prints its own summary."""


class SiteServer(ThreadingHTTPServer):
    def __init__(
        self, s3: S3Client, bucket: str, port: int = 0, webhook: ReceiveWebhook | None = None
    ):
        super().__init__(("127.0.0.1", port), SiteHandler)
        self.s3, self.bucket, self.webhook = s3, bucket, webhook

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> SiteServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
