"""DynamoDB's size limits, kept by the registry adapter before it sends anything: an item of
at most 400 KB, a transaction of at most 4 MB; and the compact cluster encoding that keeps
the largest hreflang cluster well inside one item (no AWS here: nothing is sent)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import msgspec
import pytest

from sitemap_updater.adapters import registry as registry_module
from sitemap_updater.adapters.registry import (
    MAX_ITEM_BYTES,
    TRANSACTION_BUDGET_BYTES,
    Registry,
    _cluster,
    _members_json,
    item_bytes,
)
from sitemap_updater.domain.clusters import MAX_CLUSTER_MEMBERS, Cluster, Member
from sitemap_updater.domain.errors import InvalidEvent, RetryableError
from sitemap_updater.domain.events import parse_body
from sitemap_updater.domain.placement import ClusterWrite, Commit, plan_commit
from sitemap_updater.domain.records import Pending
from sitemap_updater.domain.sharding import Limits
from sitemap_updater.domain.urls import Site
from tests.rendering import entry_size

SITE = Site.parse("https://www.example.com")


class NoClient:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the registry called DynamoDB ({name}) while sizing")


def registry() -> Registry:
    return Registry("registry", Limits(), client=NoClient())  # type: ignore[arg-type]


def commit(path: str, images: int = 0, image_chars: int = 1) -> Commit:
    """A new page with ``images`` image URLs of non-ASCII text (stored percent-encoded: each
    character of ``image_chars`` becomes nine)."""
    locs = [
        {"loc": f"https://cdn.example.com/{path}/{n}/" + "\u4e2d" * image_chars + ".jpg"}
        for n in range(images)
    ]
    body = {"type": "publish", "url": f"{SITE.origin}/{path}", "version": 1}
    if locs:
        body["images"] = locs
    change = parse_body(json.dumps(body, ensure_ascii=False), SITE, 262_144)
    assert change.entry is not None
    return plan_commit(
        None,
        change,
        entry_size(change.entry),
        open_shard=lambda: "pages-00001",
        tombstone_expires_at=0,
    )


def test_item_bytes_counts_names_and_values_in_utf8() -> None:
    item = {"url": {"S": "https://x/\u00e9"}, "version": {"N": "12"}, "live": {"BOOL": True}}
    # "https://x/" is 10 bytes, "é" 2 in UTF-8
    assert item_bytes(item) == len("url") + 12 + len("version") + 2 + len("live") + 1


class Transactions:
    """A client that keeps each transaction it is sent."""

    def __init__(self) -> None:
        self.sent: list[list[Any]] = []

    def transact_write_items(self, TransactItems: list[Any]) -> dict[str, Any]:
        self.sent.append(TransactItems)
        return {}


def in_shard(planned: Commit, shard: str) -> Commit:
    assert planned.reservation is not None
    return replace(planned, shard=shard, reservation=replace(planned.reservation, shard=shard))


def markers(transaction: list[Any]) -> dict[str, list[str]]:
    """Each pending marker's shard and the URLs it lists."""
    items = [action["Put"]["Item"] for action in transaction if "Put" in action]
    return {
        item["pk"]["S"]: [change[0] for change in json.loads(item["changes"]["S"])]
        for item in items
        if item["sk"]["S"].startswith("PEND#")
    }


@pytest.mark.parametrize("spread", [False, True])
def test_commits_go_together_within_100_actions_with_one_marker_per_shard(spread: bool) -> None:
    commits = [commit(f"p{number}") for number in range(100)]
    if spread:  # each into a shard of its own: a marker and a reservation each
        commits = [in_shard(c, f"pages-{n:05d}") for n, c in enumerate(commits, 1)]
    client = Transactions()
    adapter = Registry("registry", Limits(), client=client)  # type: ignore[arg-type]
    groups = adapter.transactions(commits)
    for group in groups:
        adapter.commit_all(group)
    assert [c for group in groups for c in group] == commits  # in order, each once
    assert all(len(transaction) <= 100 for transaction in client.sent)
    assert len(client.sent) == (4 if spread else 3)  # 25 shards' commits, or 49, a transaction
    for group, transaction in zip(groups, client.sent, strict=True):
        listed = markers(transaction)
        assert len(listed) == len({c.shard for c in group})
        assert sorted(url for urls in listed.values() for url in urls) == sorted(
            c.change.url for c in group
        )


