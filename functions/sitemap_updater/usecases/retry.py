"""The one way a step that may lose a race is tried again."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def retry(
    attempt: Callable[[], T],
    times: int,
    retried: tuple[type[Exception], ...],
    *,
    lost: Callable[[int, Exception], None] | None = None,
    give_up: Callable[[], Exception] | None = None,
) -> T:
    """``attempt()`` until it returns, at most ``times``. Each error of ``retried`` goes to
    ``lost`` (with the attempt's number, from 1), the last one too; after the last attempt,
    ``give_up()`` is raised, or else the error itself."""
    for number in range(1, times + 1):
        try:
            return attempt()
        except retried as error:
            if lost is not None:
                lost(number, error)
            if number == times and give_up is not None:
                raise give_up() from error
            if number == times:
                raise
    raise ValueError(f"times must be at least 1, not {times}")
