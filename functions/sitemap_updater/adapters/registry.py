"""The URL registry in DynamoDB: the source of truth every S3 object is derived from.

One table, string keys ``pk``/``sk``, TTL attribute ``expires_at``; items by (pk, sk):

- ``URL#<url>``, ``URL``: newest version, live or tombstone, shard, reserved and base size,
  hreflang cluster pointer
- ``SHARD#<shard>``, ``URL#<url>``: a live entry (fields to render, extensions as JSON, cluster)
- ``SHARD#<shard>``, ``#CAPACITY``: slots and bytes reserved in the shard
- ``SHARD#<shard>``, ``PEND#<id>``: a pending marker, one per transaction and shard: the
  changes it committed there, not yet applied to the shard's object (each: url, version,
  SQS sent time, cluster)
- ``GROUP#<group>``, ``#OPEN``: the group's open shard number
- ``CLUSTER#<id>``, ``CLUSTER``: an hreflang cluster's members (languages, declarations,
  placement) and the version it was last settled at, or a redirect to the cluster it was
  merged into
- ``ENTITY#<id>``, ``ENTITY``: a CMS entity's newest version and URL (and the URL it moved from)
- ``SHARDS``, ``<shard>``: the shard's published object (ShardOutput), when last reconciled
- ``INDEXES``, ``<key>``: a published index file (IndexOutput)
- ``FEED``, ``FEED``: the feed of recent changes (Feed), as JSON

A shard's entries share one partition: a strongly consistent Query sees every commit made
before it (no GSI lag). An event's commit is one transaction, each write conditional on what
it was planned against (record version and cluster pointer, cluster and entity versions,
the shard's room), with a pending marker in each shard it touches. URLs over 1,000
characters are keyed by a prefix and their SHA-256 (DynamoDB's key limit). The index
``by-shard`` (partition key: a URL record's ``shard``) lets the reconciler check a shard's
records against its entries.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from botocore.exceptions import ClientError

from sitemap_updater.domain.clusters import MAX_REDIRECTS, Cluster, Member, too_many_redirects
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import ConcurrentChange, InvalidEvent, RetryableError, ShardFull
from sitemap_updater.domain.feed import Feed
from sitemap_updater.domain.placement import (
    ClusterWrite,
    Commit,
    EntityWrite,
    combined_reservations,
)
from sitemap_updater.domain.records import (
    EntityRecord,
    IndexOutput,
    ObjectState,
    Pending,
    ShardOutput,
    UrlRecord,
    UrlState,
)
from sitemap_updater.domain.sharding import Limits, Reservation, parse_shard_id, shard_id
from sitemap_updater.usecases.retry import retry

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]
T = TypeVar("T")
TTL_ATTRIBUTE = "expires_at"
PARTITION_KEY = "pk"
SORT_KEY = "sk"
SHARD_INDEX = "by-shard"  # URL records by their ``shard`` (projected: url, live)
SHARD_ATTRIBUTE = "shard"
_KEY_LIMIT = 1000
# Throttling, as a transaction's cancellation reason or as the whole request's error code.
_THROTTLED = {
    "ThrottlingError",
    "ThrottlingException",
    "ProvisionedThroughputExceeded",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
}
# DynamoDB refuses an item over 400 KB (attribute names included) and a transaction whose
# items add up to over 4 MB. Transactions are cut well below that: item_bytes is an upper
# bound for what it counts, and a deleted item's size is not known here.
MAX_ITEM_BYTES = 400 * 1024
TRANSACTION_BUDGET_BYTES = 3 * 1024 * 1024
MAX_ACTIONS = 100  # DynamoDB's limit for one transaction


def item_bytes(item: Item) -> int:
    """An upper bound of an item's size as DynamoDB counts it: each attribute's name and
    value in UTF-8 (a number counted by its characters, more than DynamoDB's packed form)."""
    total = 0
    for name, value in item.items():
        total += len(name.encode())
        for kind, inner in value.items():
            total += 1 if kind in ("BOOL", "NULL") else len(str(inner).encode())
    return total


def url_token(url: str) -> str:
    """The URL as a key: itself, or a prefix and its SHA-256 when it is too long for a key."""
    if len(url) <= _KEY_LIMIT:
        return url
    return f"{url[:900]}#{hashlib.sha256(url.encode()).hexdigest()}"


def _key(pk: str, sk: str) -> Item:
    return {PARTITION_KEY: {"S": pk}, SORT_KEY: {"S": sk}}


_FEED = _key("FEED", "FEED")
_BATCH_ATTEMPTS = 8
_CLUSTER = {"#cluster": "cluster"}  # a reserved word in DynamoDB's expressions


def url_key(url: str) -> Item:
    return _key(f"URL#{url_token(url)}", "URL")


def cluster_key(cid: str) -> Item:
    return _key(f"CLUSTER#{cid}", "CLUSTER")


def entry_key(shard: str, url: str) -> Item:
    return _key(f"SHARD#{shard}", f"URL#{url_token(url)}")


def entity_key(entity: str) -> Item:
    return _key(f"ENTITY#{entity}", "ENTITY")


def capacity_key(shard: str) -> Item:
    return _key(f"SHARD#{shard}", "#CAPACITY")


def pending_key(shard: str, marker: str) -> Item:
    return _key(f"SHARD#{shard}", f"PEND#{marker}")


@dataclass
class Registry:
    """DynamoDB adapter. Conditional failures become domain outcomes; the rest is raised."""

    table: str
    limits: Limits
    client: DynamoDBClient

    def url_state(self, url: str) -> UrlState:
        """The URL's record and its cluster pointer (strongly consistent)."""
        return _url_state(self._get(url_key(url)))

    def url_states(self, urls: Sequence[str]) -> dict[str, UrlState]:
        """Several URLs' records and pointers (BatchGetItem, strongly consistent)."""
        items = self._batch_get([url_key(url) for url in urls])
        found = {item[PARTITION_KEY]["S"].removeprefix("URL#"): item for item in items}
        return {url: _url_state(found.get(url_token(url))) for url in urls}

    def clusters(self, cids: Iterable[str]) -> dict[str, Cluster]:
        """Each cluster asked for, following redirects left by merges to the live record
        (at most ``MAX_REDIRECTS``: beyond, RetryableError, never a cluster left out)."""
        wanted = set(cids)
        found: dict[str, Item] = {}
        pending = wanted
        for _ in range(MAX_REDIRECTS + 1):  # the ids asked for, then one read per redirect
            items = self._batch_get([cluster_key(c) for c in sorted(pending)])
            found.update(
                (item[PARTITION_KEY]["S"].removeprefix("CLUSTER#"), item) for item in items
            )
            pending = {item["redirect"]["S"] for item in items if "redirect" in item} - set(found)
        result = {}
        for cid in wanted:
            final = cid
            for _ in range(MAX_REDIRECTS + 1):
                if "redirect" not in found.get(final, {}):
                    break
                final = found[final]["redirect"]["S"]
            else:
                raise too_many_redirects(cid)
            if final in found:
                result[cid] = _cluster(final, found[final])
        return result

    def entry(self, shard: str, url: str) -> SitemapEntry | None:
        """One stored entry (its fields as published; alternates are derived, not stored)."""
        item = self._get(entry_key(shard, url))
        return _entry(item)[0] if item else None

    def entity(self, entity: str) -> EntityRecord | None:
        item = self._get(entity_key(entity))
        return _load(EntityRecord, item, url=None, left=None) if item else None

    def stale_entries(self, records: Sequence[UrlRecord]) -> set[str]:
        """The URLs of these live records whose entry is missing, or is not their version's
        (restored by the reconciler without the event's fields)."""
        keys = [entry_key(r.shard, r.url) for r in records if r.live and r.shard is not None]
        current = {
            (item["url"]["S"], Decimal(item["version"]["N"]))
            for item in self._batch_get(keys)
            if "version" in item
        }
        return {r.url for r in records if r.live and r.shard and (r.url, r.version) not in current}

    def unlinked(self, entries: Iterable[tuple[str, str]]) -> set[str]:
        """Of these (URL, shard) entries, the URLs whose entry names no hreflang cluster."""
        items = self._batch_get([entry_key(shard, url) for url, shard in entries])
        return {item["url"]["S"] for item in items if "cluster" not in item}

    def placed_live(self, shard: str) -> set[str]:
        """The URLs whose live record places them in ``shard`` (the by-shard index: eventually
        consistent; check each one found with url_state)."""
        items = self._query(
            "#shard = :shard",
            {":shard": {"S": shard}},
            IndexName=SHARD_INDEX,
            ExpressionAttributeNames={"#shard": SHARD_ATTRIBUTE},
        )
        return {item["url"]["S"] for item in items if item.get("live", {}).get("BOOL")}

    def shard_entries(self, shard: str) -> list[tuple[SitemapEntry, str | None]]:
        """The shard's live entries and their clusters (strongly consistent), in URL order."""
        entries = map(_entry, self._partition(f"SHARD#{shard}", "URL#"))
        return sorted(entries, key=lambda pair: pair[0].url)

    def entries(
        self, shard: str, urls: Sequence[str]
    ) -> dict[str, tuple[SitemapEntry, str | None]]:
        """Those of ``urls`` that have a live entry in the shard, and their clusters
        (BatchGetItem, strongly consistent)."""
        pairs = map(_entry, self._batch_get([entry_key(shard, url) for url in urls]))
        return {entry.url: (entry, cid) for entry, cid in pairs}

    def pending(self, shard: str) -> list[Pending]:
        """The shard's changes not yet applied to its object, each naming the marker that
        lists it (strongly consistent)."""
        return [
            Pending(url, version, sent, cluster, item[SORT_KEY]["S"].removeprefix("PEND#"))
            for item in self._partition(f"SHARD#{shard}", "PEND#")
            for url, version, sent, cluster in json.loads(item["changes"]["S"])
        ]

    def capacities(self, shards: Sequence[str]) -> dict[str, tuple[int, int]]:
        """(slots, reserved bytes) of each shard (BatchGetItem)."""
        found = dict.fromkeys(shards, (0, 0))
        for item in self._batch_get([capacity_key(shard) for shard in found]):
            plain = _plain(item)
            shard = plain[PARTITION_KEY].removeprefix("SHARD#")
            found[shard] = int(plain.get("slots", 0)), int(plain.get("reserved_bytes", 0))
        return found

    def open_shard(self, group: str) -> str:
        item = self._get(_key(f"GROUP#{group}", "#OPEN"))
        return shard_id(group, int(item["number"]["N"]) if item else 1)

    def shard_output(self, shard: str) -> ShardOutput:
        return _shard_output(shard, self._get(_key("SHARDS", shard)))

    def shard_outputs(self) -> list[ShardOutput]:
        return [_shard_output(item[SORT_KEY]["S"], item) for item in self._partition("SHARDS")]

    def index_outputs(self) -> dict[str, IndexOutput]:
        return {o.key: o for o in map(_index_output, self._partition("INDEXES"))}

    def index_and_shards(
        self, key: str, shards: Sequence[str]
    ) -> tuple[IndexOutput | None, list[ShardOutput]]:
        """An index file's record and the records of ``shards``, in one BatchGetItem."""
        keys = [_key("INDEXES", key), *(_key("SHARDS", shard) for shard in shards)]
        found = {(i[PARTITION_KEY]["S"], i[SORT_KEY]["S"]): i for i in self._batch_get(keys)}
        index = found.get(("INDEXES", key))
        outputs = [_shard_output(s, found.get(("SHARDS", s))) for s in shards]
        return (_index_output(index) if index else None), outputs

    def feed(self) -> Feed:
        item = self._get(_FEED)
        return msgspec.json.decode(item["feed"]["S"], type=Feed) if item else Feed()

    def commit(self, commit: Commit) -> None:
        """Apply one planned commit atomically, or raise ConcurrentChange / ShardFull."""
        reservations = [commit.reservation] if commit.reservation else []
        self._transact(self._commit_actions(commit), reservations, commit.change.url)

    def check(self, commit: Commit) -> None:
        """Raise the InvalidEvent ``commit`` would, an item too large; nothing is sent."""
        self._commit_actions(commit)

    def _commit_actions(self, commit: Commit) -> list[Item]:
        actions = self._record_actions(commit)
        if commit.retired is not None:
            actions.extend(self._record_actions(commit.retired))
        actions.extend(self._action("Put", item) for item in _markers([commit, commit.retired]))
        if commit.entity is not None:
            actions.append(self._entity_action(commit.entity))
        if commit.cluster is not None:
            actions.extend(self._cluster_actions(commit.cluster))
        return actions

    def transactions(self, commits: Sequence[Commit]) -> list[list[Commit]]:
        """``commits``, in order, cut into groups ``commit_all`` can apply in one transaction
        each: within DynamoDB's 100 actions (each new shard adds a marker and a reservation)
        and the byte budget (a URL is written again in its marker). A commit whose entry no
        item can hold is a group of its own (refused unsent)."""
        groups: list[list[Commit]] = []
        group: list[Commit] = []
        used = count = 0
        shards: set[str] = set()
        for commit in commits:
            try:
                actions = self._record_actions(commit)
            except InvalidEvent:
                groups.append([commit])
                continue
            size = sum(map(_action_bytes, actions)) + len(commit.change.url.encode())
            if group and (
                count + len(actions) + 2 * len(commit.touched - shards) > MAX_ACTIONS
                or used + size > TRANSACTION_BUDGET_BYTES
            ):
                groups.append(group)
                group, used, count, shards = [], 0, 0, set()
            group.append(commit)
            used += size
            count += len(actions) + 2 * len(commit.touched - shards)
            shards |= commit.touched
        return [*groups, group] if group else groups

    def commit_all(self, commits: Sequence[Commit]) -> None:
        """Apply several commits of distinct URLs, none with a cluster, in one transaction:
        all or nothing, with the same conditions and outcomes as ``commit`` (each shard's
        reservations are summed into one condition). A group from ``transactions``."""
        actions = [action for commit in commits for action in self._record_actions(commit)]
        actions.extend(self._action("Put", item) for item in _markers(commits))
        reservations = combined_reservations(commits)
        for reservation in reservations:  # more than even an empty shard holds
            if min(reservation.bounds(self.limits)) < 0:
                raise ShardFull(reservation.shard)
        self._transact(actions, reservations, ", ".join(c.change.url for c in commits))

    def save_entity(self, write: EntityWrite) -> None:
        """An entity record alone (an unpublish by id of a page never seen)."""
        self._transact([self._entity_action(write)], [], write.entity)

    def restore_entry(self, shard: str, url: str, cluster: str | None) -> None:
        """Write the entry a live record of ``shard`` lacks, with only its URL and cluster (a
        resend of the event restores the rest), while the record still places it there."""
        entry = _attrs({"url": url, "cluster": cluster}, entry_key(shard, url))
        put = self._action("Put", entry, "attribute_not_exists(pk)")
        self._check_record(put, url, "live = :yes AND #shard = :shard", shard)

    def remove_entry(self, shard: str, url: str) -> None:
        """Delete an entry no live record places in ``shard``, only while that holds."""
        condition = "attribute_not_exists(live) OR live <> :yes OR #shard <> :shard"
        delete = self._action("Delete", entry_key(shard, url))
        self._check_record(delete, url, condition, shard)

    def _check_record(self, action: Item, url: str, condition: str, shard: str) -> None:
        values = {":yes": {"BOOL": True}, ":shard": {"S": shard}}
        names = {"#shard": SHARD_ATTRIBUTE}
        check = self._action("ConditionCheck", url_key(url), condition, values, names)
        self._transact([action, check], (), url)

    def _transact(
        self, actions: list[Item], reservations: Sequence[Reservation], urls: str
    ) -> None:
        """One transaction; the reservations go last (their cancellations mean ShardFull)."""
        items: list[Any] = [*actions, *(self._reservation_action(r) for r in reservations)]
        try:
            self.client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            raise _cancellation(exc, urls, reservations, len(items)) from exc

    def _record_actions(self, commit: Commit) -> list[Item]:
        """The URL record, and its entry written, removed or moved."""
        change, record = commit.change, commit.record
        values = {**asdict(record), "cluster": commit.cluster_id}
        item = _attrs({**values, TTL_ATTRIBUTE: commit.tombstone_expires_at}, url_key(change.url))
        condition, expected = _record_condition(commit.expected_version, commit.expected_cluster)
        actions = [self._action("Put", item, condition, expected, _CLUSTER)]
        if commit.shard is not None and change.entry is not None:
            actions.append(self._action("Put", _entry_item(commit.shard, commit, change.entry)))
        elif commit.shard is not None:
            actions.append(self._action("Delete", entry_key(commit.shard, change.url)))
        if commit.previous_shard is not None:
            actions.append(self._action("Delete", entry_key(commit.previous_shard, change.url)))
        return actions

    def _cluster_actions(self, write: ClusterWrite) -> list[Item]:
        cid = write.cluster.cid
        values = {"version": (write.expected or 0) + 1, "members": _members_json(write.cluster)}
        values["settled"] = write.cluster.settled
        item = _sized(_attrs(values, cluster_key(cid)), "cluster_too_large", "the hreflang cluster")
        actions = [self._action("Put", item, *_version_is(write.expected))]
        for absorbed, version in write.absorbed:
            redirect = _attrs({"version": version + 1, "redirect": cid}, cluster_key(absorbed))
            actions.append(self._action("Put", redirect, *_version_is(version)))
        to_cid = "SET #cluster = :cid"
        for url, record_version, pointer in write.targets:
            condition, values = _record_condition(record_version, pointer)
            key, values = url_key(url), {**values, ":cid": {"S": cid}}
            actions.append(self._action("Update", key, condition, values, _CLUSTER, update=to_cid))
        return actions

    def _entity_action(self, write: EntityWrite) -> Item:
        values = {"url": write.url, "version": write.version, "live": write.live}
        values["left"] = write.left
        item = _attrs({**values, TTL_ATTRIBUTE: write.expires_at}, entity_key(write.entity))
        return self._action("Put", item, *_version_is(write.expected))

    def _reservation_action(self, reservation: Reservation) -> Item:
        group, number = parse_shard_id(reservation.shard)
        max_slots, max_bytes = reservation.bounds(self.limits)
        values = {":slots": reservation.slots, ":bytes": reservation.bytes, ":group": group}
        values.update({":number": number, ":max_slots": max_slots, ":max_bytes": max_bytes})
        condition = (
            "(attribute_not_exists(slots) OR slots <= :max_slots) AND "
            "(attribute_not_exists(reserved_bytes) OR reserved_bytes <= :max_bytes)"
        )
        add = "ADD slots :slots, reserved_bytes :bytes"
        update = f"{add} SET shard_group = :group, shard_number = :number"
        key = capacity_key(reservation.shard)
        return self._action("Update", key, condition, _attrs(values), update=update)

    def _action(
        self,
        kind: str,
        target: Item,
        condition: str | None = None,
        values: Item | None = None,
        names: dict[str, str] | None = None,
        *,
        update: str | None = None,
    ) -> Item:
        """A transaction's action on the table (``target``: a Put's item, else the key),
        without the options left empty."""
        options = {
            "Item" if kind == "Put" else "Key": target,
            "ConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ExpressionAttributeNames": names,
            "UpdateExpression": update,
        }
        return {kind: {"TableName": self.table, **{name: v for name, v in options.items() if v}}}

    def mark_pending(self, shards: Iterable[str], change: Pending) -> None:
        """Record ``change`` pending in each shard (the siblings of a cluster that changed)."""
        items = [_marker_item(shard, [change]) for shard in shards]
        self._batch_write([{"PutRequest": {"Item": item}} for item in items])

    def set_settled(self, cid: str, version: int) -> None:
        """Mark cluster ``cid`` settled at ``version`` (see Cluster.settled), unless it moved
        on: the change that moved it settles it."""
        with contextlib.suppress(ConcurrentChange):
            values = {":version": {"N": str(version)}}
            self._update(cluster_key(cid), "SET settled = :version", values, "version = :version")

    def clear_pending(self, shard: str, applied: Sequence[Pending]) -> None:
        """Delete the markers that listed the changes applied, and only those: a marker
        written after they were read has a new id."""
        markers = dict.fromkeys(change.marker for change in applied)
        requests = [{"DeleteRequest": {"Key": pending_key(shard, m)}} for m in markers]
        self._batch_write(requests)

    def close_shard(self, shard: str) -> None:
        """Open the next shard of the group, unless someone already did."""
        group, number = parse_shard_id(shard)
        condition = "#n = :current"
        if number == 1:
            condition = f"attribute_not_exists(#n) OR {condition}"
        values = _attrs({":current": number, ":next": number + 1})
        key, names = _key(f"GROUP#{group}", "#OPEN"), {"#n": "number"}
        with contextlib.suppress(ConcurrentChange):
            self._update(key, "SET #n = :next", values, condition, names)

    def mark_checked(self, shard: str, when: str) -> None:
        """Record when the reconciler last checked the shard (see ShardOutput.checked)."""
        self._update(_key("SHARDS", shard), "SET checked = :when", {":when": {"S": when}})

    def save_shard_output(self, output: ShardOutput, previous_generation: int) -> None:
        """Record a shard's new state if nobody changed it since ``previous_generation``.
        ``listed`` is left alone: only the index writes it (see set_listed)."""
        fields: dict[str, object] = {"obj": output.obj, "retiring": output.retiring}
        fields.update(news_expiry=output.news_expiry, rendering=output.rendering)
        self._save(_key("SHARDS", output.shard), output.generation, previous_generation, fields)

    def set_listed(self, shard: str, listed: bool) -> None:
        """Mark a shard as (no longer) named by an index. Listing is refused (ConcurrentChange)
        once it has no object or has begun retiring: a rebuild that marked it retiring decides
        on deleting it from ``listed`` as read after that mark."""
        values, condition = {":listed": {"BOOL": listed}}, None
        if listed:
            values[":no"] = {"BOOL": False}
            condition = (
                "attribute_exists(obj) AND (attribute_not_exists(retiring) OR retiring = :no)"
            )
        self._update(_key("SHARDS", shard), "SET listed = :listed", values, condition)

    def save_index_output(self, output: IndexOutput, previous_generation: int) -> None:
        key = _key("INDEXES", output.key)
        self._save(key, output.generation, previous_generation, {"obj": output.obj})

    def set_whole(self, key: str, whole: bool) -> None:
        """Mark an index file's record (see IndexOutput.whole); absent: nothing to mark."""
        with contextlib.suppress(ConcurrentChange):
            values = {":whole": {"BOOL": whole}}
            self._update(_key("INDEXES", key), "SET whole = :whole", values, "attribute_exists(pk)")

    def delete_index_output(self, key: str) -> None:
        self.client.delete_item(TableName=self.table, Key=_key("INDEXES", key))

    def save_feed(self, feed: Feed, previous_generation: int) -> None:
        """Store the feed if nobody changed it since ``previous_generation``."""
        fields = {"feed": msgspec.json.encode(feed).decode()}
        self._save(_FEED, feed.generation, previous_generation, fields)

    def _save(
        self, key: Item, generation: int, previous: int, fields: Mapping[str, object]
    ) -> None:
        """Compare-and-set on the generation: set it and ``fields`` (None: removed)."""
        kept = _attrs({"generation": generation, **fields})
        expression = "SET " + ", ".join(f"{name} = :{name}" for name in kept)
        if removed := [name for name, value in fields.items() if value is None]:
            expression += " REMOVE " + ", ".join(removed)
        values = {f":{name}": value for name, value in kept.items()}
        values[":previous"] = {"N": str(previous)}
        condition = "generation = :previous"
        if previous == 0:
            condition = f"attribute_not_exists(generation) OR {condition}"
        self._update(key, expression, values, condition)

    def _update(
        self,
        key: Item,
        expression: str,
        values: Item,
        condition: str | None = None,
        names: dict[str, str] | None = None,
    ) -> None:
        """UpdateItem; a failed ``condition`` is a ConcurrentChange."""
        action = self._action("Update", key, condition, values, names, update=expression)
        try:
            self.client.update_item(**action["Update"])
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise ConcurrentChange(f"{key['sk']['S']} changed since it was read") from exc
            raise

    def _get(self, key: Item) -> Item | None:
        return self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")

    def _batch_get(self, keys: Sequence[Item]) -> list[Item]:
        items: list[Item] = []
        for start in range(0, len(keys), 100):
            chunk = {"Keys": list(keys[start : start + 100]), "ConsistentRead": True}
            items += self._batch(self.client.batch_get_item, chunk, "UnprocessedKeys")
        return items

    def _batch_write(self, requests: Sequence[Item]) -> None:
        for start in range(0, len(requests), 25):
            chunk = list(requests[start : start + 25])
            self._batch(self.client.batch_write_item, chunk, "UnprocessedItems")

    def _batch(self, call: Callable[..., Any], chunk: object, unprocessed: str) -> list[Item]:
        """One batch request, repeated with backoff for what is left ``unprocessed``."""
        items: list[Item] = []
        request = {self.table: chunk}

        def attempt() -> None:
            nonlocal request
            response = call(RequestItems=request)
            items.extend(response.get("Responses", {}).get(self.table, []))
            request = response.get(unprocessed) or {}
            if request:
                raise RetryableError(f"registry throttled: {unprocessed} left")

        retry(attempt, _BATCH_ATTEMPTS, (RetryableError,), lost=_back_off)
        return items

    def _partition(self, pk: str, prefix: str | None = None) -> Iterator[Item]:
        """Every item of a partition (whose sort key begins with ``prefix``)."""
        if prefix is None:
            return self._query("pk = :pk", {":pk": {"S": pk}})
        values = {":pk": {"S": pk}, ":prefix": {"S": prefix}}
        return self._query("pk = :pk AND begins_with(sk, :prefix)", values)

    def _query(self, condition: str, values: Item, **options: Any) -> Iterator[Item]:
        """Every item (strongly consistent, except on an index: ``IndexName``)."""
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ConsistentRead="IndexName" not in options,
            **options,
        ):
            yield from page.get("Items", [])


