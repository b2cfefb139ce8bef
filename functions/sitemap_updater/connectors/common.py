"""What every connector shares: the request and the verdict on it, the signature schemes, strict
JSON, and the events a mapping produces. Pure: no AWS, no network, no clock (``now`` is given).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from sitemap_updater.connectors.config import Connector, ContentType
from sitemap_updater.domain.contract import exact_json, fitted_text
from sitemap_updater.domain.dates import time_version, version, w3c
from sitemap_updater.domain.errors import cut
from sitemap_updater.domain.feed import MAX_TITLE

# Why a request is refused (an HTTP 401 at the endpoint).
MISSING_SIGNATURE = "missing_signature"
MALFORMED_SIGNATURE = "malformed_signature"
WRONG_SIGNATURE = "wrong_signature"
STALE_TIMESTAMP = "stale_timestamp"
UNKNOWN_KEY = "unknown_key"  # no secret to check with, or a scheme version we do not know
WRONG_SOURCE = "wrong_source"  # an EventBridge event from another source

# Why a verified payload gives no event (sent to the ingest dead-letter queue with the code).
MALFORMED_JSON = "malformed_json"
UNMAPPABLE_PAYLOAD = "unmappable_payload"
MISSING_SLUG = "missing_slug"
MISSING_VERSION = "missing_version"

_DIGITS = re.compile(r"[0-9]{1,20}", re.ASCII)
_PATH_KEPT = "/%!$&'()*+,;=:@"  # with the unreserved, which quote() always keeps
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")  # a "%" that begins no escape


@dataclass(frozen=True)
class Request:
    """One webhook request as it arrived. Build it with :func:`request`."""

    method: str
    path: str  # as the CMS requested it, query included
    headers: Mapping[str, str]  # names in lower case
    body: bytes  # the raw bytes: every signature is over them
    now: float  # the receiver's clock, Unix seconds


def request(
    method: str,
    path: str,
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    body: bytes,
    now: float,
) -> Request:
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return Request(method.upper(), path, {name.lower(): value for name, value in pairs}, body, now)


@dataclass(frozen=True)
class Verdict:
    """Accepted (``reason`` is None) or refused, with the reason."""

    reason: str | None = None

    @property
    def accepted(self) -> bool:
        return self.reason is None


ACCEPTED = Verdict()


@dataclass(frozen=True)
class Refusal:
    """A verified payload that cannot become an event: it belongs in the dead-letter queue."""

    code: str
    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", cut(self.reason))  # it may quote the payload


@dataclass(frozen=True)
class Mapped:
    """What one request maps to: events of our contract (plain dicts), refusals, or nothing
    with the reason it was ignored (a topic or content type this connector does not handle)."""

    events: tuple[dict[str, Any], ...] = ()
    refusals: tuple[Refusal, ...] = ()
    ignored: str | None = None


def mapped(items: Iterable[dict[str, Any] | Refusal]) -> Mapped:
    listed = list(items)
    refusals = tuple(item for item in listed if isinstance(item, Refusal))
    return Mapped(tuple(item for item in listed if not isinstance(item, Refusal)), refusals)


def ignored(reason: str) -> Mapped:
    return Mapped(ignored=reason)


def refused(code: str, reason: str) -> Mapped:
    return Mapped(refusals=(Refusal(code, reason),))


# --- signatures ------------------------------------------------------------------------------


def hmac_sha256(secret: str, *parts: bytes) -> bytes:
    return hmac.digest(secret.encode("utf-8"), b"".join(parts), hashlib.sha256)


def check(given: str, secrets: Sequence[str], expected: Callable[[str], str]) -> Verdict:
    """``given`` against what each active secret gives, in constant time: every secret is
    tried, so the time taken does not tell which one matched."""
    if not secrets:
        return Verdict(UNKNOWN_KEY)
    matched = False
    for secret in secrets:
        matched |= hmac.compare_digest(
            given.encode("utf-8", "replace"), expected(secret).encode("utf-8", "replace")
        )
    return ACCEPTED if matched else Verdict(WRONG_SIGNATURE)


def fresh(verdict: Verdict, signed_at: float, request: Request, connector: Connector) -> Verdict:
    """An accepted signature's timestamp within ``tolerance_seconds`` of the receiver's clock,
    either way (clocks drift); a refused one stays refused."""
    if verdict.accepted and abs(request.now - signed_at) > connector.tolerance_seconds:
        return Verdict(STALE_TIMESTAMP)
    return verdict


def digits(value: str | None) -> int | None:
    return int(value) if value is not None and _DIGITS.fullmatch(value) else None


def pair(signature: str, stamp: str) -> Callable[[str], tuple[str, str] | str]:
    """A header of ``a=1, b=2`` (or ``a=1,b=2``) parameters holding the signature and the
    timestamp; the first of a repeated name wins."""

    def parse(header: str) -> tuple[str, str] | str:
        given: dict[str, str] = {}
        for part in header.split(","):
            name, equals, value = part.strip().partition("=")
            if equals:
                given.setdefault(name.strip(), value.strip())
        if digits(given.get(stamp)) is None or signature not in given:
            return MALFORMED_SIGNATURE
        return given[stamp], given[signature]

    return parse


@dataclass(frozen=True)
class Signed:
    """A header with a timestamp and an HMAC-SHA256 over the parts ``message`` makes of the
    timestamp and the raw body, written by ``encode``."""

    header: str
    parse: Callable[[str], tuple[str, str] | str]  # (stamp, signature), else why it is refused
    message: Callable[[bytes, bytes], tuple[bytes, ...]]
    encode: Callable[[bytes], str] = bytes.hex
    per_second: int = 1000  # the stamp's units

    def verify(self, request: Request, secrets: Sequence[str], connector: Connector) -> Verdict:
        header = request.headers.get(self.header)
        if header is None:
            return Verdict(MISSING_SIGNATURE)
        parsed = self.parse(header)
        if isinstance(parsed, str):
            return Verdict(parsed)
        stamp, signature = parsed
        parts = self.message(stamp.encode("ascii"), request.body)
        verdict = check(signature, secrets, lambda s: self.encode(hmac_sha256(s, *parts)))
        return fresh(verdict, int(stamp) / self.per_second, request, connector)

    def stamp(self, request: Request) -> int | None:
        """The timestamp of a request (in the scheme's units): when the CMS sent it."""
        parsed = self.parse(request.headers.get(self.header, ""))
        return None if isinstance(parsed, str) else int(parsed[0])


def token(given: str | None, secrets: Sequence[str]) -> Verdict:
    """A header that carries the shared secret itself (no signature, no timestamp)."""
    if given is None:
        return Verdict(MISSING_SIGNATURE)
    return check(given.strip(), secrets, lambda s: s)


# --- payloads --------------------------------------------------------------------------------


def loads(body: bytes | str) -> Any:
    """JSON as the ingest reads it: no duplicate keys, no NaN, numbers exact. ValueError if not."""
    try:
        return exact_json(body.decode("utf-8") if isinstance(body, bytes) else body)
    except RecursionError as exc:
        raise ValueError("nested too deep") from exc


def load_object(body: bytes) -> dict[str, Any] | Mapped:
    try:
        document = loads(body)
    except ValueError as exc:
        return refused(MALFORMED_JSON, f"the body is not JSON: {exc}")
    if not isinstance(document, dict):
        return refused(UNMAPPABLE_PAYLOAD, "the body is not a JSON object")
    return document


def lookup(document: Any, path: str) -> Any:
    """``document["a"]["b"]`` for the path ``a.b``, or None."""
    for name in path.split("."):
        if not isinstance(document, dict):
            return None
        document = document.get(name)
    return document


def text(value: Any) -> str | None:
    """A non-empty string; a Sanity slug (``{"current": "..."}``) gives its ``current``."""
    if isinstance(value, dict):
        value = value.get("current")
    return value if isinstance(value, str) and value.strip() else None


def identifier(value: Any) -> str | None:
    """A CMS id: a non-empty string, or a whole number (WordPress, Strapi v4, Shopify)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return text(value)


# --- events ----------------------------------------------------------------------------------


def page_url(template: str, slug: str, locale: str | None = None) -> str:
    """The template with ``{slug}`` and ``{locale}`` filled in; the ingest checks the result
    like any URL. In the path the slug keeps what a path keeps as written (the contract's rule:
    ``/``, sub-delims, ``:``, ``@`` and percent-escapes, which WordPress stores a non-ASCII
    slug in), and a path-style slug (``/about``) after the template's ``/`` gives one slash;
    in the query only ``/`` and escapes are kept (``&``, ``=`` and ``+`` would say more)."""
    slug = _STRAY_PERCENT.sub("%25", slug.strip())
    if "/{slug}" in template:
        slug = slug.lstrip("/")
    path, mark, query = template.partition("?")
    url = path.replace("{slug}", quote(slug, safe=_PATH_KEPT)) + mark
    url += query.replace("{slug}", quote(slug, safe="/%"))
    return url.replace("{locale}", quote(locale or "", safe=""))


def url_for(
    kind: ContentType, slug: Any, locale: str | None = None, sent: Any = None
) -> str | None:
    """The content type's template filled in for the CMS ``locale`` (None without a slug),
    else the URL the CMS ``sent`` (Ghost and WordPress send the page's; a template makes a
    headless site's)."""
    if kind.url_template is None:
        return text(sent)
    if (slug := text(slug)) is None:
        return None
    return page_url(kind.url_template, slug, kind.url_locale(locale) if locale else None)


def _version(when: datetime | int, gone: bool) -> int:
    """From a CMS time, or from epoch milliseconds (when the CMS sent the request)."""
    return version(when, gone) if isinstance(when, int) else time_version(when, gone)


def publish(
    url: str, when: datetime | int, id: str, title: Any = None, updated: datetime | None = None
) -> dict[str, Any]:
    """A publish versioned by ``when``, its lastmod ``updated`` (else ``when``, if a time); the
    CMS's ``title`` fitted to the contract (dropped if nothing is left)."""
    event: dict[str, Any] = {"type": "publish", "url": url, "version": _version(when, False)}
    lastmod = updated or (when if isinstance(when, datetime) else None)
    if lastmod is not None:
        event["lastmod"] = w3c(lastmod)
    event["id"] = id
    if isinstance(title, str) and (fitted := fitted_text(title, MAX_TITLE)) is not None:
        event["title"] = fitted
    return event


def unpublish(when: datetime | int, id: str, url: str | None = None) -> dict[str, Any]:
    """An unpublish by URL, by id (the registry knows the id's URL), or both."""
    event: dict[str, Any] = {"type": "unpublish"}
    if url is not None:
        event["url"] = url
    return event | {"version": _version(when, True), "id": id}


def entity_id(cms_id: str, locale: str | None) -> str:
    """``<cms id>`` or ``<cms id>:<locale>``: how the registry names an entity."""
    return cms_id if locale is None else f"{cms_id}:{locale}"
