"""URL rules: what may enter a sitemap, and its one canonical spelling (the table of what is
kept, normalised and refused: docs/EVENTS.md#urls-kept-normalised-refused). A URL is normalised
only where two spellings name one resource; it is refused, with a reason, where it cannot be
listed: not absolute http(s), off the site, too long, or holding what no browser sends as it is."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from sitemap_updater.domain.errors import InvalidEvent

MAX_URL_LENGTH = 2048
MAX_HOST_LENGTH = 253
MIN_LOC_LENGTH = 12  # the sitemap schema's minimum for <loc>
DEFAULT_PORTS = {"http": 80, "https": 443}

# RFC 3986 pchar (unreserved, sub-delims, ":" and "@") and "/"; a query may also hold "?".
_PCHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/"
_PCHAR = re.escape(_PCHARS)  # in a character class
# One rule for every host (the site's, a page's, a CDN's): what DNS can resolve and browsers
# request. Labels of letters, digits, '-' and '_' (CDN names hold it), 1 to 63 characters,
# not starting or ending with '-'; at most 253 characters in all (checked apart).
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
HOST = re.compile(rf"{_LABEL}(?:\.{_LABEL})*", re.ASCII)

# What no URL may hold, by reason. Controls come before whitespace (U+0085 and U+001C-U+001F
# are both); the order of this table is the order reasons are given in.
_REFUSED_CHARACTERS = (
    ("control_character", "\x00-\x08\x0e-\x1f\x7f-\x9f"),
    ("whitespace", "\t\n\v\f\r \xa0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000"),
    ("forbidden_character", '<>"\\\\\ufffd'),
    ("xml_illegal_character", "\ud800-\udfff\ufffe\uffff"),
    ("bidi_control", "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"),
)
_REFUSED = re.compile("[" + "".join(chars for _, chars in _REFUSED_CHARACTERS) + "]")
_FORBIDDEN_NAMES = {  # '<' and '>' are named by their repr
    '"': "a double quote",
    "\\": "a backslash",
    "\ufffd": "U+FFFD, the replacement character (text that was not valid UTF-8)",
}
_SPLIT = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?", re.S)
_DOT_SEGMENT = re.compile(r"(?:^|/)(?:\.|%2e){1,2}(?:/|$)", re.IGNORECASE)  # %2E is "." too
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_LOWER_ESCAPE = re.compile(r"%(?:[a-f][0-9A-Fa-f]|[0-9A-F][a-f])")
_ANY_ORIGIN = re.compile(rf"https?://(?=[a-z0-9_.-]{{1,{MAX_HOST_LENGTH}}}/){HOST.pattern}/")
# Bytes a URL holds as it is, as themselves; any other as 0.
_KEPT = bytes(byte if chr(byte) in f"{_PCHARS}%?" else 0 for byte in range(256))
_ESCAPE_TO_CHECK = re.compile(r"%(?![0-9A-F]{2})|%2E")  # bad, lower-case, or a dot
_UNSAFE_IN_PATH = re.compile(rf"[^{_PCHAR}%]+")
_UNSAFE_IN_QUERY = re.compile(rf"[^{_PCHAR}%?]+")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# Where IDNA 2003 (Python's "idna" codec) and the UTS 46 rules browsers follow give two
# domains: 'straße.de' is strasse.de to one and xn--strae-oqa.de to the other.
_IDNA_DEVIATION = "[\u00df\u1e9e\u03c2\u200c\u200d]"  # ß, ẞ, ς, ZWNJ, ZWJ (compiled if met)


@dataclass(frozen=True)
class Site:
    """The site the sitemaps describe: one scheme, host and port (an origin)."""

    scheme: str
    host: str
    port: int | None = None

    @classmethod
    def parse(cls, site_url: str) -> Site:
        """Parse ``https://www.example.com`` (a trailing ``/`` is allowed, nothing more)."""
        text = site_url.strip()
        parts = _SPLIT.fullmatch(text)
        if not text.lower().startswith(("http://", "https://")):
            raise ValueError(f"site URL must start with http:// or https://, got {site_url!r}")
        if (
            parts is None
            or parts[2] is None
            or parts[3] not in ("", "/")
            or parts[4] is not None
            or "#" in text
        ):
            raise ValueError(
                f"site URL must be an origin such as https://www.example.com "
                f"(sitemaps sit at its root), got {site_url!r}"
            )
        try:
            scheme, host, port = _authority(parts[1].lower(), parts[2], "site URL")
        except InvalidEvent as exc:
            raise ValueError(f"{exc.detail}: {site_url!r}") from None
        site = cls(scheme=scheme, host=host, port=port)
        if len(site.url_for("")) < MIN_LOC_LENGTH:
            raise ValueError(
                f"site URL {site.origin!r} is too short: sitemap <loc> values need "
                f"{MIN_LOC_LENGTH} characters at least"
            )
        return site

    @cached_property
    def origin(self) -> str:
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{self.host}{port}"

    @cached_property
    def prefix(self) -> str:
        return f"{self.origin}/"

    def url_for(self, key: str) -> str:
        return f"{self.origin}/{key}"