def _back_off(attempt: int, _: Exception) -> None:
    if attempt < _BATCH_ATTEMPTS:  # after the last, the error is raised at once
        time.sleep(min(0.05 * 2 ** (attempt - 1), 1.0))


def _marker_item(shard: str, changes: Sequence[Pending]) -> Item:
    """A new marker (a random id: a later one is never mistaken for it) listing ``changes``."""
    listed = [[c.url, c.version, c.sent, c.cluster] for c in changes]
    item = {"changes": {"S": json.dumps(listed, separators=(",", ":"))}}
    return {**pending_key(shard, secrets.token_hex(8)), **item}


def _markers(commits: Iterable[Commit | None]) -> list[Item]:
    """One marker per shard the commits touch, listing their changes there (a cluster
    change lists its cluster: its members in the shard change too)."""
    listed: dict[str, list[Pending]] = {}
    for commit in filter(None, commits):
        change = commit.change
        pending = Pending(change.url, str(change.version), change.sent, commit.cluster_id)
        for shard in commit.touched:
            listed.setdefault(shard, []).append(pending)
    return [_marker_item(shard, listed[shard]) for shard in sorted(listed)]


def _cancellation(
    exc: ClientError, urls: str, reservations: Sequence[Reservation], count: int
) -> Exception:
    """What a failed transaction means (``reservations``: its last actions, in order)."""
    error = exc.response.get("Error", {})
    if error.get("Code") != "TransactionCanceledException":
        if error.get("Code") in _THROTTLED:
            return RetryableError(f"registry throttled: {error.get('Message')}")
        return exc
    reasons = [r.get("Code", "None") for r in exc.response.get("CancellationReasons", [])]
    reasons += ["None"] * (count - len(reasons))
    tail = reasons[len(reasons) - len(reservations) :]
    for reservation, reason in zip(reservations, tail, strict=True):
        if reason == "ConditionalCheckFailed":
            return ShardFull(reservation.shard)
    if "ConditionalCheckFailed" in reasons:  # a URL record or a cluster record moved on
        return ConcurrentChange(f"{urls} changed since it was read")
    if "TransactionConflict" in reasons:
        time.sleep(random.uniform(0.01, 0.1))  # noqa: S311 - jitter, not cryptography
        return ConcurrentChange(f"transaction conflict on {urls}")
    if _THROTTLED.intersection(reasons):
        return RetryableError(f"registry throttled: {reasons}")
    return exc


