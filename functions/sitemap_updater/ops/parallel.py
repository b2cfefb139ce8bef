"""Work split over two processes: the second half of a list (a little more) done by a forked
copy of this one (the machine's other core), its results sent back as msgpack, a chunk at a
time. The same code runs in both; nothing is done differently for being parallel."""

from __future__ import annotations

import gc
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")
R = TypeVar("R")
# Below this many items, forking and sending the results back cost what the second core saves.
PARALLEL_FROM = 5_000
# Items the child sends the results of at a time: this process decodes the first chunks
# while the child works on its last.
CHUNK = 2_000


def in_two(items: Sequence[T], work: Callable[[Sequence[T]], list[R]], kind: Any) -> list[R]:
    """``work(items)``, its second half (a little more) done in a forked process (``kind``:
    the type of one result, for msgpack). What the child does not send (it failed), this
    process does."""
    if len(items) < PARALLEL_FROM or (os.cpu_count() or 1) < 2 or not hasattr(os, "fork"):
        return work(items)
    split = len(items) * 19 // 40  # this process also decodes what the child sends back
    theirs = _forked(items[split:], work, msgspec.msgpack.Decoder(list[kind]))
    mine = work(items[:split])
    return mine + theirs()


def _forked(
    items: Sequence[T],
    work: Callable[[Sequence[T]], list[R]],
    decoder: msgspec.msgpack.Decoder[Any],
) -> Callable[[], list[R]]:
    """Start ``work(items)`` in a forked process, ``CHUNK`` items at a time; the function
    returned takes the results as they come. The child writes them to a file (it never waits
    for this process to read) and each chunk's size to a pipe."""
    sizes, sink = os.pipe()
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by results()
    gc.freeze()  # the collector would write to every object both processes share (copies)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: coverage does not follow it
        status = 1
        try:
            os.close(sizes)
            for start in range(0, len(items), CHUNK):
                data = msgspec.msgpack.encode(work(items[start : start + CHUNK]))
                spool.write(data)
                spool.flush()
                os.write(sink, len(data).to_bytes(8, "big"))
            status = 0
        finally:
            os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
    os.close(sink)

    def results() -> list[R]:
        received: list[R] = []
        offset = 0
        with spool, os.fdopen(sizes, "rb") as notes:
            while len(note := notes.read(8)) == 8:
                size = int.from_bytes(note, "big")
                received += decoder.decode(os.pread(spool.fileno(), size, offset))
                offset += size
        os.waitpid(pid, 0)
        return received + work(items[len(received) :]) if len(received) < len(items) else received

    return results