def check_characters(raw: str, field: str = "url") -> None:
    """Refuse characters no URL in a sitemap may hold, with a specific reason."""
    found = _REFUSED.search(raw)
    if found is None:
        return
    char = found.group()
    code = next(code for code, chars in _REFUSED_CHARACTERS if re.match(f"[{chars}]", char))
    what = {
        "whitespace": f"whitespace at {found.start()}",
        "forbidden_character": _FORBIDDEN_NAMES.get(char, repr(char)),
        "xml_illegal_character": f"U+{ord(char):04X}, which XML 1.0 forbids",
        "bidi_control": f"bidirectional control U+{ord(char):04X}",
    }.get(code, f"control character U+{ord(char):04X}")
    raise InvalidEvent(f"{field}_{code}", f"{field} holds {what}")


def _percent_encoded(run: re.Match[str]) -> str:
    return "%" + run.group().encode("utf-8").hex("%").upper()


def _encode(text: str, unsafe: re.Pattern[str], field: str) -> str:
    """``text`` with unsafe characters percent-encoded and escapes upper-cased."""
    if _BAD_ESCAPE.search(text):
        raise InvalidEvent(
            f"{field}_bad_percent_encoding", f"{field} has '%' not followed by two hex digits"
        )
    text = unsafe.sub(_percent_encoded, text)
    return _LOWER_ESCAPE.sub(lambda escape: escape.group().upper(), text)


def _host(written: str, field: str) -> str:
    """The host in its lower-case ASCII spelling, or InvalidEvent (``{field}_malformed``)."""
    host = written.lower().removesuffix(".")  # one: "a.example.." has an empty label
    if not host.isascii():
        deviation = re.search(_IDNA_DEVIATION, written)
        if deviation is not None:
            raise InvalidEvent(
                f"{field}_malformed",
                f"{field} host {written!r} holds U+{ord(deviation.group()):04X}, which "
                "browsers and older IDNA rules map to two different domains: give the host in "
                "its ASCII (xn--) form",
            )
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            host = ""
    if not host:
        raise InvalidEvent(f"{field}_malformed", f"{field} has no host")
    if len(host) > MAX_HOST_LENGTH or not HOST.fullmatch(host):
        raise InvalidEvent(
            f"{field}_malformed", f"{field} host {host!r} is not a DNS name or IPv4 address"
        )
    return host


def _authority(scheme: str, authority: str, field: str) -> tuple[str, str, int | None]:
    """(scheme, host, port or None for the default) of an authority, or InvalidEvent."""
    if "@" in authority:
        raise InvalidEvent(f"{field}_userinfo", f"{field} holds a user name or password")
    written, _, port_text = authority.rpartition(":") if ":" in authority else (authority, "", "")
    digits = port_text.isascii() and port_text.isdigit()
    if "[" in authority or ":" in written or not (digits or port_text == ""):
        raise InvalidEvent(f"{field}_malformed", f"{field} has no valid host and port")
    port = int(port_text) if port_text else None
    if port is not None and not 0 < port <= 65535:
        raise InvalidEvent(f"{field}_malformed", f"{field} port {port} is out of range")
    host = _host(written, field)
    return scheme, host, None if port == DEFAULT_PORTS[scheme] else port


