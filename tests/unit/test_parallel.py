"""build's split over two processes gives what one process gives, whichever process is the
faster, and even if the child fails."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from sitemap_updater.ops.parallel import CHUNK, PARALLEL_FROM, in_two

ITEMS = list(range(PARALLEL_FROM + 3 * CHUNK + 7))  # several chunks and a rest
PARENT = os.getpid()


def doubled(items: Sequence[int]) -> list[int]:
    return [item * 2 for item in items]


def test_the_chunks_give_the_results_in_order_and_each_is_counted_once() -> None:
    advanced: list[int] = []
    assert in_two(ITEMS, doubled, int, advanced.append) == doubled(ITEMS)
    assert sum(advanced) == len(ITEMS)
    assert len(advanced) > 1  # as chunks are done, not all at the end


def test_a_short_list_is_done_here_at_once() -> None:
    advanced: list[int] = []
    assert in_two(ITEMS[:10], doubled, int, advanced.append) == doubled(ITEMS[:10])
    assert advanced == [10]


def test_a_slow_parent_leaves_more_chunks_to_the_child() -> None:
    def tagged(items: Sequence[int]) -> list[tuple[int, int]]:
        if os.getpid() == PARENT:
            time.sleep(0.02)  # the child, not held back, takes the chunks this one does not
        return [(item * 2, os.getpid()) for item in items]

    results = in_two(ITEMS, tagged, tuple[int, int], lambda _: None)
    assert [value for value, _ in results] == doubled(ITEMS)
    by_child = [value for value, pid in results if pid != PARENT]
    assert len(by_child) > len(ITEMS) * 3 // 4  # not a fixed half
    assert by_child == doubled(ITEMS)[-len(by_child) :]  # from the end, in one run


def test_what_a_failed_child_did_not_send_is_done_here() -> None:
    def fails_in_the_child(items: Sequence[int]) -> list[int]:
        if os.getpid() != PARENT:
            raise RuntimeError("the child fails")
        time.sleep(0.02)  # the child has started, and failed, before this one is done
        return doubled(items)

    advanced: list[int] = []
    assert in_two(ITEMS, fails_in_the_child, int, advanced.append) == doubled(ITEMS)
    assert sum(advanced) == len(ITEMS)