def _action_bytes(action: Item) -> int:
    """What one action of a transaction adds to its size (a Put: its item; else its key)."""
    ((kind, request),) = action.items()
    return item_bytes(request["Item"] if kind == "Put" else request["Key"])


def _version_is(version: Decimal | int | None) -> tuple[str, Item]:
    """The condition that the item holds ``version`` (None: that it has none), and its value."""
    if version is None:
        return "attribute_not_exists(version)", {}
    return "version = :expected", {":expected": {"N": str(version)}}


def _record_condition(version: Decimal | None, cluster: str | None) -> tuple[str, Item]:
    """The URL record still holds ``version`` and still points at ``cluster`` (None: none)."""
    condition, values = _version_is(version)
    if cluster is None:
        return f"{condition} AND attribute_not_exists(#cluster)", values
    values = {**values, ":expected_cluster": {"S": cluster}}
    return f"{condition} AND #cluster = :expected_cluster", values


def _attrs(values: Mapping[str, object], key: Item | None = None) -> Item:
    """The values that are not None as DynamoDB attributes (of the item at ``key``)."""
    attributes = {name: _attribute(value) for name, value in values.items() if value is not None}
    return {**(key or {}), **attributes}


def _attribute(value: object) -> Item:
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, ObjectState):
        return {"M": _attrs(asdict(value))}
    return {"N": str(value)} if isinstance(value, int | Decimal) else {"S": value}