def _check_site(scheme: str, host: str, port: int | None, site: Site, field: str) -> None:
    if scheme != site.scheme:
        raise InvalidEvent(
            f"{field}_wrong_scheme", f"{field} scheme {scheme} is not the site's {site.scheme}"
        )
    if host != site.host:
        raise InvalidEvent(
            f"{field}_foreign_host", f"{field} host {host} is not the site's host {site.host}"
        )
    if port != site.port:
        default = DEFAULT_PORTS[scheme]
        raise InvalidEvent(
            f"{field}_foreign_port",
            f"{field} port {port or default} is not the site's port {site.port or default}",
        )


def normalise_url(raw: str, site: Site, field: str = "url", same_site: bool = True) -> str:
    """The canonical spelling of ``raw``, or :class:`InvalidEvent` saying why there is none
    (``same_site=False``, for images and videos: any host, every other rule still held)."""
    # The quick path: a URL that is already canonical (once its non-ASCII characters are
    # percent-encoded) is returned as it is; any other goes through the rules, which decide.
    url = raw
    if not raw.isascii() and _REFUSED.search(raw) is None:
        url = _NON_ASCII.sub(_percent_encoded, raw)
    if (
        url.isascii()
        and 0 < len(url) <= MAX_URL_LENGTH
        and url[-1] != "?"
        and "/." not in url
        and 0 not in url.encode().translate(_KEPT)
        and ("%" not in url or not _ESCAPE_TO_CHECK.search(url))
        and (url.startswith(site.prefix) if same_site else _ANY_ORIGIN.match(url))
    ):
        return url
    check_characters(raw, field)
    if "#" in raw:
        raise InvalidEvent(f"{field}_fragment", f"{field} has a #fragment; list the page itself")
    parts = _SPLIT.fullmatch(raw)
    if parts is None:
        raise InvalidEvent(f"{field}_not_absolute", f"{field} is not an absolute http(s) URL")
    scheme, authority, path, query = parts.groups()
    scheme = scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise InvalidEvent(f"{field}_not_http", f"{field} scheme {scheme!r} is not http or https")
    if not authority:
        raise InvalidEvent(f"{field}_not_absolute", f"{field} is not an absolute http(s) URL")
    scheme, host, port = _authority(scheme, authority, field)
    if same_site:
        _check_site(scheme, host, port, site, field)
    if _DOT_SEGMENT.search(path):
        raise InvalidEvent(f"{field}_dot_segment", f"{field} path holds a '.' or '..' segment")
    url = f"{scheme}://{host}{f':{port}' if port else ''}"
    url += _encode(path or "/", _UNSAFE_IN_PATH, field)
    if query:
        url += "?" + _encode(query, _UNSAFE_IN_QUERY, field)
    if len(url) > MAX_URL_LENGTH:
        raise InvalidEvent(
            f"{field}_too_long", f"{field} is {len(url)} characters, over {MAX_URL_LENGTH}"
        )
    return url


def normalise_path_prefix(prefix: str) -> str:
    """A path prefix (of a group rule) spelt as :func:`normalise_url` spells paths, so that
    it can be compared with page URLs: ``/actualités/`` gives ``/actualit%C3%A9s/``.
    Raises ValueError for what no normalised path holds (whitespace, ``?``, ``#``, ...)."""
    if "?" in prefix or "#" in prefix:
        raise ValueError("path holds '?' or '#'")
    try:
        check_characters(prefix, "path")
        return _encode(prefix, _UNSAFE_IN_PATH, "path")
    except InvalidEvent as exc:
        raise ValueError(exc.detail) from None
