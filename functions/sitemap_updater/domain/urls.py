"""URL rules: what may enter a sitemap, and its one canonical spelling.

A URL is *rejected*, never repaired, when it is not absolute http(s) on the site's own
scheme, host and port, is longer than 2,048 characters, or holds whitespace, control
characters, ``<``, ``>``, quotes, a backslash, the replacement character U+FFFD, characters
XML 1.0 forbids or bidirectional controls. What is *normalised*: the scheme and host are
lower-cased, a default port is dropped, an empty path becomes ``/``, percent-escapes are
upper-cased, and every character outside RFC 3986's allowed set (non-ASCII above all) is
percent-encoded as UTF-8.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from sitemap_updater.domain.errors import InvalidEvent

MAX_URL_LENGTH = 2048
MIN_LOC_LENGTH = 12  # the sitemap schema's minimum for <loc>
DEFAULT_PORTS = {"http": 80, "https": 443}

# RFC 3986: unreserved / sub-delims / ":" / "@" are allowed in a path segment; "/" separates
# them; the query may also hold "?". "%" starts an escape and is checked separately.
_PATH_SAFE = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/"
)
_QUERY_SAFE = _PATH_SAFE | {"?"}
_HEX = frozenset("0123456789abcdefABCDEF")
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_FORBIDDEN = {
    "<": "'<'",
    ">": "'>'",
    '"': "a double quote",
    "'": "a single quote",
    "\\": "a backslash",
    # Text that was not valid UTF-8, decoded with replacement: the real URL is lost.
    "\ufffd": "U+FFFD, the replacement character (text that was not valid UTF-8)",
}
_DOT_SEGMENT = re.compile(r"(^|/)(?:\.|%2e){1,2}(/|$)", re.IGNORECASE)  # %2E is "." too
_HOST = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class Site:
    """The site the sitemaps describe: one scheme, host and port (an origin)."""

    scheme: str
    host: str
    port: int | None = None

    @classmethod
    def parse(cls, site_url: str) -> Site:
        """Parse ``https://www.example.com`` (a trailing ``/`` is allowed, nothing more)."""
        parts = urlsplit(site_url.strip())
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            raise ValueError(f"site URL must start with http:// or https://, got {site_url!r}")
        if parts.path not in ("", "/") or parts.query or parts.fragment or "#" in site_url:
            raise ValueError(
                f"site URL must be an origin such as https://www.example.com "
                f"(sitemaps sit at its root), got {site_url!r}"
            )
        if parts.username or parts.password:
            raise ValueError(f"site URL must not hold a user name or password: {site_url!r}")
        try:
            host = _ascii_host(parts.hostname or "", parts.netloc)
        except ValueError as ambiguous:
            raise ValueError(f"site URL {ambiguous}") from None
        if not host:
            raise ValueError(f"site URL has no host: {site_url!r}")
        if not _HOST.fullmatch(host):
            # What urllib lets through (spaces, ';', '%', an IPv6 literal without its
            # brackets) would be written into every <loc>, the index and robots.txt.
            raise ValueError(
                f"site URL host {host!r} is not a DNS name or an IPv4 address: {site_url!r}"
            )
        try:
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"site URL has an invalid port: {site_url!r}") from exc
        if port == DEFAULT_PORTS[scheme]:
            port = None
        site = cls(scheme=scheme, host=host, port=port)
        if len(site.url_for("")) < MIN_LOC_LENGTH:
            raise ValueError(
                f"site URL {site.origin!r} is too short: sitemap <loc> values need "
                f"{MIN_LOC_LENGTH} characters at least"
            )
        return site

    @property
    def origin(self) -> str:
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{self.host}{port}"

    def url_for(self, key: str) -> str:
        """The absolute URL of an object stored under ``key`` at the site root."""
        return f"{self.origin}/{key}"


# Where IDNA 2003 (Python's "idna" codec) and the UTS 46 rules browsers follow give two
# different domains: 'straße.de' is strasse.de to one and xn--strae-oqa.de to the other.
# Capital sharp s too: it lower-cases to ß.
IDNA_DEVIATIONS = "\u00df\u1e9e\u03c2\u200c\u200d"  # ß, ẞ, final sigma, ZWNJ, ZWJ
_IDNA_DEVIATION = re.compile(f"[{IDNA_DEVIATIONS}]")


def _ascii_host(host: str, netloc: str) -> str:
    """Lower-case the host and spell an internationalised name in its ASCII (IDNA) form.

    Raises ValueError for a name holding a character the two IDNA rule sets map to
    different domains: guessing could put another domain's URLs in the sitemap. That is
    looked for in ``netloc`` (the host as written, with its port if any, no user info):
    str.lower(), urllib's ``hostname`` included, writes a capital sigma that ends a word as
    ς, where both rule sets map the capital to a plain small sigma."""
    host = host.lower().rstrip(".")
    if not host.isascii():
        deviation = _IDNA_DEVIATION.search(netloc)
        if deviation is not None:
            written = netloc.partition(":")[0]  # a name that is not ASCII is not [IPv6]
            raise ValueError(
                f"host {written!r} holds U+{ord(deviation.group()):04X}, which browsers and "
                "older IDNA rules map to two different domains: give the host in its "
                "ASCII (xn--) form"
            )
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return ""
    return host


