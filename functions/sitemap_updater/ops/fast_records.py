"""The common page-record shapes, validated without pydantic (what makes ``build`` fast).

A record of the usual shape (the publish fields, ``images`` as ``[{"loc": ...}]``,
``hreflang`` and ``alternates`` as ``[{"hreflang": ..., "href": ...}]``, URLs already in their
canonical form) is checked here with the contract's own rules (``domain.contract``) and
turned straight into a PageChange. Anything doubtful (another field, another type, a value a
rule refuses, a lone surrogate) gives None, and the caller hands the record to
``parse_event``, the ingest function's full validation, for the real answer and its exact
reason. Tests hold the two paths to the same answers, record by record and byte by byte.

Order matters for reasons: pydantic checks every field's shape before any URL is normalised,
and the URLs in the order url, images, alternates; so does this module.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal
from functools import cache, lru_cache
from typing import Any

from sitemap_updater.domain.contract import (
    PageChange,
    UrlNormaliser,
    alternate_pairs,
    image_locs,
    normalise_changefreq,
    normalise_hreflang,
    normalise_lastmod,
    normalise_priority,
    normalise_version,
)
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.urls import MAX_URL_LENGTH, Site, normalise_url

FAST_FIELDS = frozenset(  # the publish fields, and the extensions of a simple shape
    ("type", "url", "version", "lastmod", "changefreq", "priority", "hreflang", "images")
) | {"alternates"}
# Characters normalise_url leaves as they are (RFC 3986's, less the quote it refuses) and
# upper-case escapes; a query, if any, is not empty.
_CHAR = r"(?:[A-Za-z0-9\-._~!$&()*+,;=:@/]|%[0-9A-F]{2})"
_PATH_AND_QUERY = rf"/{_CHAR}*(?:\?(?:{_CHAR}|\?)+)?"
_DNS_NAME = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*"
_ANY_HOST = re.compile(rf"https?://{_DNS_NAME}{_PATH_AND_QUERY}", re.ASCII)
_SURROGATE = re.compile("[\ud800-\udfff]")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
_UTC_SECONDS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", re.ASCII)


@cache
def _on_site(site: Site) -> re.Pattern[str]:
    return re.compile(rf"{re.escape(site.origin)}{_PATH_AND_QUERY}", re.ASCII)


def is_canonical(url: str, pattern: re.Pattern[str]) -> bool:
    """True when ``normalise_url`` would return ``url`` unchanged (same rules, as a pattern;
    dot segments and ``%2E`` are left to it)."""
    return (
        len(url) <= MAX_URL_LENGTH
        and pattern.fullmatch(url) is not None
        and "/." not in url
        and "%2E" not in url
    )


@cache
def canonical_or_normalised(site: Site) -> UrlNormaliser:
    """``normalise_url``, short-cut for URLs already in canonical form."""
    on_site = _on_site(site)

    def normalise(raw: str, site: Site, field: str = "url", same_site: bool = True) -> str:
        if is_canonical(raw, on_site if same_site else _ANY_HOST):
            return raw
        return normalise_url(raw, site, field, same_site)

    return normalise


def lastmod_of(value: Any) -> str:
    """``normalise_lastmod(value)``, short-cut for values already in a normal form (a real
    date, or a real UTC time to the second, which it returns unchanged)."""
    if type(value) is str:
        try:
            if _DATE.fullmatch(value):
                date.fromisoformat(value)
                return value
            if _UTC_SECONDS.fullmatch(value):
                datetime.fromisoformat(value[:-1])
                return value
        except ValueError:
            pass  # not a real date or time: normalise_lastmod says so, with its message
    return normalise_lastmod(value)


@lru_cache(maxsize=1024, typed=True)
def _cached_priority(value: Decimal | float | int) -> str:
    return normalise_priority(value)


def priority_of(value: Any) -> str:
    """``normalise_priority(value)``, remembered for the few values sites use (by type and
    value: equal numbers of one type give the same text)."""
    kind = type(value)
    if kind is int or kind is float or (kind is Decimal and value.is_finite()):
        return _cached_priority(value)
    return normalise_priority(value)


def _is_url_text(value: Any) -> bool:
    """What the model's URL fields accept (a string of 1 to 2,048 characters) and no lone
    surrogate (the model refuses those with its own reason)."""
    return (
        type(value) is str
        and 0 < len(value) <= MAX_URL_LENGTH
        and (value.isascii() or not _SURROGATE.search(value))
    )


def _images(value: Any) -> list[str] | None:
    """The image locs of an ``images`` field of the plain shape; None when doubtful."""
    if type(value) is not list:
        return None
    locs = []
    for image in value:
        if type(image) is not dict or len(image) != 1 or not _is_url_text(image.get("loc")):
            return None
        locs.append(image["loc"])
    return locs


def _alternates(value: Any) -> list[tuple[str, str]] | None:
    """(hreflang normalised, href) of an ``alternates`` field of the plain shape, or None."""
    if type(value) is not list:
        return None
    pairs = []
    for alternate in value:
        if type(alternate) is not dict or len(alternate) != 2:
            return None
        href = alternate.get("href")
        if not isinstance(href, str) or not _is_url_text(href) or "hreflang" not in alternate:
            return None
        try:
            pairs.append((normalise_hreflang(alternate["hreflang"]), href))
        except ValueError:
            return None
    return pairs


def fast_change(record: dict[str, Any], site: Site, default_version: Decimal) -> PageChange | None:
    """The PageChange for a publish record of the common shape, or None to leave it to
    ``parse_event``. Raises InvalidEvent only where ``parse_event`` would, with its reason."""
    if not FAST_FIELDS.issuperset(record) or record.get("type", "publish") != "publish":
        return None
    url = record.get("url")
    if not isinstance(url, str) or not _is_url_text(url):
        return None
    try:
        version = normalise_version(record["version"]) if "version" in record else default_version
        lastmod = record.get("lastmod")
        if lastmod is not None:
            lastmod = lastmod_of(lastmod)
        changefreq = record.get("changefreq")
        if changefreq is not None:
            changefreq = normalise_changefreq(changefreq)
        priority = record.get("priority")
        if priority is not None:
            priority = priority_of(priority)
        hreflang = record.get("hreflang")
        if hreflang is not None:
            hreflang = normalise_hreflang(hreflang)
    except ValueError:
        return None
    images = record.get("images")
    if images is not None:
        images = _images(images)
        if images is None:
            return None
    alternates = record.get("alternates")
    if alternates is not None:
        alternates = _alternates(alternates)
        if alternates is None:
            return None
    # Every field has the model's shape: now the URL rules, in parse_event's order.
    normalise = canonical_or_normalised(site)
    url = normalise(url, site, "url", True)
    entry = SitemapEntry(
        url=url,
        lastmod=lastmod,
        changefreq=changefreq,
        priority=priority,
        images=image_locs(images, site, normalise) if images else (),
    )
    return PageChange(
        url=url,
        version=version,
        entry=entry,
        hreflang=hreflang,
        alternates=alternate_pairs(alternates, site, normalise) if alternates else (),
    )
