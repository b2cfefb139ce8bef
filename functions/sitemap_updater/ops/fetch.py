"""Fetch one document as a crawler would (stdlib only): http(s) only, redirects too (never
``file:///etc/passwd``), with ``same_origin`` never off the origin asked; one deadline for
connecting, redirects, headers and body, set on every socket read (a server dripping a byte
a second times out); at most 50 MiB, after decompression too (a gzip bomb stops);
every member of a gzipped body undone, as ``zcat`` does."""

from __future__ import annotations

import http.client
import io
import socket
import threading
import time
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sitemap_updater.domain.sharding import PROTOCOL_MAX_BYTES
from sitemap_updater.domain.urls import DEFAULT_PORTS

USER_AGENT = "sitemap-updater (+https://github.com/sitemap-updater/sitemap-updater)"
GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Fetched:
    url: str  # as asked for
    final_url: str  # after redirects
    status: int | None  # None when there was no HTTP answer
    body: bytes = b""  # decompressed; cut at the limit when too_large
    too_large: bool = False
    error: str | None = None
    gzipped: bool = False  # the body came gzipped (the file, or Content-Encoding)

    def problem(self) -> str | None:
        """Why this fetch gave no usable document, for people (None when it did)."""
        if self.error is not None:
            return self.error
        return None if self.status == 200 else f"HTTP {self.status}"


def url_origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an absolute http(s) URL, default ports filled in."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower().rstrip("."), port or DEFAULT_PORTS[scheme]


class _OffOrigin(Exception):
    """(the URL redirected to, the redirect's status)"""


# urllib follows redirects on the thread that asked: one deadline covers them all, and each
# is checked against the origin first asked.
_current = threading.local()


class _Redirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(  # noqa: PLR0917 - urllib's signature
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> Any:
        if urlsplit(newurl).scheme.lower() not in DEFAULT_PORTS:
            raise urllib.error.HTTPError(newurl, code, f"redirect to {newurl!r}", headers, fp)
        stay_on = getattr(_current, "origin", None)
        if stay_on is not None and url_origin(newurl) != stay_on:
            fp.close()
            raise _OffOrigin(newurl, code)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _time_left() -> float:
    left: float = _current.deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("timed out")
    return left


class _DeadlineReader(io.RawIOBase):
    """The socket's reader, with its timeout set to the time left before each read."""

    def __init__(self, sock: socket.socket, raw: io.RawIOBase):
        super().__init__()
        self._sock, self._raw = sock, raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(_time_left())
        return self._raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()  # lets the socket close once the connection is done with it
        super().close()


class _Response(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any):
        super().__init__(sock, *args, **kwargs)
        self.fp = io.BufferedReader(_DeadlineReader(sock, self.fp.detach()))  # nothing read yet


class _HTTPConnection(http.client.HTTPConnection):
    response_class = _Response


class _HTTPSConnection(http.client.HTTPSConnection):
    response_class = _Response


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        req.timeout = _time_left()  # connecting (a redirect's too) waits no longer
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        req.timeout = _time_left()  # the TLS handshake's reads too
        return self.do_open(_HTTPSConnection, req)  # the default context, as urllib's


_OPENER = urllib.request.build_opener(_Redirects(), _HTTPHandler(), _HTTPSHandler())


def gunzip(data: bytes, max_bytes: int, complete: bool = True) -> tuple[bytes, bool]:
    """Every member of gzip ``data``, up to ``max_bytes``; (bytes, True) when there was more.
    ``complete=False``: ``data`` was itself cut short, so a missing end is no error."""
    out = bytearray()
    rest = data
    while True:
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        out += inflater.decompress(rest, max_bytes + 1 - len(out))
        if len(out) > max_bytes:
            return bytes(out[:max_bytes]), True
        if not inflater.eof:
            if complete:
                raise zlib.error("truncated gzip data")
            return bytes(out), True
        rest = inflater.unused_data.lstrip(b"\x00")
        if not rest:
            return bytes(out), not complete


def _read(response: http.client.HTTPResponse, limit: int) -> bytes:
    body = bytearray()
    while len(body) < limit and (chunk := response.read(min(_CHUNK, limit - len(body)))):
        body += chunk
    return bytes(body)


def fetch(url: str, *, timeout: float = 30.0, same_origin: bool = False) -> Fetched:
    """GET ``url``; never raises for network or HTTP faults (see ``Fetched.error``)."""
    if urlsplit(url).scheme.lower() not in DEFAULT_PORTS:
        return Fetched(url, url, None, error=f"not an http(s) URL: {url!r}")
    request = urllib.request.Request(  # noqa: S310 - the scheme is checked above
        url, headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"}
    )
    _current.deadline = time.monotonic() + timeout
    _current.origin = url_origin(url) if same_origin else None
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            status, final_url = response.status, response.geturl()
            encoding = (response.headers.get("Content-Encoding") or "").lower()
            raw = _read(response, PROTOCOL_MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        final = exc.geturl() or url
        if 300 <= exc.code < 400:  # a loop (urllib's words), or a redirect to another scheme
            why = str(exc.msg).split("\n", 1)[0]
            return Fetched(url, final, exc.code, error=f"HTTP {exc.code}: {why}")
        return Fetched(url, final, exc.code)
    except _OffOrigin as exc:
        final_url, status = exc.args
        error = f"redirected to {final_url}, on another origin; not followed"
        return Fetched(url, final_url, status, error=error)
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, socket.timeout | TimeoutError):
            reason = f"timed out after {timeout:g} s"
        return Fetched(url, url, None, error=f"cannot fetch: {reason}")
    finally:
        _current.deadline = _current.origin = None
    too_large = len(raw) > PROTOCOL_MAX_BYTES
    raw = raw[:PROTOCOL_MAX_BYTES]
    gzipped = encoding in ("gzip", "x-gzip")
    try:
        if gzipped:
            raw, too_large = gunzip(raw, PROTOCOL_MAX_BYTES, complete=not too_large)
        if raw.startswith(GZIP_MAGIC):
            gzipped = True
            raw, too_large = gunzip(raw, PROTOCOL_MAX_BYTES, complete=not too_large)
    except zlib.error as exc:
        return Fetched(url, final_url, status, error=f"bad gzip data: {exc}")
    return Fetched(url, final_url, status, raw, too_large=too_large, gzipped=gzipped)