def check_characters(raw: str, field: str = "url") -> None:
    """Reject characters that no URL in a sitemap may hold, with a specific reason."""
    for index, char in enumerate(raw):
        code = ord(char)
        # Controls first (str.isspace() is true for U+001C..U+001F and U+0085 too), bar the
        # ASCII whitespace (tab, newline, ...) that a person would call whitespace.
        if (code < 0x20 and char not in "\t\n\v\f\r") or 0x7F <= code <= 0x9F:
            raise InvalidEvent(
                f"{field}_control_character", f"{field} holds control character U+{code:04X}"
            )
        if char.isspace() or char == "\u200b":
            raise InvalidEvent(f"{field}_whitespace", f"{field} holds whitespace at {index}")
        if char in _FORBIDDEN:
            raise InvalidEvent(f"{field}_forbidden_character", f"{field} holds {_FORBIDDEN[char]}")
        if 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
            raise InvalidEvent(
                f"{field}_xml_illegal_character",
                f"{field} holds U+{code:04X}, which XML 1.0 forbids",
            )
        if char in _BIDI_CONTROLS:
            raise InvalidEvent(
                f"{field}_bidi_control", f"{field} holds bidirectional control U+{code:04X}"
            )


def _encode(text: str, safe: frozenset[str], field: str) -> str:
    out: list[str] = []
    i = 0
    length = len(text)
    while i < length:
        char = text[i]
        if char == "%":
            pair = text[i + 1 : i + 3]
            if len(pair) != 2 or pair[0] not in _HEX or pair[1] not in _HEX:
                raise InvalidEvent(
                    f"{field}_bad_percent_encoding",
                    f"{field} has '%' not followed by two hex digits",
                )
            out.append("%" + pair.upper())
            i += 3
            continue
        if char in safe:
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
        i += 1
    return "".join(out)


def normalise_path_prefix(prefix: str) -> str:
    """A path prefix (of a group rule) spelt as :func:`normalise_url` spells paths, so that
    it can be compared with page URLs: ``/actualités/`` gives ``/actualit%C3%A9s/``.
    Raises ValueError for what no normalised path holds (whitespace, ``?``, ``#``, ...)."""
    if "?" in prefix or "#" in prefix:
        raise ValueError("path holds '?' or '#'")
    try:
        check_characters(prefix, "path")
        return _encode(prefix, _PATH_SAFE, "path")
    except InvalidEvent as exc:
        raise ValueError(exc.detail) from None


def normalise_url(raw: str, site: Site, field: str = "url", same_site: bool = True) -> str:
    """Return the canonical form of ``raw`` or raise :class:`InvalidEvent` saying why not.

    With ``same_site=False`` (image and video URLs may live on a CDN) only the scheme,
    characters and length rules apply.
    """
    check_characters(raw, field)
    if "#" in raw:
        raise InvalidEvent(f"{field}_fragment", f"{field} has a #fragment; list the page itself")
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise InvalidEvent(f"{field}_malformed", f"{field} cannot be parsed: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        if not scheme or not raw.lower().startswith(f"{scheme}:"):
            raise InvalidEvent(f"{field}_not_absolute", f"{field} is not an absolute http(s) URL")
        raise InvalidEvent(f"{field}_not_http", f"{field} scheme {scheme!r} is not http or https")
    if not parts.netloc or not raw[len(scheme) + 1 :].startswith("//"):
        raise InvalidEvent(f"{field}_not_absolute", f"{field} is not an absolute http(s) URL")
    if "@" in parts.netloc:
        raise InvalidEvent(f"{field}_userinfo", f"{field} holds a user name or password")
    try:
        host = _ascii_host(parts.hostname or "", parts.netloc)
    except ValueError as ambiguous:
        raise InvalidEvent(f"{field}_malformed", f"{field} {ambiguous}") from None
    if not host:
        raise InvalidEvent(f"{field}_malformed", f"{field} has no host")
    if port == DEFAULT_PORTS[scheme]:
        port = None
    if same_site:
        if scheme != site.scheme:
            raise InvalidEvent(
                f"{field}_wrong_scheme", f"{field} scheme {scheme} is not the site's {site.scheme}"
            )
        if host != site.host:
            raise InvalidEvent(
                f"{field}_foreign_host", f"{field} host {host} is not the site's host {site.host}"
            )
        if port != site.port:
            raise InvalidEvent(
                f"{field}_foreign_port",
                f"{field} port {port or DEFAULT_PORTS[scheme]} is not the site's port "
                f"{site.port or DEFAULT_PORTS[scheme]}",
            )
    elif not _HOST.match(host):
        raise InvalidEvent(f"{field}_malformed", f"{field} host {host!r} is not a DNS name")
    path = parts.path or "/"
    if _DOT_SEGMENT.search(path):
        raise InvalidEvent(f"{field}_dot_segment", f"{field} path holds a '.' or '..' segment")
    authority = f"{host}:{port}" if port is not None else host
    url = f"{scheme}://{authority}{_encode(path, _PATH_SAFE, field)}"
    if parts.query:
        url += "?" + _encode(parts.query, _QUERY_SAFE, field)
    if len(url) > MAX_URL_LENGTH:
        raise InvalidEvent(
            f"{field}_too_long", f"{field} is {len(url)} characters, over {MAX_URL_LENGTH}"
        )
    return url
