"""Ingest's batched path (``Ingest`` / ``ApplyChange.apply_plain``): the same outcomes and
the same registry as applying each event on its own, in far fewer requests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_updater.domain.clusters import Cluster, Member
from sitemap_updater.domain.errors import ConcurrentChange, RetryableError
from sitemap_updater.domain.events import PageChange, parse_body
from sitemap_updater.domain.placement import (
    ClusterWrite,
    Commit,
    combined_reservations,
    plan_commit,
)
from sitemap_updater.domain.sharding import Limits, Reservation
from sitemap_updater.domain.urls import Site
from sitemap_updater.usecases.ingest import ApplyChange, Ingest, Outcome
from sitemap_updater.usecases.ports import Message
from tests.conftest import FakeClock
from tests.fakes import COMMITS_TOGETHER, MemoryRegistry
from tests.rendering import entry_size

SITE = Site.parse("https://www.example.com")


@dataclass
class Rebuilds:
    requested: list[dict[str, list[str]]] = field(default_factory=list)
    dead: list[tuple[str, str]] = field(default_factory=list)

    def request_rebuilds(self, requests: Mapping[str, Sequence[str]]) -> None:
        self.requested.append({shard: list(ids) for shard, ids in requests.items()})

    def dead_letter(self, body: str, code: str, reason: str, source_message_id: str) -> None:
        self.dead.append((source_message_id, code))


class CountingRegistry(MemoryRegistry):
    """Counts the calls that are requests on DynamoDB."""

    def __init__(self, limits: Limits):
        super().__init__(limits)
        self.calls: list[str] = []

    def url_state(self, url: str) -> Any:
        self.calls.append("url_state")
        return super().url_state(url)

    def url_states(self, urls: Sequence[str]) -> Any:
        self.calls.append("url_states")
        calls, self.calls = self.calls, []  # one BatchGetItem, however the fake reads
        try:
            return super().url_states(urls)
        finally:
            self.calls = calls

    def commit(self, commit: Commit) -> None:
        self.calls.append("commit")
        super().commit(commit)

    def commit_all(self, commits: Sequence[Commit]) -> None:
        self.calls.append("commit_all")
        # One transaction: MemoryRegistry applies it through commit(), not a request each.
        calls, self.calls = self.calls, []
        try:
            super().commit_all(commits)
        finally:
            self.calls = calls


def make_batch(registry: MemoryRegistry) -> tuple[Ingest, Rebuilds]:
    rebuilds = Rebuilds()
    apply = ApplyChange(registry, registry.limits, 100, FakeClock())
    return Ingest(SITE, 262_144, apply, rebuilds), rebuilds


def outcomes_of(ingest: Ingest, messages: Sequence[tuple[str, str]]) -> list[Outcome]:
    results = ingest([Message(message_id, body) for message_id, body in messages])
    return [results[message_id].outcome for message_id, _ in messages]


def publish(path: str, version: int, **fields: Any) -> str:
    return json.dumps(
        {"type": "publish", "url": f"{SITE.origin}{path}", "version": version, **fields}
    )


def unpublish(path: str, version: int) -> str:
    return json.dumps({"type": "unpublish", "url": f"{SITE.origin}{path}", "version": version})


def run(registry: MemoryRegistry, bodies: Sequence[str], *, batched: bool) -> list[Outcome]:
    """One invocation for them all, or one each (a message alone is applied on its own)."""
    batch, _ = make_batch(registry)
    messages = [(str(number), body) for number, body in enumerate(bodies)]
    if batched:
        return outcomes_of(batch, messages)
    return [outcome for message in messages for outcome in outcomes_of(batch, [message])]


def snapshot(registry: MemoryRegistry) -> tuple[Any, ...]:
    return (
        {url: (stored.record, stored.cluster) for url, stored in registry.urls.items()},
        {shard: dict(entries) for shard, entries in registry.entries.items() if entries},
        {shard: room for shard, room in registry.capacity.items() if room != (0, 0)},
        dict(registry.open),
        dict(registry.cluster_records),
    )


def test_a_burst_of_new_pages_costs_one_read_and_one_write_per_transaction() -> None:
    registry = CountingRegistry(Limits())
    bodies = [publish(f"/p{number}", 1) for number in range(100)]
    assert run(registry, bodies, batched=True) == [Outcome.APPLIED] * 100
    transactions = -(-100 // COMMITS_TOGETHER)
    assert registry.calls == ["url_states"] + ["commit_all"] * transactions
    assert len(registry.entries["pages-00001"]) == 100
    assert registry.capacity["pages-00001"][0] == 100


def test_the_rebuild_requests_name_every_message_of_the_shard() -> None:
    registry = MemoryRegistry(Limits())
    batch, rebuilds = make_batch(registry)
    messages = [(f"m{number}", publish(f"/p{number}", 1)) for number in range(5)]
    outcomes_of(batch, messages)
    assert rebuilds.requested == [{"pages-00001": [f"m{number}" for number in range(5)]}]


def test_a_url_given_twice_in_a_batch_is_applied_in_message_order() -> None:
    registry = CountingRegistry(Limits())
    bodies = [publish("/a", 2), publish("/b", 1), publish("/a", 1), publish("/c", 1)]
    assert run(registry, bodies, batched=True) == [
        Outcome.APPLIED,
        Outcome.APPLIED,
        Outcome.STALE,
        Outcome.APPLIED,
    ]
    assert registry.get_url(f"{SITE.origin}/a").version == Decimal(2)  # type: ignore[union-attr]


def test_rejected_messages_are_dead_lettered_and_the_rest_go_together() -> None:
    registry = CountingRegistry(Limits())
    batch, rebuilds = make_batch(registry)
    messages = [
        ("1", publish("/a", 1)),
        ("2", publish("/b", 1, priority=7)),
        ("3", "not json"),
        ("4", publish("/c", 1)),
    ]
    outcomes = outcomes_of(batch, messages)
    assert outcomes == [Outcome.APPLIED, Outcome.REJECTED, Outcome.REJECTED, Outcome.APPLIED]
    assert [message_id for message_id, _ in rebuilds.dead] == ["2", "3"]
    assert registry.calls == ["url_states", "commit_all"]


def test_a_page_in_an_hreflang_cluster_is_applied_on_its_own() -> None:
    registry = CountingRegistry(Limits())
    alternates = [{"hreflang": "de", "href": f"{SITE.origin}/de/a"}]
    bodies = [publish("/a", 1, hreflang="en", alternates=alternates), publish("/b", 1)]
    assert run(registry, bodies, batched=True) == [Outcome.APPLIED, Outcome.APPLIED]
    assert registry.calls.count("commit") == 1  # the cluster page: its own transaction
    assert registry.calls.count("commit_all") == 1  # with /b alone in it
    assert registry.get_url(f"{SITE.origin}/a").shard == "pages-00001"  # type: ignore[union-attr]


def test_a_record_changed_since_the_read_sends_the_batch_one_by_one() -> None:
    registry = MemoryRegistry(Limits())
    rival = ApplyChange(registry, registry.limits, 100, FakeClock())
    batch, _ = make_batch(registry)
    messages = [("1", publish("/a", 1)), ("2", publish("/b", 1))]
    original = registry.commit_all

    def raced(commits: Sequence[Commit]) -> None:
        rival(run_change("/a", 5))  # a newer version lands between the read and the write
        original(commits)

    registry.commit_all = raced  # type: ignore[method-assign]
    outcomes = outcomes_of(batch, messages)
    assert outcomes == [Outcome.STALE, Outcome.APPLIED]  # nothing lost, nothing regressed
    assert registry.get_url(f"{SITE.origin}/a").version == Decimal(5)  # type: ignore[union-attr]


def run_change(path: str, version: int) -> PageChange:
    return parse_body(publish(path, version), SITE, 262_144)


def test_a_shard_too_full_for_the_whole_batch_is_filled_exactly_one_by_one() -> None:
    limits = Limits(max_urls_per_shard=3)
    sequential, batched = MemoryRegistry(limits), MemoryRegistry(limits)
    bodies = [publish(f"/p{number}", 1) for number in range(7)]
    assert run(batched, bodies, batched=True) == run(sequential, bodies, batched=False)
    assert snapshot(batched) == snapshot(sequential)
    assert {shard: len(entries) for shard, entries in batched.entries.items()} == {
        "pages-00001": 3,
        "pages-00002": 3,
        "pages-00003": 1,
    }


def test_any_failure_of_the_batched_path_leaves_each_event_to_be_applied_alone() -> None:
    registry = MemoryRegistry(Limits())

    def unavailable(urls: Sequence[str]) -> Any:
        raise RetryableError("registry throttled")

    registry.url_states = unavailable  # type: ignore[method-assign]
    bodies = [publish(f"/p{number}", 1) for number in range(3)]
    assert run(registry, bodies, batched=True) == [Outcome.APPLIED] * 3
    assert len(registry.entries["pages-00001"]) == 3


def test_a_failed_transaction_keeps_the_outcomes_of_the_ones_committed_before_it() -> None:
    registry = MemoryRegistry(Limits())
    original = registry.commit_all
    calls: list[int] = []

    def second_refused(commits: Sequence[Commit]) -> None:
        calls.append(len(commits))
        if len(calls) == 2:  # e.g. DynamoDB refusing the request: not a domain outcome
            raise RuntimeError("ValidationException (injected)")
        original(commits)

    registry.commit_all = second_refused  # type: ignore[method-assign]
    count = COMMITS_TOGETHER + 8
    bodies = [publish(f"/p{number}", 1) for number in range(count)]
    # The first transaction's events were applied by it (not found "duplicate" afterwards:
    # IndexNow hears of applied changes only); the second's were applied one by one.
    assert run(registry, bodies, batched=True) == [Outcome.APPLIED] * count
    assert calls == [COMMITS_TOGETHER, 8]
    assert len(registry.entries["pages-00001"]) == count


def test_an_all_or_nothing_transaction_leaves_nothing_behind_when_it_fails() -> None:
    registry = MemoryRegistry(Limits())
    run(registry, [publish("/a", 3)], batched=False)
    before = snapshot(registry)
    new_cluster = ClusterWrite(Cluster("cluster-b", 1, {f"{SITE.origin}/b": Member("en")}), None)
    commits = [
        replace(registry_commit(publish("/b", 1)), cluster=new_cluster),
        registry_commit(publish("/a", 4), expected=Decimal(2)),  # it holds 3
    ]
    with pytest.raises(ConcurrentChange):
        registry.commit_all(commits)
    assert snapshot(registry) == before


def registry_commit(body: str, expected: Decimal | None = None) -> Commit:
    change = parse_body(body, SITE, 262_144)
    assert change.entry is not None
    commit = plan_commit(
        None,
        change,
        entry_size(change.entry),
        open_shard=lambda: "pages-00001",
        tombstone_expires_at=0,
    )
    return replace(commit, expected_version=expected) if expected is not None else commit


def test_reservations_are_summed_per_shard() -> None:
    def commit(shard: str, slots: int, size: int) -> Commit:
        return Commit(
            change=run_change(f"/{shard}{slots}{size}", 1),
            expected_version=None,
            shard=shard,
            previous_shard=None,
            reservation=Reservation(shard, slots, size, 100),
            reserved=size,
            tombstone_expires_at=None,
        )

    combined = combined_reservations(
        [commit("pages-00001", 1, 100), commit("news-00001", 1, 50), commit("pages-00001", 0, 7)]
    )
    assert combined == [
        Reservation("pages-00001", 1, 107, 100),
        Reservation("news-00001", 1, 50, 100),
    ]


paths = st.sampled_from(["/a", "/b", "/c", "/d", "/e"])
events = st.lists(
    st.tuples(st.booleans(), paths, st.integers(1, 4), st.sampled_from([None, "2026-11-20"])),
    max_size=24,
)


@settings(max_examples=150, deadline=None)
@given(history=events, burst=events, shard_size=st.integers(1, 4))
def test_batched_and_one_by_one_give_the_same_outcomes_and_registry(
    history: list[tuple[bool, str, int, str | None]],
    burst: list[tuple[bool, str, int, str | None]],
    shard_size: int,
) -> None:
    def body(live: bool, path: str, version: int, lastmod: str | None) -> str:
        if not live:
            return unpublish(path, version)
        return publish(path, version, **({"lastmod": lastmod} if lastmod else {}))

    limits = Limits(max_urls_per_shard=shard_size)
    sequential, batched = MemoryRegistry(limits), MemoryRegistry(limits)
    for registry in (sequential, batched):
        run(registry, [body(*event) for event in history], batched=False)
    bodies = [body(*event) for event in burst]
    assert run(batched, bodies, batched=True) == run(sequential, bodies, batched=False)
    # A URL given twice in the burst is applied after the others, so new pages may take
    # their slots in another order: the same pages, versions and entries, each placed once,
    # no shard over its limit.
    assert placed(batched) == placed(sequential)
    for slots, _bytes in batched.capacity.values():
        assert slots <= shard_size


def placed(registry: MemoryRegistry) -> tuple[Any, ...]:
    records = {
        url: (stored.record.version, stored.record.live, stored.record.shard is not None)
        for url, stored in registry.urls.items()
        if stored.record is not None
    }
    entries = sorted(
        (url, entry) for shard in registry.entries.values() for url, (entry, _) in shard.items()
    )
    in_shards = [url for url, _ in entries]
    assert len(in_shards) == len(set(in_shards))  # each page in one shard at most
    for url, (_version, live, has_shard) in records.items():
        assert (url in in_shards) == live or not has_shard
    return records, entries


def test_a_fault_that_may_pass_fails_only_its_own_message() -> None:
    registry = MemoryRegistry(Limits(), flaky={f"{SITE.origin}/b": 2})  # batched, then alone
    batch, rebuilds = make_batch(registry)
    bodies = [("a", publish("/a", 1)), ("b", publish("/b", 1)), ("c", publish("/c", 1))]
    results = batch([Message(message_id, body) for message_id, body in bodies])
    assert [results[m].outcome for m in "abc"] == [Outcome.APPLIED, Outcome.FAILED, Outcome.APPLIED]
    with pytest.raises(RetryableError, match="throttled"):
        results["b"].value_or_raise()
    assert rebuilds.requested == [{"pages-00001": ["a", "c"]}]


def test_a_dead_letter_that_cannot_be_sent_fails_its_message() -> None:
    registry = MemoryRegistry(Limits())
    batch, rebuilds = make_batch(registry)

    def refused(body: str, code: str, reason: str, source_message_id: str) -> None:
        raise RetryableError("the dead-letter queue is unavailable")

    rebuilds.dead_letter = refused  # type: ignore[method-assign]
    results = batch([Message("1", "not json"), Message("2", publish("/a", 1))])
    assert (results["1"].outcome, results["2"].outcome) == (Outcome.FAILED, Outcome.APPLIED)
    with pytest.raises(RetryableError, match="dead-letter"):
        results["1"].value_or_raise()


def test_an_unpublish_by_id_at_the_published_version_tells_no_one_the_page_went() -> None:
    """It is a duplicate and changes nothing: the feed and IndexNow must not hear the live
    page went, even where a duplicate may be the event's own (a batch that went together)."""
    registry = MemoryRegistry(Limits())
    ingest, _ = make_batch(registry)
    told: list[dict[str, Any]] = []
    ingest.feed = lambda entries, applied, replayed: told.append(dict(entries))  # type: ignore[assignment]
    page = f"{SITE.origin}/a"
    ingest([Message("m1", publish("/a", 5, id="42"))])
    gone = json.dumps({"type": "unpublish", "id": "42", "version": 5})
    results = ingest(
        [Message("m2", gone), Message("m3", publish("/x", 1)), Message("m4", publish("/y", 1))]
    )

    assert results["m2"].outcome is Outcome.DUPLICATE
    record = registry.url_state(page).record
    assert record is not None
    assert record.live
    assert page not in told[-1]
