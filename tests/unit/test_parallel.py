"""build's split over two processes gives what one process gives, even if the child fails."""

from __future__ import annotations

import os
from collections.abc import Sequence

from sitemap_updater.ops.parallel import CHUNK, PARALLEL_FROM, in_two

ITEMS = list(range(PARALLEL_FROM + 3 * CHUNK + 7))  # the child's half: several chunks and a rest


def doubled(items: Sequence[int]) -> list[int]:
    return [item * 2 for item in items]


def test_the_two_halves_give_the_results_in_order() -> None:
    assert in_two(ITEMS, doubled, int) == doubled(ITEMS)


def test_what_a_failed_child_did_not_send_is_done_here() -> None:
    parent = os.getpid()
    failing_from = len(ITEMS) // 2 + CHUNK + 1  # inside the child's second chunk

    def fails_in_the_child(items: Sequence[int]) -> list[int]:
        if os.getpid() != parent and failing_from in items:
            raise RuntimeError("the child fails")
        return doubled(items)

    assert in_two(ITEMS, fails_in_the_child, int) == doubled(ITEMS)
