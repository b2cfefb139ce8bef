"""The event contract's value rules, and what a valid event becomes (a PageChange).

Each rule takes a decoded value and returns its normal form or raises ``ValueError`` saying
what is wrong; ``domain.events`` turns that into the field's reason code. Rules that see the
same few values again and again (priorities, hreflangs, dates) remember their answers.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from functools import lru_cache
from typing import Any

from msgspec import Struct

from sitemap_updater.domain.dates import EPOCH, moment, time_version
from sitemap_updater.domain.entries import SitemapEntry

MAX_VERSION_DIGITS = 38  # DynamoDB numbers hold 38 significant digits
_VERSION_BOUND = 10**MAX_VERSION_DIGITS  # an int below it is a valid version as it is
VERSION_EXPONENTS = (-130, 125)  # ... from 1E-130 to 9.99...E+125
MAX_PRIORITY_PLACES = 17  # enough for any float; bounds the rendered <priority>
CHANGEFREQS = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
X_DEFAULT = "x-default"
_HREFLANG = re.compile(
    r"(?P<language>[a-z]{2,3})(?:-(?P<script>[a-z]{4}))?(?:-(?P<region>[a-z]{2}|[0-9]{3}))?",
    re.ASCII | re.IGNORECASE,
)
_NEWS_LANGUAGE = re.compile(r"zh-cn|zh-tw|[a-z]{2,3}", re.ASCII)
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# C1 controls (text decoded in the wrong encoding: readers show them as Windows-1252) and
# the controls that reorder the text around them (embeddings, overrides, isolates), which can
# make a title read as something else. The marks (U+200E, U+200F, U+061C) only hint a
# direction and are common in right-to-left text: kept.
_UNSEEN_CONTROL = re.compile("[\x80-\x9f\u202a-\u202e\u2066-\u2069]")


class PageChange(Struct, frozen=True, gc=False, omit_defaults=True):
    """A validated, normalised event: the only thing the use cases ever see."""

    url: str
    version: Decimal
    entry: SitemapEntry | None  # None for an unpublish
    hreflang: str | None = None  # this page's own language, if the event says
    alternates: tuple[tuple[str, str], ...] = ()  # declared (hreflang, href), sorted
    group: str | None = None  # an explicit sitemap group
    title: str | None = None  # the page's title, for the feed of recent changes
    entity: str | None = None  # the CMS's id for the page; "" url: an unpublish by id alone
    sent: int | None = None  # when SQS received the event (epoch ms), to measure freshness

    @property
    def live(self) -> bool:
        return self.entry is not None


class JsonNumber(str):
    """A JSON number with a fraction or an exponent, as written (the decoders' float hook):
    its exact value is read only where a rule needs it, and the few values pages share
    (priorities) are remembered by their text. JSON integers are ints."""

    __slots__ = ()


_NUMBERS = (int, JsonNumber, Decimal, float)


def _number(value: Any, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        raise ValueError(f"{what} must be a JSON number")  # noqa: TRY004 - a field error
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not number.is_finite():
        raise ValueError(f"{what} must be a finite number")
    return number


def normalise_version(value: Any, unpublish: bool = False) -> Decimal:
    """An event's ``version``: a finite number >= 0 that DynamoDB can store exactly, or an
    RFC 3339 time with its zone (``dates.time_version``: epoch milliseconds, tie-broken)."""
    if type(value) is int and 0 <= value < _VERSION_BOUND:
        return Decimal(value)
    if type(value) is str:  # a JsonNumber is a str too
        when = moment(value)
        if when is None or when < EPOCH:
            raise ValueError("version must be a number >= 0 or an RFC 3339 time with a zone")
        return Decimal(time_version(when, unpublish))
    number = _number(value, "version")
    if number < 0:
        raise ValueError("version must be a finite number >= 0")
    if len(number.as_tuple().digits) > MAX_VERSION_DIGITS:
        raise ValueError(f"version has more than {MAX_VERSION_DIGITS} significant digits")
    if number and not VERSION_EXPONENTS[0] <= number.adjusted() <= VERSION_EXPONENTS[1]:
        raise ValueError("version is outside the range DynamoDB can store (1E-130..1E+126)")
    return number


def normalise_priority(value: Any) -> str:
    """An event's ``priority`` (0.0 to 1.0) as rendered: ``0.10`` and ``0.1`` give ``0.1``."""
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        raise ValueError("priority must be a JSON number from 0.0 to 1.0")  # noqa: TRY004
    return _priority(value)


@lru_cache(maxsize=4096)  # pages share a few priorities
def _priority(value: int | JsonNumber | Decimal | float) -> str:
    number = _number(value, "priority")
    if not Decimal(0) <= number <= Decimal(1):
        raise ValueError("priority must be from 0.0 to 1.0")
    number = abs(number).normalize()  # abs: -0.0 is 0.0
    if -number.as_tuple().exponent > MAX_PRIORITY_PLACES:  # type: ignore[operator]
        raise ValueError(f"priority has more than {MAX_PRIORITY_PLACES} decimal places")
    text = format(number, "f")
    return text if "." in text else f"{text}.0"


@lru_cache(maxsize=1024)
def normalise_hreflang(value: str) -> str:
    """``en``, ``en-GB``, ``zh-Hant-TW``, ``es-419`` or ``x-default``, in canonical case (a
    string: the event's models make it one)."""
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


def normalise_news_language(value: str) -> str:
    """Google News's language: an ISO 639 code, or zh-cn / zh-tw, in lower case."""
    lower = value.lower()
    if not _NEWS_LANGUAGE.fullmatch(lower):
        raise ValueError("language must be an ISO 639 code (en, de, zh-cn or zh-tw)")
    return lower


def text(value: str, limit: int) -> str:
    """A title or description: trimmed, not empty, at most ``limit`` characters, nothing XML
    forbids, no C1 control and no control that reorders what a reader sees."""
    trimmed = value.strip()
    if not trimmed:
        raise ValueError("must not be empty")
    if len(trimmed) > limit:
        raise ValueError(f"is {len(trimmed)} characters, over {limit}")
    if _XML_ILLEGAL.search(trimmed):
        raise ValueError("holds a character XML 1.0 forbids")
    found = _UNSEEN_CONTROL.search(trimmed)
    if found:
        kind = "C1" if found.group() <= "\x9f" else "bidirectional"
        raise ValueError(f"holds {kind} control U+{ord(found.group()):04X}")
    return trimmed


def fitted_text(value: str, limit: int) -> str | None:
    """Text from elsewhere (a CMS's title) made to pass :func:`text`: what it refuses is
    removed, runs of whitespace become one space, and a long text is cut with an ellipsis.
    None when nothing is left."""
    kept = " ".join(_UNSEEN_CONTROL.sub("", _XML_ILLEGAL.sub("", value)).split())
    if len(kept) > limit:
        kept = kept[: limit - 1].rstrip() + "\u2026"
    return kept or None


def whole(value: Any, low: int, high: int) -> int:
    """A whole number from ``low`` to ``high`` (``60.0`` is 60)."""
    try:
        number: Decimal | None = _number(value, "it")
    except ValueError:
        number = None
    if number is None or number != number.to_integral_value() or not low <= number <= high:
        raise ValueError(f"must be a whole number from {low:,} to {high:,}")
    return int(number)


def rating(value: Any) -> str:
    """A video rating, 0.0 to 5.0, as rendered (one decimal place)."""
    number = _number(value, "rating")
    if not 0 <= number <= 5:
        raise ValueError("rating must be from 0.0 to 5.0")
    return format(abs(number).quantize(Decimal("0.1")), "f")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A key given twice makes an event ambiguous (one reader takes the first, another the
    # last): refused, as I-JSON (RFC 7493) does.
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!a}")
            seen.add(key)
    return document


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _integer(text: str) -> int | Decimal:
    # Python reads no int of over 4,300 digits (sys.get_int_max_str_digits): such a number is
    # read exactly as a Decimal, for the value rules to refuse with the field's reason.
    return int(text) if len(text) <= 4000 else Decimal(text)


# The standard library's reading of a JSON text as the contract takes it (events, connectors):
# ValueError for a key given twice, NaN or Infinity; numbers with a fraction as Decimal, not
# JsonNumber (a str, which a text field would take).
exact_json = json.JSONDecoder(
    parse_float=Decimal,
    parse_int=_integer,
    parse_constant=_no_constant,
    object_pairs_hook=_unique_keys,
).decode