def test_large_entries_are_cut_into_transactions_under_dynamodb_s_4_mb() -> None:
    # ~150 KB items: 32 of them would be ~4.8 MB, which DynamoDB refuses whole.
    commits = [commit(f"big{number}", images=80, image_chars=200) for number in range(32)]
    adapter = registry()
    sizes = [
        sum(item_bytes(a["Put"]["Item"]) for a in adapter._record_actions(c) if "Put" in a)
        for c in commits
    ]
    assert min(sizes) > 100_000
    assert max(sizes) < MAX_ITEM_BYTES
    assert sum(sizes) > 4 * 1024 * 1024
    groups = adapter.transactions(commits)
    assert len(groups) > 1
    assert [c for group in groups for c in group] == commits
    by_commit = dict(zip((id(c) for c in commits), sizes, strict=True))
    for group in groups:
        assert sum(by_commit[id(c)] for c in group) <= TRANSACTION_BUDGET_BYTES


def test_an_entry_no_item_can_hold_is_rejected_and_travels_alone() -> None:
    # 360 image URLs of 220 CJK characters: a message under 256 KiB, an item over 400 KB.
    too_large = commit("huge", images=360, image_chars=220)
    with pytest.raises(InvalidEvent) as rejected:
        registry()._record_actions(too_large)
    assert rejected.value.code == "entry_too_large"
    assert "registry item holds" in rejected.value.detail
    small = [commit("a"), commit("b")]
    groups = registry().transactions([small[0], too_large, small[1]])
    assert groups == [[too_large], [small[0], small[1]]]


def locale_cluster(languages: int, path_chars: int) -> Cluster:
    """A page in ``languages`` locales, each declaring every one (long URLs)."""
    tail = "p" * path_chars
    urls = {f"l{n:02d}": f"{SITE.origin}/l{n:02d}/{tail}" for n in range(languages)}
    pairs = tuple(sorted(urls.items()))
    members = {
        url: Member(lang=lang, declares=pairs, live=True, shard="pages-00001", base=200)
        for lang, url in urls.items()
    }
    return Cluster(cid="c1", version=3, members=members)


def test_a_cluster_reads_back_as_it_was_written() -> None:
    cluster = locale_cluster(5, 20)
    stranger = f"{SITE.origin}/not-a-member"  # not written as a position
    first = next(iter(cluster.all))
    members = dict(cluster.all)
    members[first] = msgspec.structs.replace(
        members[first], declares=((*members[first].declares, ("x", stranger)))
    )
    cluster = replace(cluster, members=members)
    item = {"version": {"N": "3"}, "members": {"S": _members_json(cluster)}}
    assert _cluster("c1", item) == cluster


def test_the_largest_cluster_of_long_urls_fits_an_item_with_room_to_spare() -> None:
    # 64 locales (the most a cluster holds), 200-character URLs, each declaring all 64:
    # written out in full that is ~900 KB, which DynamoDB refuses.
    cluster = locale_cluster(MAX_CLUSTER_MEMBERS, 170)
    write = ClusterWrite(cluster=cluster, expected=2)
    actions = registry()._cluster_actions(write)
    assert item_bytes(actions[0]["Put"]["Item"]) < MAX_ITEM_BYTES // 4
    in_full = sum(len(json.dumps(list(m.declares))) for m in cluster.all.values())
    assert in_full > MAX_ITEM_BYTES


def test_a_cluster_no_item_can_hold_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "MAX_ITEM_BYTES", 1_000)
    write = ClusterWrite(cluster=locale_cluster(8, 40), expected=None)
    with pytest.raises(InvalidEvent) as rejected:
        registry()._cluster_actions(write)
    assert rejected.value.code == "cluster_too_large"


def test_a_batch_left_unprocessed_backs_off_between_attempts_not_after_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Throttled:
        def batch_write_item(self, RequestItems: Any) -> dict[str, Any]:
            return {"UnprocessedItems": RequestItems}

    sleeps: list[float] = []
    monkeypatch.setattr(registry_module.time, "sleep", sleeps.append)
    throttled = Registry("t", Limits(), Throttled())  # type: ignore[arg-type]
    with pytest.raises(RetryableError, match="UnprocessedItems left"):
        throttled.mark_pending(["pages-00001"], Pending("u", "1", None, None))
    assert sleeps == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]  # 8 attempts, 7 pauses
