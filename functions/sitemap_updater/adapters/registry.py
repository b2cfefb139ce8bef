"""The URL registry in DynamoDB: the source of truth every S3 object is derived from.

One table, string keys ``pk``/``sk``, TTL attribute ``expires_at``:

=========================  ==================  ===============================================
pk                         sk                  item
=========================  ==================  ===============================================
``URL#<url>``              ``URL``             newest version, live/tombstone, shard, reserved
``SHARD#<shard>``          ``URL#<url>``       a live entry of the shard (fields to render)
``SHARD#<shard>``          ``#CAPACITY``       slots and bytes reserved in the shard
``GROUP#<group>``          ``#OPEN``           the group's open shard number
``SHARDS``                 ``<shard>``         the shard's published object (ShardOutput)
``INDEXES``                ``<key>``           a published index file (IndexOutput)
=========================  ==================  ===============================================

A shard's entries share one partition, so a rebuild reads them with a strongly consistent
Query: it always sees every commit that happened before it started (no GSI lag to prove).
An event's commit is one transaction: URL record (conditional on the version it was planned
against), entry put/delete, capacity reservation (conditional on room). URLs longer than
1,000 characters are keyed by a prefix and their SHA-256 (DynamoDB's sort key limit).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import ConcurrentChange, RetryableError, ShardFull
from sitemap_updater.domain.placement import Commit
from sitemap_updater.domain.records import IndexOutput, ObjectState, ShardOutput, UrlRecord
from sitemap_updater.domain.sharding import Limits, parse_shard_id, shard_id

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]
TTL_ATTRIBUTE = "expires_at"
PARTITION_KEY = "pk"
SORT_KEY = "sk"
_KEY_LIMIT = 1000
_THROTTLED = {"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"}


def url_token(url: str) -> str:
    """The URL as a key: itself, or a prefix and its SHA-256 when it is too long for a key."""
    if len(url) <= _KEY_LIMIT:
        return url
    return f"{url[:900]}#{hashlib.sha256(url.encode()).hexdigest()}"


def _key(pk: str, sk: str) -> Item:
    return {PARTITION_KEY: {"S": pk}, SORT_KEY: {"S": sk}}


def url_key(url: str) -> Item:
    return _key(f"URL#{url_token(url)}", "URL")


def entry_key(shard: str, url: str) -> Item:
    return _key(f"SHARD#{shard}", f"URL#{url_token(url)}")


def capacity_key(shard: str) -> Item:
    return _key(f"SHARD#{shard}", "#CAPACITY")


def group_key(group: str) -> Item:
    return _key(f"GROUP#{group}", "#OPEN")


def shard_output_key(shard: str) -> Item:
    return _key("SHARDS", shard)


def index_output_key(key: str) -> Item:
    return _key("INDEXES", key)


class Registry:
    """DynamoDB adapter. Conditional failures become domain outcomes; the rest is raised."""

    def __init__(self, table_name: str, limits: Limits, client: DynamoDBClient | None = None):
        self.table = table_name
        self.limits = limits
        self.client: DynamoDBClient = client or boto3.client("dynamodb")

    # -- URL records -----------------------------------------------------------------------

    def get_url(self, url: str) -> UrlRecord | None:
        response = self.client.get_item(TableName=self.table, Key=url_key(url), ConsistentRead=True)
        item = response.get("Item")
        return _url_record(item) if item else None

    def commit(self, commit: Commit) -> None:
        """Apply one planned commit atomically, or raise ConcurrentChange / ShardFull."""
        actions: list[Any] = [self._url_action(commit)]
        entry = commit.change.entry
        if commit.shard is not None and entry is not None:
            actions.append({"Put": {"TableName": self.table, "Item": _entry_item(commit, entry)}})
        elif commit.shard is not None:
            actions.append(
                {
                    "Delete": {
                        "TableName": self.table,
                        "Key": entry_key(commit.shard, commit.change.url),
                    }
                }
            )
        if commit.previous_shard is not None:
            key = entry_key(commit.previous_shard, commit.change.url)
            actions.append({"Delete": {"TableName": self.table, "Key": key}})
        if commit.reservation is not None:
            actions.append(self._reservation_action(commit))
        try:
            self.client.transact_write_items(TransactItems=actions)
        except ClientError as exc:
            raise self._translate_cancellation(exc, commit, len(actions)) from exc

    def _url_action(self, commit: Commit) -> Item:
        record = commit.record
        item: Item = {
            **url_key(record.url),
            "url": {"S": record.url},
            "version": {"N": str(record.version)},
            "live": {"BOOL": record.live},
            "reserved": {"N": str(record.reserved)},
        }
        if record.shard is not None:
            item["shard"] = {"S": record.shard}
        if commit.tombstone_expires_at is not None:
            item[TTL_ATTRIBUTE] = {"N": str(commit.tombstone_expires_at)}
        put: Item = {"TableName": self.table, "Item": item}
        if commit.expected_version is None:
            put["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            put["ConditionExpression"] = "version = :expected"
            put["ExpressionAttributeValues"] = {":expected": {"N": str(commit.expected_version)}}
        return {"Put": put}

    def _reservation_action(self, commit: Commit) -> Item:
        reservation = commit.reservation
        assert reservation is not None  # noqa: S101 - guarded by the caller
        group, number = parse_shard_id(reservation.shard)
        max_slots = self.limits.max_urls_per_shard - reservation.slots
        max_bytes = self.limits.max_entry_bytes - reservation.bytes
        return {
            "Update": {
                "TableName": self.table,
                "Key": capacity_key(reservation.shard),
                "UpdateExpression": "ADD slots :slots, reserved_bytes :bytes "
                "SET shard_group = :group, shard_number = :number",
                "ConditionExpression": "(attribute_not_exists(slots) OR slots <= :max_slots) AND "
                "(attribute_not_exists(reserved_bytes) OR reserved_bytes <= :max_bytes)",
                "ExpressionAttributeValues": {
                    ":slots": {"N": str(reservation.slots)},
                    ":bytes": {"N": str(reservation.bytes)},
                    ":group": {"S": group},
                    ":number": {"N": str(number)},
                    ":max_slots": {"N": str(max_slots)},
                    ":max_bytes": {"N": str(max_bytes)},
                },
            }
        }

    def _translate_cancellation(self, exc: ClientError, commit: Commit, count: int) -> Exception:
        error = exc.response.get("Error", {})
        if error.get("Code") != "TransactionCanceledException":
            if error.get("Code") in _THROTTLED:
                return RetryableError(f"registry throttled: {error.get('Message')}")
            return exc
        reasons = [r.get("Code", "None") for r in exc.response.get("CancellationReasons", [])]
        reasons += ["None"] * (count - len(reasons))
        if commit.reservation is not None and reasons[-1] == "ConditionalCheckFailed":
            return ShardFull(commit.reservation.shard)
        if reasons[0] == "ConditionalCheckFailed":
            return ConcurrentChange(f"{commit.change.url} changed since it was read")
        if "TransactionConflict" in reasons:
            time.sleep(random.uniform(0.01, 0.1))  # noqa: S311 - jitter, not cryptography
            return ConcurrentChange(f"transaction conflict on {commit.change.url}")
        if _THROTTLED.intersection(reasons):
            return RetryableError(f"registry throttled: {reasons}")
        return exc

    # -- groups and shards -------------------------------------------------------------------

    def open_shard(self, group: str) -> str:
        response = self.client.get_item(
            TableName=self.table, Key=group_key(group), ConsistentRead=True
        )
        item = response.get("Item")
        return shard_id(group, int(item["number"]["N"]) if item else 1)

    def close_shard(self, shard: str) -> None:
        """Open the next shard of the group, unless someone already did."""
        group, number = parse_shard_id(shard)
        condition = "#n = :current"
        if number == 1:
            condition = f"attribute_not_exists(#n) OR {condition}"
        try:
            self.client.update_item(
                TableName=self.table,
                Key=group_key(group),
                UpdateExpression="SET #n = :next",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#n": "number"},
                ExpressionAttributeValues={
                    ":current": {"N": str(number)},
                    ":next": {"N": str(number + 1)},
                },
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def shard_entries(self, shard: str) -> list[SitemapEntry]:
        """The shard's live entries, read strongly consistently, in URL order."""
        entries = [
            _entry(item)
            for item in self._query(
                "pk = :pk AND begins_with(sk, :prefix)",
                {":pk": {"S": f"SHARD#{shard}"}, ":prefix": {"S": "URL#"}},
            )
        ]
        entries.sort(key=lambda entry: entry.url)
        return entries

    def capacity(self, shard: str) -> tuple[int, int]:
        """(slots, reserved bytes) of a shard."""
        response = self.client.get_item(
            TableName=self.table, Key=capacity_key(shard), ConsistentRead=True
        )
        item = response.get("Item") or {}
        return (
            int(item.get("slots", {}).get("N", "0")),
            int(item.get("reserved_bytes", {}).get("N", "0")),
        )

    def capacities(self, shards: Sequence[str]) -> dict[str, tuple[int, int]]:
        """(slots, reserved bytes) of many shards, read 100 at a time (BatchGetItem)."""
        found = dict.fromkeys(shards, (0, 0))
        ordered = list(found)
        for start in range(0, len(ordered), 100):
            request: Any = {
                self.table: {
                    "Keys": [capacity_key(shard) for shard in ordered[start : start + 100]],
                    "ConsistentRead": True,
                }
            }
            for attempt in range(8):
                response = self.client.batch_get_item(RequestItems=request)
                for item in response.get("Responses", {}).get(self.table, []):
                    shard = item[PARTITION_KEY]["S"].removeprefix("SHARD#")
                    found[shard] = (
                        int(item.get("slots", {}).get("N", "0")),
                        int(item.get("reserved_bytes", {}).get("N", "0")),
                    )
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(min(1.0, 0.05 * 2**attempt))  # throttled: back off, then the rest
            else:
                raise RetryableError("registry kept throttling the capacity reads")
        return found

    # -- published outputs -------------------------------------------------------------------

    def shard_output(self, shard: str) -> ShardOutput:
        response = self.client.get_item(
            TableName=self.table, Key=shard_output_key(shard), ConsistentRead=True
        )
        item = response.get("Item")
        return _shard_output(item) if item else ShardOutput(shard=shard)

    def shard_outputs(self) -> list[ShardOutput]:
        items = self._query("pk = :pk", {":pk": {"S": "SHARDS"}})
        return [_shard_output(item) for item in items]

    def save_shard_output(self, output: ShardOutput, previous_generation: int) -> None:
        """Record a shard's new state if nobody changed it since ``previous_generation``.

        ``listed`` is left alone: only the index writes it (see set_listed).
        """
        retiring = {"retiring": {"BOOL": output.retiring}}
        self._save_output(
            shard_output_key(output.shard),
            output.generation,
            output.obj,
            previous_generation,
            retiring,
        )

    def set_listed(self, shard: str, listed: bool) -> None:
        """Mark a shard as (no longer) named by an index.

        Listing is refused (ConcurrentChange) once the shard has no object or has begun
        retiring: a rebuild that marked it retiring decides on deleting it from ``listed``
        as read after that mark, so no index may start naming it from then on.
        """
        if not listed:
            self.client.update_item(
                TableName=self.table,
                Key=shard_output_key(shard),
                UpdateExpression="SET listed = :listed",
                ExpressionAttributeValues={":listed": {"BOOL": False}},
            )
            return
        self._conditional_update(
            shard_output_key(shard),
            "SET listed = :listed",
            "attribute_exists(obj) AND (attribute_not_exists(retiring) OR retiring = :no)",
            {":listed": {"BOOL": True}, ":no": {"BOOL": False}},
        )

    def index_outputs(self) -> dict[str, IndexOutput]:
        items = self._query("pk = :pk", {":pk": {"S": "INDEXES"}})
        outputs = [_index_output(item) for item in items]
        return {output.key: output for output in outputs}

    def save_index_output(self, output: IndexOutput, previous_generation: int) -> None:
        self._save_output(
            index_output_key(output.key), output.generation, output.obj, previous_generation
        )

    def delete_index_output(self, key: str) -> None:
        self.client.delete_item(TableName=self.table, Key=index_output_key(key))

    # -- plumbing ----------------------------------------------------------------------------

    def _save_output(
        self,
        key: Item,
        generation: int,
        obj: ObjectState | None,
        previous_generation: int,
        extra: Item | None = None,
    ) -> None:
        """Compare-and-set a published-object record on its generation."""
        values: Item = {
            ":generation": {"N": str(generation)},
            ":previous": {"N": str(previous_generation)},
        }
        assignments = ["generation = :generation"]
        for name, value in (extra or {}).items():
            assignments.append(f"{name} = :{name}")
            values[f":{name}"] = value
        if obj is not None:
            assignments.append("obj = :obj")
            values[":obj"] = {"M": _object_item(obj)}
        expression = "SET " + ", ".join(assignments) + (" REMOVE obj" if obj is None else "")
        condition = "generation = :previous"
        if previous_generation == 0:
            condition = f"attribute_not_exists(generation) OR {condition}"
        self._conditional_update(key, expression, condition, values)

    def _conditional_update(self, key: Item, expression: str, condition: str, values: Item) -> None:
        try:
            self.client.update_item(
                TableName=self.table,
                Key=key,
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise ConcurrentChange(f"{key['sk']['S']} changed since it was read") from exc
            raise

    def _query(self, condition: str, values: Item) -> Iterator[Item]:
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ConsistentRead=True,
        ):
            yield from page.get("Items", [])


