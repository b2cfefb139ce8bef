"""robots.txt belongs to the site's owner: we keep only our own ``Sitemap:`` lines right,
by pure byte editing.

* A line is read as Google's parser (the RFC 9309 reference) reads it: before ``#`` (and
  after a BOM on the first line), its key is what precedes the first ``:``, or, with no
  ``:``, the first of exactly two words; it is a Sitemap directive when the key, stripped,
  starts with ``sitemap`` or ``site-map`` in any case. Its value is the rest, stripped of
  ASCII whitespace: a value with trailing words names another URL, so such a line is the
  owner's.
* It is *ours* when its value, resolved against the site, is on the site's host and port
  (either scheme: a wrong one is corrected), with no query or fragment, and its path is
  exactly ``/sitemap.xml`` or ``/sitemap-index-N.xml``. Nothing else is ever touched.
* The first own line for each wanted URL is rewritten in place (its line ending kept);
  stale or repeated own lines are dropped; missing URLs are appended in the file's newline
  style, after a blank line unless the last line is blank or a Sitemap line. An own line
  sharing the first line with a BOM is cut to the BOM (parsers that keep the BOM, such as
  ``RobotFileParser``, would miss it) and its URL written elsewhere.
* Every other byte is kept (invalid UTF-8, NUL, CR/LF mixes; a CR is added where dropping a
  line would join a CR and an LF into one CRLF); we never write ``Host:``. Unchanged input
  returns the very ``current`` object, so the caller skips the write.

The caller enforces :func:`grows_too_large` (and writes conditionally).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urljoin, urlsplit

from sitemap_updater.domain.urls import DEFAULT_PORTS, Site

MAX_ROBOTS_BYTES = 512_000  # Google reads at most 500 KiB

_BOM = b"\xef\xbb\xbf"
_SPACE = b" \t\x0b\x0c"
_OWN_PATH = re.compile(r"/sitemap(?:-index-[0-9]+)?\.xml")


def grows_too_large(before: bytes | None, after: bytes) -> bool:
    """Whether ``after`` may not replace ``before``: over MAX_ROBOTS_BYTES and larger (an
    owner's file already over the limit still loses the lines of index files that go)."""
    return len(after) > MAX_ROBOTS_BYTES and len(after) > len(before or b"")


def default_robots(sitemap_urls: Sequence[str]) -> bytes:
    """The robots.txt we create when the site has none: allow all, list our sitemaps."""
    body = b"User-agent: *\nDisallow:\n"
    if sitemap_urls:
        body += b"\n" + b"".join(_line(url, b"\n") for url in sitemap_urls)
    return body


def with_sitemaps(current: bytes | None, sitemap_urls: Sequence[str], site: Site) -> bytes:
    """``current`` (None: the site has none) with our Sitemap lines set to ``sitemap_urls``.
    Those must be our index URLs (ValueError otherwise): one we would not recognise as ours
    in the file would be appended again on every run."""
    if current is None:
        return default_robots(sitemap_urls) if sitemap_urls else b""
    wanted: dict[str, str] = {}  # own path -> the URL to write
    for url in sitemap_urls:
        path = own_path(url, site) if url.isascii() and "://" in url else None
        if path is None:
            raise ValueError(f"not a sitemap index URL of {site.origin}: {url!r}")
        wanted.setdefault(path, url)

    lines = current.splitlines(keepends=True)
    out: list[bytes] = []
    for number, line in enumerate(lines):
        bom = _BOM if number == 0 and line.startswith(_BOM) else b""
        value = sitemap_value(line[len(bom) :])
        path = own_path(value, site) if value is not None else None
        if path is None:
            if out and out[-1].endswith(b"\r") and line.startswith(b"\n"):
                out.append(b"\r")  # after a dropped line: keep "\r" + "\n" two line ends
            out.append(line)
        elif bom:
            out.append(bom + _ending(line))
        elif path in wanted:
            out.append(_line(wanted.pop(path), _ending(line)))
        # else: stale or repeated, dropped

    if wanted:
        newline = next((_ending(line) for line in lines if _ending(line)), b"\n")
        if out and not _ending(out[-1]):
            out[-1] += newline
        if out and not _is_blank(out[-1], len(out) == 1) and sitemap_value(out[-1]) is None:
            # A lone "\n" after a final "\r" would merge into "\r\n" and be no blank line.
            out.append(b"\r" if out[-1].endswith(b"\r") and newline == b"\n" else newline)
        out.extend(_line(url, newline) for url in wanted.values())
    result = b"".join(out)
    return current if result == current else result


def _line(url: str, ending: bytes) -> bytes:
    return b"Sitemap: " + url.encode("ascii") + ending


def _ending(line: bytes) -> bytes:
    if line.endswith(b"\r\n"):
        return b"\r\n"
    return line[-1:] if line.endswith((b"\n", b"\r")) else b""


def _is_blank(line: bytes, first: bool) -> bool:
    return not (line.removeprefix(_BOM) if first else line).strip()


def sitemap_value(line: bytes) -> str | None:
    """The value of a Sitemap directive (``""`` when it has none), or None for other lines."""
    text = line.split(b"#", 1)[0].strip(_SPACE + b"\r\n")
    key, colon, value = text.partition(b":")
    if not colon:  # Google accepts a forgotten colon between exactly two words
        words = text.split()
        if len(words) != 2:
            return None
        key, value = words
    if not key.strip(_SPACE).lower().startswith((b"sitemap", b"site-map")):
        return None
    return value.strip().decode("utf-8", "replace")


def own_path(value: str, site: Site) -> str | None:
    """The path of the index file of ours a ``Sitemap:`` value names (see the module rules)."""
    if not value or "?" in value or "#" in value or not value.isprintable() or " " in value:
        return None
    try:
        parts = urlsplit(urljoin(f"{site.origin}/", value))
        if parts.scheme not in DEFAULT_PORTS:
            return None
        other = Site.parse(f"{parts.scheme}://{parts.netloc}")
    except ValueError:
        return None
    if (other.host, other.port) != (site.host, site.port) or not _OWN_PATH.fullmatch(parts.path):
        return None
    return parts.path
