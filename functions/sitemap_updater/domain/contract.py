"""The event contract's rules in plain Python: field checks, limits and what an event becomes.

``domain.events`` and ``domain.extensions`` build the pydantic models of the contract from
these functions; ``sitemap-updater build`` applies the same functions directly to the common
record shapes (``ops.pages``), without importing pydantic. One set of rules, two callers.

Every checker raises ``ValueError`` (what pydantic reports as a field error) or, for the rules
applied after the model (counts, URLs), ``InvalidEvent`` with its reason code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sitemap_updater.domain.dates import normalise_w3c
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.urls import Site, normalise_url

MAX_VERSION_DIGITS = 38  # DynamoDB numbers hold 38 significant digits
VERSION_EXPONENTS = (-130, 125)  # ... from 1E-130 to 9.99...E+125
MAX_PRIORITY_PLACES = 17  # enough for any float; bounds the rendered <priority>
CHANGEFREQS = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
MAX_IMAGES = 1000  # Google: up to 1,000 images per page
MAX_ALTERNATES = 64
X_DEFAULT = "x-default"
_HREFLANG = re.compile(
    r"(?P<language>[a-z]{2,3})(?:-(?P<script>[a-z]{4}))?(?:-(?P<region>[a-z]{2}|[0-9]{3}))?",
    re.ASCII | re.IGNORECASE,
)


def reject_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def unique_json_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Duplicate names make an event ambiguous (a reader taking the first and one taking the
    # last see different events): refuse them, as I-JSON (RFC 7493) does.
    seen: set[str] = set()
    for key, _value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!a}")
        seen.add(key)
    return dict(pairs)


# How an event's JSON is decoded, by the ingest function and by ``build`` alike: numbers as
# decimals (0.1 stays 0.1), no NaN or Infinity, no key named twice. One decoder for every
# call: json.loads(..., parse_float=...) would build one each time.
EVENT_JSON = json.JSONDecoder(
    parse_float=Decimal, parse_constant=reject_json_constant, object_pairs_hook=unique_json_keys
)


@dataclass(frozen=True)
class PageChange:
    """A validated, normalised event: the only thing the use cases ever see."""

    url: str
    version: Decimal
    entry: SitemapEntry | None  # None for an unpublish
    hreflang: str | None = None  # this page's own language, if the event says
    alternates: tuple[tuple[str, str], ...] = ()  # declared (hreflang, href), sorted
    group: str | None = None  # an explicit sitemap group

    @property
    def live(self) -> bool:
        return self.entry is not None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | Decimal | float) and not isinstance(value, bool)


def normalise_version(value: Any) -> Decimal:
    """An event's ``version``: a finite number >= 0 that DynamoDB can store exactly."""
    if not _is_number(value):
        raise ValueError("version must be a JSON number")
    number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    if not number.is_finite() or number < 0:
        raise ValueError("version must be a finite number >= 0")
    if len(number.as_tuple().digits) > MAX_VERSION_DIGITS:
        raise ValueError(f"version has more than {MAX_VERSION_DIGITS} significant digits")
    if number and not VERSION_EXPONENTS[0] <= number.adjusted() <= VERSION_EXPONENTS[1]:
        raise ValueError("version is outside the range DynamoDB can store (1E-130..1E+126)")
    return number


def normalise_priority(value: Any) -> str:
    """An event's ``priority`` (0.0 to 1.0) as rendered: ``0.10`` and ``0.1`` give ``0.1``."""
    if not _is_number(value):
        raise ValueError("priority must be a JSON number from 0.0 to 1.0")
    number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    if not number.is_finite() or not Decimal(0) <= number <= Decimal(1):
        raise ValueError("priority must be from 0.0 to 1.0")
    number = abs(number).normalize()  # abs: -0.0 is 0.0
    if -number.as_tuple().exponent > MAX_PRIORITY_PLACES:  # type: ignore[operator]
        raise ValueError(f"priority has more than {MAX_PRIORITY_PLACES} decimal places")
    text = format(number, "f")
    return text if "." in text else f"{text}.0"


def normalise_lastmod(value: Any) -> str:
    """W3C Datetime (see :func:`sitemap_updater.domain.dates.normalise_w3c`)."""
    return normalise_w3c(value, "lastmod")


def normalise_changefreq(value: Any) -> str:
    """An event's ``changefreq``: one of :data:`CHANGEFREQS`."""
    if value not in CHANGEFREQS:
        raise ValueError(f"changefreq must be one of {', '.join(CHANGEFREQS)}")
    return str(value)


def normalise_hreflang(value: Any) -> str:
    """``en``, ``en-GB``, ``zh-Hant-TW``, ``es-419`` or ``x-default``, in canonical case."""
    if not isinstance(value, str):
        raise ValueError("hreflang must be a string")  # noqa: TRY004 - pydantic reports ValueError
    if value.lower() == X_DEFAULT:
        return X_DEFAULT
    match = _HREFLANG.fullmatch(value)
    if not match:
        raise ValueError(
            "hreflang must be an ISO 639 language, optionally with a script and an ISO 3166 "
            "region (en, en-GB, zh-Hant-TW, es-419), or x-default"
        )
    parts = [match["language"].lower()]
    if match["script"]:
        parts.append(match["script"].title())
    if match["region"]:
        parts.append(match["region"].upper())
    return "-".join(parts)


# normalise_url's signature, called positionally: (raw, site, field, same_site).
UrlNormaliser = Callable[[str, Site, str, bool], str]


def image_locs(
    locs: list[str], site: Site, normalise: UrlNormaliser = normalise_url
) -> tuple[str, ...]:
    """A page's images (any host), normalised, each listed once, in the order given."""
    if len(locs) > MAX_IMAGES:
        raise InvalidEvent("invalid_image", f"{len(locs)} images, over Google's {MAX_IMAGES}")
    normalised = [normalise(loc, site, "image", False) for loc in locs]
    return tuple(dict.fromkeys(normalised))


def alternate_pairs(
    declared: list[tuple[str, str]], site: Site, normalise: UrlNormaliser = normalise_url
) -> tuple[tuple[str, str], ...]:
    """Declared language versions ((hreflang already normalised, href)), each a page of this
    site, in a canonical order."""
    if len(declared) > MAX_ALTERNATES:
        raise InvalidEvent(
            "invalid_alternate", f"{len(declared)} alternates, over {MAX_ALTERNATES}"
        )
    pairs = {(lang, normalise(href, site, "alternate", True)) for lang, href in declared}
    return tuple(sorted(pairs))
