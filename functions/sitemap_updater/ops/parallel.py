"""Work split over two processes: the second half of a list done by a forked copy of this
one (the machine's other core), its results sent back as msgpack. The same code runs in both;
nothing is done differently for being parallel."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")
R = TypeVar("R")
# Below this many items, forking and sending the results back cost what the second core saves.
PARALLEL_FROM = 5_000


def in_two(items: Sequence[T], work: Callable[[Sequence[T]], list[R]], kind: Any) -> list[R]:
    """``work(items)``, its second half done in a forked process (``kind``: the type of one
    result, for msgpack). If the child fails, this process does its half too."""
    if len(items) < PARALLEL_FROM or (os.cpu_count() or 1) < 2 or not hasattr(os, "fork"):
        return work(items)
    split = len(items) // 2
    theirs = _forked(items[split:], work, msgspec.msgpack.Decoder(list[kind]))
    mine = work(items[:split])
    received = theirs()
    return mine + (received if received is not None else work(items[split:]))


def _forked(
    items: Sequence[T],
    work: Callable[[Sequence[T]], list[R]],
    decoder: msgspec.msgpack.Decoder[Any],
) -> Callable[[], list[R] | None]:
    """Start ``work(items)`` in a forked process; the function returned waits for its
    results (None if it failed)."""
    source, sink = os.pipe()
    gc.freeze()  # the collector would write to every object both processes share (copies)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: coverage does not follow it
        status = 1
        try:
            os.close(source)
            with os.fdopen(sink, "wb") as stream:
                stream.write(msgspec.msgpack.encode(work(items)))
            status = 0
        finally:
            os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
    os.close(sink)

    def results() -> list[R] | None:
        with os.fdopen(source, "rb") as stream:
            data = stream.read()
        _, status = os.waitpid(pid, 0)
        if status != 0:
            return None
        received: list[R] = decoder.decode(data)
        return received

    return results
