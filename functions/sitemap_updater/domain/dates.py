"""W3C Datetime, in the forms the sitemap schemas accept (pure)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any

W3C_DATETIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2}))?$",
    re.ASCII,
)
RFC3339 = re.compile(  # "T" and "Z" may be lower case (RFC 3339, 5.6)
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"
    r"(?P<zone>[Zz]|[+-][0-9]{2}:[0-9]{2})?$",
    re.ASCII,
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_UTC_SECONDS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", re.ASCII)


def normalise_w3c(value: Any, name: str = "lastmod") -> str:
    """W3C Datetime in the forms the sitemap schema accepts; datetimes become UTC ``Z``.

    ``YYYY-MM-DD`` stays a date. A time needs a zone (``Z`` or ``+hh:mm``); ``hh:mm`` gains
    ``:00`` seconds; fractions of a second are dropped. Year-only and year-month forms are
    rejected: the sitemap schema does not accept them.
    """
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string")  # noqa: TRY004 - a field error
    return _normalise_w3c(value, name)


@lru_cache(maxsize=65_536)  # pages share dates; a bound all the same
def _normalise_w3c(value: str, name: str) -> str:
    if _UTC_SECONDS.fullmatch(value):  # the commonest form, already normal when it is real
        try:
            datetime.fromisoformat(value[:-1])
        except ValueError:
            pass  # said below, with the reason
        else:
            return value
    match = W3C_DATETIME.fullmatch(value)
    if not match:
        raise ValueError(f"{name} must be W3C Datetime: YYYY-MM-DD or YYYY-MM-DDThh:mm[:ss[.s]]TZD")
    year, month, day, hour, minute, second, _fraction, zone = match.groups()
    try:
        if hour is None:
            return date(int(year), int(month), int(day)).isoformat()
        offset = "+00:00" if zone == "Z" else zone
        moment = datetime.fromisoformat(
            f"{year}-{month}-{day}T{hour}:{minute}:{second or '00'}{offset}"
        ).astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"{name} is not a real date or time: {exc}") from exc
    return w3c(moment)


def w3c(when: datetime) -> str:
    """A moment as sitemaps and feeds write it: UTC, to the second (2026-11-20T09:30:00Z)."""
    # Not strftime: glibc's %Y does not pad years before 1000 to four digits.
    return when.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def instant(normalised: str) -> datetime:
    """The moment a normalised W3C value names (a date is its first instant, UTC)."""
    if "T" not in normalised:
        return datetime.fromisoformat(normalised).replace(tzinfo=UTC)
    return datetime.fromisoformat(normalised.removesuffix("Z") + "+00:00")


def moment(value: Any, naive_utc: bool = False) -> datetime | None:
    """An RFC 3339 time (``T`` or a space between date and time), or None. A time without a
    zone is refused unless ``naive_utc`` (WordPress's ``post_modified_gmt``)."""
    if not isinstance(value, str):
        return None
    match = RFC3339.fullmatch(value)
    if match is None or (match["zone"] is None and not naive_utc):
        return None
    try:
        parsed = datetime.fromisoformat(value.upper())
    except ValueError:  # a 13th month, a 25th hour
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def version(ms: int, unpublish: bool) -> int:
    """The version of a change made at ``ms`` (epoch milliseconds): ``ms * 10``, plus 1 for an
    unpublish. The digit breaks ties stably: several CMSes give times to the second only, and
    a delete carries the time of the last edit, so the unpublish made in the same instant as a
    publish wins, and a later publish (a bigger time) still wins over both."""
    return ms * 10 + (1 if unpublish else 0)


def time_version(when: datetime, unpublish: bool) -> int:
    return version((when - EPOCH) // timedelta(milliseconds=1), unpublish)  # exact: no float
