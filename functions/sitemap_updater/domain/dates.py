"""W3C Datetime, in the forms the sitemap schemas accept (pure)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

W3C_DATETIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2}))?$",
    re.ASCII,
)
_UTC_SECONDS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", re.ASCII)


def normalise_w3c(value: Any, name: str = "lastmod") -> str:
    """W3C Datetime in the forms the sitemap schema accepts; datetimes become UTC ``Z``.

    ``YYYY-MM-DD`` stays a date. A time needs a zone (``Z`` or ``+hh:mm``); ``hh:mm`` gains
    ``:00`` seconds; fractions of a second are dropped. Year-only and year-month forms are
    rejected: the sitemap schema does not accept them.
    """
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string")  # noqa: TRY004 - a field error
    known = _NORMALISED.get(value)
    if known is None:
        known = _normalise_w3c(value, name)
        if len(_NORMALISED) >= 65_536:  # pages share dates; a bound all the same
            _NORMALISED.clear()
        _NORMALISED[value] = known
    return known


_NORMALISED: dict[str, str] = {}


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
    # Not strftime: glibc's %Y does not pad years before 1000 to four digits.
    return moment.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def instant(normalised: str) -> datetime:
    """The moment a normalised W3C value names (a date is its first instant, UTC)."""
    if "T" not in normalised:
        return datetime.fromisoformat(normalised).replace(tzinfo=UTC)
    return datetime.fromisoformat(normalised.removesuffix("Z") + "+00:00")
