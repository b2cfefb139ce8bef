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
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from functools import cache, lru_cache
from typing import Any

from sitemap_updater.domain.contract import (
    CHANGEFREQS,
    MAX_ALTERNATES,
    MAX_IMAGES,
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
from sitemap_updater.domain.render import escape
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


# --- whole JSON Lines lines of the commonest shape --------------------------------------------

Pairs = tuple[tuple[str, str], ...]
# A page as build collects it: (url, version, its <url> line without alternates, lastmod,
# hreflang, declared alternates, its PageChange). A FastPage is one read straight from a JSON
# Lines line (its PageChange None): valid, normalised and rendered as render_entry renders it;
# its cluster's alternates, if any, go in before its images (see with_alternates).
FastPage = tuple[str, Decimal | int, str, str | None, str | None, Pairs, PageChange | None]

_W = "[ \t]*"  # JSON whitespace inside a line (lines are split at line ends)
# Non-ASCII characters that normalise_url may refuse: controls, whitespace, zero-width and
# bidirectional marks, the BOM, U+FFFD to U+FFFF and lone surrogates (a superset of what
# check_characters refuses: a test checks every code point). A URL holding one goes the full
# way; any other non-ASCII character is only percent-encoded, as normalise_url does.
NON_ASCII_REFUSED = (
    "\x80-\xa0\u061c\u1680\u2000-\u200f\u2028-\u202f\u205f\u2066-\u2069\u3000"
    "\ud800-\udfff\ufeff\ufffd-\uffff"
)
_NON_ASCII_REFUSED = re.compile(f"[{NON_ASCII_REFUSED}]")
# What normalise_url leaves as it is (A-Z a-z 0-9 -._~!$&()*+,;=:@/ and escapes, checked
# apart: _BAD_ESCAPE) and non-ASCII (checked apart: _NON_ASCII_REFUSED), as the complement
# of the rest of ASCII (a negated class compiles three times faster than the range to
# U+10FFFF). A test holds it to the safe set.
_PATH_CHARS = r"[^\x00-\x20\"#'<>?\[\\\]^`{|}\x7f-\xa0]"
_QUERY_CHARS = r"[^\x00-\x20\"#'<>\[\\\]^`{|}\x7f-\xa0]"
_ASCII_PATH = r"/[A-Za-z0-9\-._~!$&()*+,;=:@/%]*(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@/%?]+)?"
_BAD_ESCAPE = re.compile(r"%(?![0-9A-F]{2})")
_LOC = re.compile(r'"loc"[ \t]*:[ \t]*"([^"]+)"')
_ALTERNATE = re.compile(  # (hreflang, href) or (href, hreflang)
    r'"hreflang"[ \t]*:[ \t]*"([^"]+)"[ \t]*,[ \t]*"href"[ \t]*:[ \t]*"([^"]+)"'
    r'|"href"[ \t]*:[ \t]*"([^"]+)"[ \t]*,[ \t]*"hreflang"[ \t]*:[ \t]*"([^"]+)"'
)
_NON_ASCII_RUN = re.compile("[^\x00-\x7f]+")
_CHANGEFREQS: dict[str | None, str] = {
    None: "",
    **{value: f"<changefreq>{value}</changefreq>" for value in CHANGEFREQS},
}
_MISSING = ("", "")
_IMAGE_OPEN = "<image:image>"
_URL_CLOSE = "</url>\n"


def _optional(key: str, value: str) -> str:
    return rf'(?:{_W},{_W}"{key}"{_W}:{_W}{value})?'


def _list_of(item: str) -> str:
    return rf"\[{_W}({item}(?:{_W},{_W}{item})*){_W}\]"


@cache
def _line_pattern(site: Site) -> re.Pattern[str]:
    """A line holding one publish record of the commonest shape: ``url`` first (``type`` and
    ``version`` may also come before it), then ``type``, ``version``, ``lastmod``,
    ``changefreq``, ``priority``, ``hreflang``, ``images`` (``[{"loc": ...}, ...]``, URLs in
    canonical ASCII form) and ``alternates`` (``[{"hreflang": ..., "href": ...}, ...]``, the
    site's URLs in canonical ASCII form; either key first) in this order, each optional;
    strings without escapes, plain numbers. The values are checked by line_reader."""
    image = rf'\{{{_W}"loc"{_W}:{_W}"https?://{_DNS_NAME}{_ASCII_PATH}"{_W}\}}'
    hreflang = rf'"hreflang"{_W}:{_W}"[A-Za-z0-9-]{{2,11}}"'
    href = rf'"href"{_W}:{_W}"{re.escape(site.origin)}{_ASCII_PATH}"'
    alternate = rf"\{{{_W}(?:{hreflang}{_W},{_W}{href}|{href}{_W},{_W}{hreflang}){_W}\}}"
    version = r"(?:0|[1-9][0-9]{0,17})"
    return re.compile(
        rf'\{{{_W}(?P<t1>"type"{_W}:{_W}"publish"{_W},{_W})?'
        rf'(?:"version"{_W}:{_W}(?P<v1>{version}){_W},{_W})?'
        rf'"url"{_W}:{_W}"(?P<url>{re.escape(site.origin)}/{_PATH_CHARS}*(?:\?{_QUERY_CHARS}+)?)"'
        + _optional("type", '(?P<t2>"publish")')
        + _optional("version", f"(?P<v2>{version})")
        + _optional("lastmod", r'"(?P<lastmod>[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9:]{8}Z)?)"')
        + _optional("changefreq", r'"(?P<changefreq>[a-z]{5,7})"')
        + _optional("priority", r"(?P<priority>[01](?:\.[0-9]{1,6})?)")
        + _optional("hreflang", r'"(?P<hreflang>[A-Za-z0-9-]{2,11})"')
        + _optional("images", _list_of(image).replace("(", "(?P<images>", 1))
        + _optional("alternates", _list_of(alternate).replace("(", "(?P<alternates>", 1))
        + rf"{_W}\}}[ \t\n]*"
    )


def _lastmod_element(value: str) -> tuple[str, str] | None:
    try:
        lastmod = lastmod_of(value)
    except ValueError:
        return None
    return f"<lastmod>{escape(lastmod)}</lastmod>", lastmod


def _priority_element(value: str) -> str | None:
    try:
        return f"<priority>{escape(normalise_priority(Decimal(value)))}</priority>"
    except ValueError:
        return None


def _hreflang(value: str) -> str | None:
    try:
        return normalise_hreflang(value)
    except ValueError:
        return None


def _canonical_list(text: str) -> bool:
    """The URLs of an images or alternates list (of the line pattern's grammar) are each
    what normalise_url returns for them."""
    return not ("/." in text or "%2E" in text or ("%" in text and _BAD_ESCAPE.search(text)))


def _encoded(url: str) -> str:
    """A URL of the line pattern's grammar holding non-ASCII characters, each percent-encoded
    as UTF-8 (what normalise_url does to them); "" when a rule might refuse it."""
    if len(url) > MAX_URL_LENGTH or _NON_ASCII_REFUSED.search(url):
        return ""
    return _NON_ASCII_RUN.sub(_percent_encoded, url)


def _percent_encoded(run: re.Match[str]) -> str:
    return "%" + run.group().encode("utf-8").hex("%").upper()


def _images_element(images: str) -> str:
    """The <image:image> elements of an ``images`` list of the line pattern's grammar, as
    render_entry renders them; "" when a rule might refuse it."""
    if not _canonical_list(images):
        return ""
    locs = _LOC.findall(images)
    if len(locs) > MAX_IMAGES or (
        len(images) > MAX_URL_LENGTH and any(len(loc) > MAX_URL_LENGTH for loc in locs)
    ):
        return ""
    # Canonical URLs hold no markup character but "&" (check_characters refuses the others).
    return "".join(
        [
            f"<image:image><image:loc>{loc.replace('&', '&amp;')}</image:loc></image:image>"
            for loc in (dict.fromkeys(locs) if len(locs) > 1 else locs)
        ]
    )


def _declared(alternates: str, hreflangs: dict[str, str | None]) -> Pairs | None:
    """An ``alternates`` list of the line pattern's grammar as alternate_pairs returns it;
    None when a rule might refuse it."""
    if not _canonical_list(alternates):
        return None
    pairs = _ALTERNATE.findall(alternates)
    if len(pairs) > MAX_ALTERNATES:
        return None
    normalised = set()
    for lang_first, href_second, href_first, lang_second in pairs:
        lang, href = lang_first or lang_second, href_first or href_second
        if lang in hreflangs:
            known = hreflangs[lang]
        else:
            known = hreflangs[lang] = _hreflang(lang)
        if known is None or len(href) > MAX_URL_LENGTH:
            return None
        normalised.add((known, href))
    return tuple(sorted(normalised))


def line_reader(site: Site, default_version: int = 0) -> Callable[[str], FastPage | None]:
    """``read(line)``: the FastPage a JSON Lines line publishes when it is of the commonest
    shape and every value passes the contract's rules, rendered as ``render_entry`` renders
    it; None to decode the line and validate it the usual way (which gives the reason of a
    refusal: this never refuses). Values seen before are looked up, not checked again.

    Versions are ints (a JSON integer's exact value; versions are only ever compared, and an
    int equals the Decimal the full path gives), so a FastPage holds only str, int, tuple
    and None (marshal sends it)."""
    match = _line_pattern(site).fullmatch
    lastmods: dict[str, tuple[str, str] | None] = {}
    priorities: dict[str, str | None] = {}
    hreflangs: dict[str, str | None] = {}
    changefreqs = _CHANGEFREQS

    def read(line: str) -> FastPage | None:
        found = match(line)
        if found is None:
            return None
        (t1, v1, url, t2, v2, lastmod, changefreq, priority, hreflang, images, alternates) = (
            found.groups()
        )
        if (t1 and t2) or (v1 and v2):
            return None  # a field given twice: the full path decides
        if not url.isascii():
            url = _encoded(url)
        if not url or "/." in url or "%2E" in url or len(url) > MAX_URL_LENGTH:
            return None
        if "%" in url and _BAD_ESCAPE.search(url):
            return None
        lastmod_element, lastmod_value = _MISSING
        if lastmod is not None:
            if lastmod in lastmods:
                known = lastmods[lastmod]
            else:
                known = lastmods[lastmod] = _lastmod_element(lastmod)
            if known is None:
                return None
            lastmod_element, lastmod_value = known
        changefreq_element = changefreqs.get(changefreq)
        if changefreq_element is None:
            return None
        priority_element = ""
        if priority is not None:
            if priority in priorities:
                known_priority = priorities[priority]
            else:
                known_priority = priorities[priority] = _priority_element(priority)
            if known_priority is None:
                return None
            priority_element = known_priority
        if hreflang is not None:
            if hreflang in hreflangs:
                hreflang = hreflangs[hreflang]
            else:
                hreflang = hreflangs[hreflang] = _hreflang(hreflang)
            if hreflang is None:
                return None
        images_element = ""
        if images is not None:
            images_element = _images_element(images)
            if not images_element:
                return None
        declared: Pairs = ()
        if alternates is not None:
            pairs = _declared(alternates, hreflangs)
            if pairs is None:
                return None
            declared = pairs
        loc = url.replace("&", "&amp;") if "&" in url else url
        return (
            url,
            int(v1 or v2) if (v1 or v2) else default_version,
            f"<url><loc>{loc}</loc>{lastmod_element}{changefreq_element}{priority_element}"
            f"{images_element}</url>\n",
            lastmod_value or None,
            hreflang,
            declared,
            None,
        )

    return read


def links_of(pairs: Pairs) -> str:
    """The <xhtml:link> elements of an entry's alternates, as render_entry renders them."""
    return "".join(
        f'<xhtml:link rel="alternate" hreflang="{escape(lang)}" href="{escape(href)}"/>'
        for lang, href in pairs
    )


def with_alternates(text: str, links: str) -> str:
    """A FastPage's <url> line with its cluster's alternates (``links_of``), where
    render_entry puts them (after priority, before the images)."""
    at = text.find(_IMAGE_OPEN)
    if at < 0:
        at = len(text) - len(_URL_CLOSE)
    return f"{text[:at]}{links}{text[at:]}"
