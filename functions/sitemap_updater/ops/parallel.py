"""Work split over two processes: this one and a forked copy of it (the machine's other core)
take chunks of a list from its two ends until they meet, so that neither waits for the other
however their speeds differ; the copy sends its results back as msgpack. The same code runs in
both; nothing is done differently for being parallel."""

from __future__ import annotations

import gc
import mmap
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")
R = TypeVar("R")
# Below this many items, forking and sending the results back cost what the second core saves.
PARALLEL_FROM = 5_000
# Items a process takes at a time: small enough that the two meet within a few milliseconds.
CHUNK = 1_000
_FRONT, _BACK = 0, 1  # the next chunk this process takes; the last one the child took
_NOTE = 16  # a chunk the child sent: its number and its size in the spool file
# Notes read at once: a whole number of them, and each is written whole (under PIPE_BUF), so
# a read never splits one.
_NOTES = 255 * _NOTE


def in_two(
    items: Sequence[T],
    work: Callable[[Sequence[T]], list[R]],
    kind: Any,
    advance: Callable[[int], object],
) -> list[R]:
    """``work(items)``, in chunks, some of them done in a forked process (``kind``: the type of
    one result, for msgpack); ``advance(n)`` as n more are done, for a progress bar. What the
    child does not send (it failed), this process does."""
    if len(items) < PARALLEL_FROM or (os.cpu_count() or 1) < 2 or not hasattr(os, "fork"):
        results = work(items)
        advance(len(items))
        return results
    chunks = [items[start : start + CHUNK] for start in range(0, len(items), CHUNK)]
    # Each process claims a chunk before it looks at the other's end: at worst both stop
    # short of the same chunk (done here afterwards), or both do one (ours is kept).
    ends = memoryview(mmap.mmap(-1, 16)).cast("q")  # shared with the fork, not copied
    ends[_FRONT], ends[_BACK] = 0, len(chunks)
    notes, spool, pid = _forked(chunks, work, ends)
    decoder = msgspec.msgpack.Decoder(list[kind])
    done: dict[int, list[R]] = {}
    try:
        with spool, os.fdopen(notes, "rb", buffering=0) as pipe:
            os.set_blocking(notes, False)
            offset = 0
            while (chunk := ends[_FRONT]) < len(chunks):
                ends[_FRONT] = chunk + 1
                if chunk >= ends[_BACK]:
                    break
                done[chunk] = work(chunks[chunk])
                advance(len(chunks[chunk]))
                offset = _receive(pipe, spool, decoder, offset, done=done, advance=advance)
            os.set_blocking(notes, True)
            _receive(pipe, spool, decoder, offset, done=done, advance=advance)
    finally:
        ends[_FRONT] = len(chunks)  # the child stops at its next chunk
        os.waitpid(pid, 0)
    for n in set(range(len(chunks))) - done.keys():
        done[n] = work(chunks[n])
        advance(len(chunks[n]))
    return [result for n in range(len(chunks)) for result in done[n]]


def _forked(
    chunks: list[Sequence[T]], work: Callable[[Sequence[T]], list[R]], ends: memoryview
) -> tuple[int, Any, int]:
    """Start a forked process that does chunks from the end, down to where this one is; it
    writes the results to a file (it never waits for this process to read) and a note of
    each to a pipe. Returns the pipe's end to read, the file and the child's pid."""
    notes, sink = os.pipe()
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by in_two
    gc.freeze()  # the collector would write to every object both processes share (copies)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: coverage does not follow it
        status = 1
        try:
            os.close(notes)
            while (chunk := ends[_BACK] - 1) >= 0:
                ends[_BACK] = chunk
                if chunk < ends[_FRONT]:
                    break
                data = msgspec.msgpack.encode(work(chunks[chunk]))
                spool.write(data)
                spool.flush()
                os.write(sink, chunk.to_bytes(8, "big") + len(data).to_bytes(8, "big"))
            status = 0
        finally:
            os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
    os.close(sink)
    return notes, spool, pid


def _receive(
    pipe: Any,
    spool: Any,
    decoder: msgspec.msgpack.Decoder[Any],
    at: int,
    *,
    done: dict[int, Any],
    advance: Callable[[int], object],
) -> int:
    """Decode the chunks the child notes, those this process did not do itself: the ones
    noted so far if the pipe does not block, else all until the child ends. Returns the
    offset in the spool after them."""
    while read := pipe.read(_NOTES):  # None: nothing more for now (non-blocking)
        for start in range(0, len(read), _NOTE):
            chunk = int.from_bytes(read[start : start + 8], "big")
            size = int.from_bytes(read[start + 8 : start + _NOTE], "big")
            if chunk not in done:
                done[chunk] = decoder.decode(os.pread(spool.fileno(), size, at))
                advance(len(done[chunk]))
            at += size
    return at