def _load(record: type[T], item: Item, **defaults: object) -> T:
    """A record from an item's attributes, with ``defaults`` for those it lacks."""
    return msgspec.convert({**defaults, **_plain(item)}, record, strict=False)


def _shard_output(shard: str, item: Item | None) -> ShardOutput:
    return _load(ShardOutput, item, shard=shard) if item else ShardOutput(shard=shard)


def _index_output(item: Item) -> IndexOutput:
    return _load(IndexOutput, item, key=item[SORT_KEY]["S"], generation=0, obj=None)


def _plain(item: Item) -> dict[str, Any]:
    """An item's attributes as plain values: a number as its digits, a map as a dict."""
    return {
        name: _plain(value["M"]) if "M" in value else next(iter(value.values()))
        for name, value in item.items()
    }


def _sized(item: Item, code: str, what: str) -> Item:
    """``item``, or InvalidEvent when it is too large for any item (a retry cannot help)."""
    size = item_bytes(item)
    if size > MAX_ITEM_BYTES:
        raise InvalidEvent(
            code,
            f"stored, {what} would be {size:,} bytes; a registry item holds {MAX_ITEM_BYTES:,}",
        )
    return item


def _entry_item(shard: str, commit: Commit, entry: SitemapEntry) -> Item:
    """The entry's item (300 long image URLs fit in a message, not in an item)."""
    values = {name: getattr(entry, name) for name in ("url", "lastmod", "changefreq", "priority")}
    values.update(version=commit.change.version, cluster=commit.cluster_id)
    item = _attrs(values, entry_key(shard, entry.url))
    extensions = {"images": entry.images, "videos": entry.videos, "news": entry.news}
    if extensions := {name: value for name, value in extensions.items() if value}:
        item["ext"] = {"S": msgspec.json.encode(extensions).decode()}
    return _sized(item, "entry_too_large", "the entry")