def _entry_item(commit: Commit, entry: SitemapEntry) -> Item:
    assert commit.shard is not None  # noqa: S101 - guarded by the caller
    item: Item = {
        **entry_key(commit.shard, entry.url),
        "url": {"S": entry.url},
        "version": {"N": str(commit.change.version)},
    }
    for name in ("lastmod", "changefreq", "priority"):
        value = getattr(entry, name)
        if value is not None:
            item[name] = {"S": value}
    return item


def _entry(item: Item) -> SitemapEntry:
    def text(name: str) -> str | None:
        value = item.get(name)
        return value["S"] if value else None

    return SitemapEntry(
        url=item["url"]["S"],
        lastmod=text("lastmod"),
        changefreq=text("changefreq"),
        priority=text("priority"),
    )


def _url_record(item: Item) -> UrlRecord:
    return UrlRecord(
        url=item["url"]["S"],
        version=Decimal(item["version"]["N"]),
        live=item["live"]["BOOL"],
        shard=item["shard"]["S"] if "shard" in item else None,
        reserved=int(item["reserved"]["N"]),
    )


def _object_item(obj: ObjectState) -> Item:
    return {
        "key": {"S": obj.key},
        "etag": {"S": obj.etag},
        "sha256": {"S": obj.sha256},
        "entries": {"N": str(obj.entries)},
        "bytes": {"N": str(obj.bytes)},
        "lastmod": {"S": obj.lastmod},
    }


def _object_state(item: Item | None) -> ObjectState | None:
    if not item:
        return None
    fields = item["M"]
    return ObjectState(
        key=fields["key"]["S"],
        etag=fields["etag"]["S"],
        sha256=fields["sha256"]["S"],
        entries=int(fields["entries"]["N"]),
        bytes=int(fields["bytes"]["N"]),
        lastmod=fields["lastmod"]["S"],
    )


def _shard_output(item: Item) -> ShardOutput:
    return ShardOutput(
        shard=item[SORT_KEY]["S"],
        generation=int(item.get("generation", {}).get("N", "0")),
        obj=_object_state(item.get("obj")),
        listed=item.get("listed", {}).get("BOOL", False),
        retiring=item.get("retiring", {}).get("BOOL", False),
    )


def _index_output(item: Item) -> IndexOutput:
    return IndexOutput(
        key=item[SORT_KEY]["S"],
        generation=int(item.get("generation", {}).get("N", "0")),
        obj=_object_state(item.get("obj")),
    )