def _entry(item: Item) -> tuple[SitemapEntry, str | None]:
    """An entry and its cluster (its extensions are stored as JSON in ``ext``)."""
    text = {name: value["S"] for name, value in item.items() if "S" in value}
    if "ext" in text:
        text.update(msgspec.json.decode(text.pop("ext")))
    return msgspec.convert(text, SitemapEntry), text.get("cluster")


def _url_state(item: Item | None) -> UrlState:
    """An item with only a cluster pointer: a page siblings declare, never published."""
    if item is None:
        return UrlState()
    record = _load(UrlRecord, item, shard=None) if "version" in item else None
    return UrlState(record, item["cluster"]["S"] if "cluster" in item else None)


def _members_json(cluster: Cluster) -> str:
    """The members, in URL order, each declared href that is a member as its position: 64
    pages declaring all 64 take tens of KB, not the URLs written out 4,096 times."""
    members = sorted(cluster.all.items())
    position = {url: number for number, (url, _) in enumerate(members)}
    stored = {
        url: {
            **msgspec.structs.asdict(m),
            "declares": [[lang, position.get(h, h)] for lang, h in m.declares],
        }
        for url, m in members
    }
    return json.dumps(stored, separators=(",", ":"))


def _cluster(cid: str, item: Item) -> Cluster:
    """Read what _members_json wrote."""
    stored: dict[str, Any] = json.loads(item["members"]["S"])
    urls, members = list(stored), {}
    for url, fields in stored.items():
        declares = tuple((lang, urls[h] if type(h) is int else h) for lang, h in fields["declares"])
        members[url] = Member(**{**fields, "declares": declares})
    settled = int(item["settled"]["N"]) if "settled" in item else 0
    return Cluster(cid, int(item["version"]["N"]), members, settled)
