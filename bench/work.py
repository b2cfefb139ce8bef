"""AWS work per event as the site grows, and how a burst coalesces (on moto, in process).

    .venv/bin/python bench/work.py [--sizes 1000,10000,100000] [--shard-size 1000] [--burst 1000]

A printout, not a test (CI runs it at a small size only, to check that it still works).

The functions' own boto3 clients are watched with botocore event hooks: every request they
make is counted (each attempt: a retried call counts once per attempt), with the bytes sent
(request body) and received (response body), and the
DynamoDB capacity it consumes (estimated the way DynamoDB bills it: strongly consistent reads
at 1 RRU per 4 KB, transactional writes at 2 WRU per item and KB). The queue traffic around
the functions (the CMS's sends; what Lambda's event source mappings do: receives that return
messages, deletes) is counted apart, on the pipeline's own SQS client; the burst's total and
the cost include it.

Work per event: a registry of N URLs in full shards of ``--shard-size`` URLs (loaded through
ingest's batched path, every shard rendered and the index written), then, one at a time, each
event through ingest -> rebuild -> index until the queues are drained:

* publish of an existing URL (a new lastmod, so its shard's bytes change),
* unpublish of an existing URL,
* a new URL (every shard is full: it opens the next one),
* a second new URL (into that new shard).

Burst: ``--burst`` publishes of existing URLs of one shard, all on the ingest queue before the
functions start, drained as Lambda would (batches of the ingest function's batch size).

moto as the local runtime runs it (``local.tuning.tune_moto``): a transaction
keeps only the items it touches for its rollback, not a deep copy of the table, so a
100,000-URL registry loads in minutes, not hours. The requests the functions make are the
same.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from math import ceil
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))

SITE = "https://www.example.com"
KB = 1024


@dataclass
class Work:
    """Requests, bytes and capacity units, by service."""

    requests: Counter[str] = field(default_factory=Counter)
    operations: Counter[str] = field(default_factory=Counter)
    sent: int = 0
    received: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    s3_puts: int = 0
    s3_bytes_written: int = 0
    invocations: Counter[str] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)  # in the handlers, by function
    # The queue traffic around the functions, not theirs: the CMS's sends and what Lambda's
    # event source mappings do (receives that returned messages, deletes), by operation.
    queue_traffic: Counter[str] = field(default_factory=Counter)
    # Every SQS request but the CMS's sends (the functions' and the pollers'), by queue
    # type, for the price: "fifo" or "standard".
    sqs_requests: Counter[str] = field(default_factory=Counter)
    # What the handlers write to stdout and stderr (their log lines and EMF metrics), by
    # function: what CloudWatch Logs ingests from them.
    log_bytes: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.requests.values())


class LogBytes(io.TextIOBase):
    """Where the functions' log lines and metrics go in the bench: counted, not shown."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, text: str) -> int:
        self.written += len(text.encode())
        return len(text)


LOGS = LogBytes()


class Meter:
    """Hooks on the functions' clients: each request they make is counted into ``work``;
    each invocation of a function is timed (wall time in the handler, moto's own time in
    the calls included, but no network: less than Lambda would bill, which waits on AWS).
    A hook on the pipeline's own SQS client (the CMS's sends, the event source mappings'
    receives and deletes) counts the queue traffic around the functions, apart from
    theirs. What each invocation writes to stdout and stderr is counted as its logs."""

    def __init__(self, pipeline: Any):
        from sitemap_updater.observability import metrics  # noqa: PLC0415

        metrics.clear_metrics()  # added by the use cases called directly while loading
        self.work = Work()
        app = pipeline.app
        for name, mapping in pipeline.mappings.items():
            mapping.handler = self._timed(name, mapping.handler)
        for client in (app.registry.client, app.store.client, app.queues.client):
            events = client.meta.events
            events.register("provide-client-params.*.*", self._params)
            events.register("request-created.*.*", self._request)
            events.register("response-received.*.*", self._attempt)
            events.register("after-call.*.*", self._response)
        around = pipeline.sqs.meta.events
        around.register("provide-client-params.sqs.*", self._params)
        around.register("after-call.sqs.*", self._queue_call)

    def _timed(self, name: str, handler: Callable[..., Any]) -> Callable[..., Any]:
        def timed(event: dict[str, Any], context: Any) -> Any:
            started, logged = time.perf_counter(), LOGS.written
            try:
                with contextlib.redirect_stdout(LOGS), contextlib.redirect_stderr(LOGS):
                    return handler(event, context)
            finally:
                self.work.invocations[name] += 1
                self.work.seconds[name] += time.perf_counter() - started
                self.work.log_bytes[name] += LOGS.written - logged

        return timed

    def reset(self) -> Work:
        done, self.work = self.work, Work()
        return done

    @staticmethod
    def _params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["bench_params"] = dict(params)

    def _request(self, request: Any, operation_name: str, **_: Any) -> None:
        self.work.sent += body_length(request)

    def _attempt(
        self,
        event_name: str,
        response_dict: dict[str, Any] | None,
        context: dict[str, Any],
        **_: Any,
    ) -> None:
        """Every attempt botocore sends (a retried call is several requests, each billed),
        whatever its outcome; after-call would see the call once."""
        _event, service, operation = event_name.split(".", 2)
        self.work.requests[service] += 1
        self.work.operations[f"{service}.{operation}"] += 1
        if service == "sqs":
            self.work.sqs_requests[queue_type(context.get("bench_params", {}))] += 1
        if response_dict is None:  # no response at all (a connection error)
            return
        body = response_dict["body"]
        if isinstance(body, bytes):
            self.work.received += len(body)
        else:  # a streamed body (GetObject): reading it here would consume it; its length
            self.work.received += int(response_dict["headers"].get("content-length") or 0)

    def _response(
        self,
        http_response: Any,
        parsed: dict[str, Any],
        model: Any,
        context: dict[str, Any],
        **_: Any,
    ) -> None:
        """Once per call (its outcome): the capacity it consumed, the objects it wrote."""
        service = model.service_model.service_name
        params = context.get("bench_params", {})
        if service == "dynamodb":
            self._capacity(model.name, params, parsed)
        if service == "s3" and model.name == "PutObject":
            self.work.s3_puts += 1
            self.work.s3_bytes_written += len(params.get("Body", b""))

    def _queue_call(
        self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        """The CMS's sends and what Lambda's pollers do per batch. Left out: receives that
        found nothing and queue-depth reads (how this emulation polls and sees the queues
        drained; Lambda's own idle polling is a cost at rest, not per event)."""
        operation = model.name
        if operation == "ReceiveMessage" and not parsed.get("Messages"):
            return
        if operation not in {
            "SendMessage",
            "SendMessageBatch",
            "ReceiveMessage",
            "DeleteMessage",
            "DeleteMessageBatch",
            "ChangeMessageVisibilityBatch",
        }:
            return
        self.work.queue_traffic[f"sqs.{operation}"] += 1
        if not operation.startswith("Send"):  # the CMS's sends are priced one per event
            self.work.sqs_requests[queue_type(context.get("bench_params", {}))] += 1

    def _capacity(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        size = item_size
        if operation == "TransactWriteItems":
            for action in params["TransactItems"]:
                (kind,) = action
                item = action[kind].get("Item") or action[kind].get("Key") or {}
                self.work.write_units += 2 * max(1, ceil(size(item) / KB))
        elif operation in {"PutItem", "UpdateItem", "DeleteItem"}:
            self.work.write_units += max(1, ceil(size(params.get("Item", {})) / KB))
        elif operation == "BatchWriteItem":
            for requests in params["RequestItems"].values():
                for request in requests:
                    item = request.get("PutRequest", {}).get("Item", {})
                    self.work.write_units += max(1, ceil(size(item) / KB))
        elif operation == "GetItem":
            self.work.read_units += max(1, ceil(size(parsed.get("Item", {})) / (4 * KB)))
        elif operation == "BatchGetItem":
            for items in parsed.get("Responses", {}).values():
                self.work.read_units += sum(max(1, ceil(size(i) / (4 * KB))) for i in items)
        elif operation == "Query":
            self.work.read_units += max(1, ceil(sum(size(i) for i in parsed["Items"]) / (4 * KB)))


def _value_size(value: dict[str, Any]) -> int:
    """An attribute value's size as DynamoDB bills it (a number counted by its digits: an
    upper bound of DynamoDB's packed form)."""
    ((kind, inner),) = value.items()
    if kind in ("S", "N"):
        return len(inner.encode())
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS"):
        return sum(len(member.encode()) for member in inner)
    if kind == "BS":
        return sum(len(member) for member in inner)
    if kind == "L":
        return 3 + sum(1 + _value_size(member) for member in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_size(v) for k, v in inner.items())
    raise ValueError(f"unknown attribute type {kind}")


def item_size(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it for capacity: each attribute's name and value in
    bytes. (Not the length of its JSON: the type descriptors, quotes and braces made that
    about half as large again as the item, for the shard entries these events read.)"""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def queue_type(params: dict[str, Any]) -> str:
    """ "fifo" or "standard": the type of the queue a request went to (its price)."""
    return "fifo" if str(params.get("QueueUrl", "")).endswith(".fifo") else "standard"


def body_length(request: Any) -> int:
    """Bytes of a request's body. S3 uploads are streamed (botocore wraps the body for its
    aws-chunked checksum encoding), so their length is read from the headers: the payload's
    own length (X-Amz-Decoded-Content-Length), not counting the chunk framing."""
    body = request.body
    if isinstance(body, str):
        return len(body.encode())
    if isinstance(body, bytes | bytearray):
        return len(body)
    headers = request.headers
    length = headers.get("X-Amz-Decoded-Content-Length") or headers.get("Content-Length")
    return int(length or 0)


class Ticking:
    """A clock one second later at every reading: each write gets a lastmod of its own, as
    events seconds apart do, so whether the index is rewritten never depends on whether
    two writes fell within the same second of the machine's clock."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 22, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def fake_aws_environment() -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }.items():
        os.environ[name] = value
    os.environ.pop("AWS_ENDPOINT_URL", None)
    from sitemap_updater.resources import METRICS_NAMESPACE, SERVICE_NAME  # noqa: PLC0415

    # As deployed (infra's powertools_environment): INFO, metrics on; counted, not shown.
    os.environ["POWERTOOLS_SERVICE_NAME"] = SERVICE_NAME
    os.environ["POWERTOOLS_METRICS_NAMESPACE"] = METRICS_NAMESPACE
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "false"
    os.environ["POWERTOOLS_LOG_LEVEL"] = "INFO"
    from sitemap_updater.observability import logger  # noqa: PLC0415

    logger.registered_handler.setStream(LOGS)


def page(number: int, lastmod: str = "2026-11-01") -> dict[str, Any]:
    return {
        "type": "publish",
        "url": f"{SITE}/articles/{number:07d}/a-title-of-some-length",
        "version": 1,
        "lastmod": lastmod,
        "changefreq": "weekly",
    }


def load_registry(pipeline: Any, urls: int) -> None:
    """N pages planned by ingest's own batched path, then every shard rendered and the index
    written (the functions' use cases, called directly: loading is not what is measured)."""
    place(pipeline, range(urls))
    shards = ceil(urls / pipeline.app.settings.max_urls_per_shard)
    for number in range(1, shards + 1):
        pipeline.app.rebuild_shard(f"pages-{number:05d}")
    pipeline.drain()  # the index function, asked by the rebuilds


def load_sparse(pipeline: Any, urls: int) -> None:
    """A site of N URLs as an event sees it: its shard (the last, full) with every entry,
    loaded as ``load_registry`` does; every other shard's record, listed; the index naming
    them all. No event reads another shard's entries, so they are not stored: the requests,
    bytes and units are those of the whole site."""
    app = pipeline.app
    registry, per_shard = app.registry, app.settings.max_urls_per_shard
    shards = urls // per_shard
    key = {"pk": {"S": "GROUP#pages"}, "sk": {"S": "#OPEN"}}
    registry.client.put_item(TableName=registry.table, Item={**key, "number": {"N": str(shards)}})
    place(pipeline, range(urls - per_shard, urls))
    document = 200 * per_shard  # bytes: what a shard of these entries renders to
    records = [
        {
            "pk": {"S": "SHARDS"},
            "sk": {"S": f"pages-{number:05d}"},
            "generation": {"N": "1"},
            "listed": {"BOOL": True},
            "rendering": {"S": app.rebuild_shard.rendering},
            "obj": {
                "M": {
                    "key": {"S": f"sitemap-pages-{number:05d}.xml.gz"},
                    "etag": {"S": f'"{number:032x}"'},
                    "sha256": {"S": f"{number:064x}"},
                    "entries": {"N": str(per_shard)},
                    "bytes": {"N": str(document)},
                    "lastmod": {"S": "2026-11-01T00:00:00Z"},
                }
            },
        }
        for number in range(1, shards)
    ]
    for start in range(0, len(records), 25):
        requests = [{"PutRequest": {"Item": item}} for item in records[start : start + 25]]
        registry.client.batch_write_item(RequestItems={registry.table: requests})
    app.rebuild_shard(f"pages-{shards:05d}")
    pipeline.drain()


def place(pipeline: Any, numbers: range) -> None:
    """Pages planned by ingest's own batched path, written with BatchWriteItem rather than
    transactions (the same items, from the registry adapter's own builders): moto's
    transactions cost O(table). No pending marker is written: a rebuild renders the shard
    whole once, and an event's own marker is what is measured."""
    from sitemap_updater.domain.events import parse_body  # noqa: PLC0415
    from sitemap_updater.domain.placement import combined_reservations  # noqa: PLC0415

    app = pipeline.app
    settings = app.settings
    registry = app.registry
    client, table = registry.client, registry.table

    def write_directly(commits: Sequence[Any]) -> None:
        puts = [a["Put"]["Item"] for c in commits for a in registry._record_actions(c)]
        for start in range(0, len(puts), 25):
            requests = [{"PutRequest": {"Item": item}} for item in puts[start : start + 25]]
            client.batch_write_item(RequestItems={table: requests})
        for reservation in combined_reservations(commits):
            client.update_item(**registry._reservation_action(reservation)["Update"])

    registry.commit_all = write_directly
    try:
        placed = 0
        for start in range(numbers.start, numbers.stop, 100):
            changes = [
                parse_body(json.dumps(page(n)), settings.site, settings.max_event_bytes)
                for n in range(start, min(start + 100, numbers.stop))
            ]
            if placed + len(changes) > settings.max_urls_per_shard:  # as a full shard closes
                shard = app.apply_change._open_shard("pages")
                registry.close_shard(shard)
                app.apply_change._open.pop("pages")
                placed = 0
            results = app.apply_change.apply_plain(changes)
            if len(results) != len(changes):
                raise RuntimeError("loading: a chunk was not applied whole")
            placed += len(changes)
    finally:
        del registry.commit_all


def send_and_drain(pipeline: Any, events: Sequence[dict[str, Any]]) -> None:
    """The events through the local runtime's sending; no function may fail on them."""
    from sitemap_updater.local.feeder import MessageBody  # noqa: PLC0415

    pipeline.send_messages([MessageBody(json.dumps(e), f"#{n}") for n, e in enumerate(events)])
    pipeline.drain()
    if any(mapping.errors for mapping in pipeline.mappings.values()):
        raise RuntimeError(f"a function failed on {len(events):,} events")


def one_event(pipeline: Any, meter: Meter, event: dict[str, Any]) -> Work:
    meter.reset()
    send_and_drain(pipeline, [event])
    return meter.reset()


# Pages of the last shard (the one ``load_sparse`` stores), as the new URLs follow it.
EVENTS: list[tuple[str, Callable[[int], dict[str, Any]]]] = [
    ("publish of an existing URL", lambda n: {**page(n - 3, "2026-11-21"), "version": 2}),
    (
        "unpublish of an existing URL",
        lambda n: {"type": "unpublish", "url": page(n - 2)["url"], "version": 2},
    ),
    ("new URL (opens the next shard)", page),
    ("a second new URL", lambda n: page(n + 1)),
]


def measure_sizes(
    sizes: Sequence[int], shard_size: int, load: Callable[[Any, int], None] = load_registry
) -> dict[int, list[Work]]:
    from moto import mock_aws  # noqa: PLC0415

    from sitemap_updater.local.runtime import Pipeline  # noqa: PLC0415

    results: dict[int, list[Work]] = {}
    for size in sizes:
        with mock_aws():
            started = time.perf_counter()
            pipeline = Pipeline.create(
                SITE, {"MAX_URLS_PER_SHARD": shard_size}, visibility_timeout=5, clock=Ticking()
            )
            with contextlib.redirect_stdout(LOGS):  # metrics the use cases flush while loading
                load(pipeline, size)
            print(
                f"  registry of {size:,} URLs loaded in {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            meter = Meter(pipeline)
            results[size] = [one_event(pipeline, meter, make(size)) for _, make in EVENTS]
    return results


def measure_burst(events: int, shard_size: int) -> tuple[Work, int, dict[str, int]]:
    """Work for ``events`` publishes of existing URLs of one shard, sent together."""
    from moto import mock_aws  # noqa: PLC0415

    from sitemap_updater.local.runtime import Pipeline  # noqa: PLC0415
    from sitemap_updater.resources import INGEST  # noqa: PLC0415

    with mock_aws():
        pipeline = Pipeline.create(
            SITE, {"MAX_URLS_PER_SHARD": shard_size}, visibility_timeout=30, clock=Ticking()
        )
        with contextlib.redirect_stdout(LOGS):
            load_registry(pipeline, events)
        meter = Meter(pipeline)
        send_and_drain(pipeline, [{**page(n, "2026-11-21"), "version": 2} for n in range(events)])
        work = meter.reset()
        return work, INGEST.batch_size, dict(work.invocations)


def cell(work: Work) -> str:
    return (
        f"{work.total:>3} req {work.sent / KB:>6.1f}/{work.received / KB:>6.1f} KB "
        f"{work.read_units:>4.0f} RRU {work.write_units:>3.0f} WRU"
    )


def print_sizes(results: dict[int, list[Work]], shard_size: int) -> None:
    sizes = list(results)
    print(f"\nWork per event, by registry size (full shards of {shard_size:,} URLs)")
    print("requests the functions make; KB sent/received; DynamoDB read/write units\n")
    header = f"{'event':<32}" + "".join(f" | {f'{size:,} URLs':<41}" for size in sizes)
    print(header)
    print("-" * len(header))
    for row, (name, _) in enumerate(EVENTS):
        print(f"{name:<32}" + "".join(f" | {cell(results[s][row]):<41}" for s in sizes))
    first = results[sizes[0]]
    # Operation by operation (a Query become a Scan would keep the count by service).
    same = all([w.operations for w in results[s]] == [w.operations for w in first] for s in sizes)
    verdict = ("yes" if same else "NO") if len(sizes) > 1 else "n/a (one size)"
    print(f"\nrequests identical at every size: {verdict}")
    for row, (name, _) in enumerate(EVENTS):
        print(
            f"  {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(first[row].operations.items()))
        )
        traffic = first[row].queue_traffic
        print(
            "    around it (the CMS's send, Lambda's receives and deletes): "
            + ", ".join(f"{k} {v}" for k, v in sorted(traffic.items()))
        )


def print_burst(work: Work, events: int, batch_size: int, invocations: dict[str, int]) -> None:
    around = sum(work.queue_traffic.values())
    every = work.total + around
    print(f"\nBurst: {events:,} publishes into one shard, on the queue together")
    print(f"  ingest batch size {batch_size}; invocations: " + ", ".join(
        f"{name} {count}" for name, count in invocations.items() if count
    ))  # fmt: skip
    print(f"  the functions' requests: {work.total:,} ({work.total / events:.2f} per event)")
    print("    " + ", ".join(f"{k} {v}" for k, v in sorted(work.operations.items())))
    print(
        f"  the queue traffic around them: {around:,} (the CMS's sends, ten to a batch; "
        "Lambda's receives and deletes)"
    )
    print("    " + ", ".join(f"{k} {v}" for k, v in sorted(work.queue_traffic.items())))
    print(
        f"  every request of the burst: {every:,} = {every / events:.2f} per event "
        "(goal: at most 0.50)"
    )
    print(
        f"  {work.read_units / events:.2f} RRU and {work.write_units / events:.2f} WRU per event; "
        f"{work.s3_puts} shard/index writes"
    )


# us-east-1 list prices (November 2026): what one unit of each costs, in dollars.
PRICES = {
    "sqs_standard_request": 0.40e-6,
    "sqs_fifo_request": 0.50e-6,
    "dynamodb_rru": 0.125e-6,  # on-demand read request unit
    "dynamodb_wru": 0.625e-6,  # on-demand write request unit
    "s3_put": 0.005e-3,
    "s3_get": 0.0004e-3,
    "lambda_request": 0.20e-6,
    "lambda_gb_second_arm": 0.0000133334,
    "logs_gb": 0.50,
}


def dollars_per_event(work: Work, events: int) -> dict[str, float]:
    """What ``work`` (for ``events`` events) costs per event, by service, at list prices.

    SQS counts the functions' requests and the event source mappings' receives and deletes as
    measured (a batch of 100 takes ten of each: SQS returns at most ten messages a receive),
    each at its queue's price (FIFO: rebuild, index), plus one send per event by the CMS.
    """
    from sitemap_updater.resources import FUNCTIONS, INDEXNOW  # noqa: PLC0415

    p = PRICES
    gb = {spec.name: spec.memory_mb / 1024 for spec in (*FUNCTIONS, INDEXNOW)}  # as deployed
    lambda_seconds = sum(seconds * gb[name] for name, seconds in work.seconds.items())
    cost = {
        "sqs": (events + work.sqs_requests["standard"]) * p["sqs_standard_request"]
        + work.sqs_requests["fifo"] * p["sqs_fifo_request"],
        "dynamodb": work.read_units * p["dynamodb_rru"] + work.write_units * p["dynamodb_wru"],
        "s3": work.operations["s3.PutObject"] * p["s3_put"]
        + (work.operations["s3.GetObject"] + work.operations["s3.HeadObject"]) * p["s3_get"],
        "lambda": sum(work.invocations.values()) * p["lambda_request"]
        + lambda_seconds * p["lambda_gb_second_arm"],
        "logs": sum(work.log_bytes.values()) / 1e9 * p["logs_gb"],
    }
    return {service: amount / events for service, amount in cost.items()}


def print_cost(label: str, work: Work, events: int) -> None:
    cost = dollars_per_event(work, events)
    total = sum(cost.values()) * 1e6
    parts = ", ".join(f"{service} ${amount * 1e6:.2f}" for service, amount in cost.items())
    print(f"  {label}: ${total:.2f} per million events ({parts})")
    logged = ", ".join(
        f"{name} {work.log_bytes[name] / count:,.0f}" for name, count in work.invocations.items()
    )
    print(f"    log bytes per invocation: {logged}")


def patch_cpu(entries: int = 10_000, runs: int = 9) -> dict[str, float]:
    """CPU (ms, median) of a rebuild's own work for one change in a shard of ``entries``,
    in process, no request: patched (gunzip, check, split, replace one line, join, gzip,
    hash) and, for comparison, rendered in full (render, gzip, hash; botocore's parsing of
    the full Query, which the patch avoids, not counted)."""
    import hashlib  # noqa: PLC0415
    import statistics  # noqa: PLC0415

    from sitemap_updater.domain.entries import SitemapEntry  # noqa: PLC0415
    from sitemap_updater.domain.patch import patched, shard_lines  # noqa: PLC0415
    from sitemap_updater.domain.render import render_entry  # noqa: PLC0415
    from sitemap_updater.domain.sharding import (  # noqa: PLC0415
        Limits,
        ShardFormat,
        shard_document,
    )

    limits = Limits(max_urls_per_shard=max(entries, 1))
    pages = [SitemapEntry(page(n)["url"], "2026-11-01", "weekly") for n in range(entries)]
    gzipped = ShardFormat()
    body = gzipped.body(shard_document([render_entry(p) for p in pages], limits))
    changed = SitemapEntry(pages[entries // 2].url, "2026-11-21", "weekly")

    def patch() -> None:
        document = gzipped.document_of(body) or b""
        hashlib.sha256(document).hexdigest()
        lines = shard_lines(document) or []
        new = shard_document(patched(lines, {changed.url: render_entry(changed)}), limits)
        gzipped.body(new)
        hashlib.sha256(new).hexdigest()

    def full() -> None:
        document = shard_document([render_entry(p) for p in pages], limits)
        gzipped.body(document)
        hashlib.sha256(document).hexdigest()

    def median_ms(run: Callable[[], None]) -> float:
        times = []
        for _ in range(runs):
            started = time.process_time()
            run()
            times.append((time.process_time() - started) * 1000)
        return round(statistics.median(times), 1)

    return {"entries": entries, "patched_ms": median_ms(patch), "full_render_ms": median_ms(full)}


# The largest shards a rebuild may hold, each near 50 MiB: (URLs, images a page, languages
# of each page's hreflang cluster, an emoji in one video title).
LARGEST_SHARDS = {
    "8 images a page": (50_000, 8, 0, False),
    "and one emoji": (50_000, 8, 0, True),  # a string of it would take 4 bytes a character
    "10 languages": (36_000, 0, 10, False),
    "64 languages": (6_500, 0, 64, False),  # the most a cluster holds
}


def rebuild_memory() -> dict[str, dict[str, float]]:
    """Peak memory (MB, the process's high-water mark) of a rebuild holding each of the
    largest shards (``LARGEST_SHARDS``), with the stylesheet: in a fresh process holding the
    rebuild handler's imports and clients, the registry's items read into entries (and
    their clusters' alternates, a hundred clusters a read, as the rebuild reads them),
    rendered in full, gzipped; then the gzipped bytes patched (one line replaced), as a warm
    function may do next. What the rebuild function's memory must hold."""
    import multiprocessing  # noqa: PLC0415

    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        return {kind: pool.apply(_largest_shard_peak, (kind,)) for kind in LARGEST_SHARDS}


def _largest_shard_peak(kind: str) -> dict[str, float]:
    import resource  # noqa: PLC0415
    from types import SimpleNamespace  # noqa: PLC0415

    import boto3  # noqa: PLC0415

    import sitemap_updater.handlers.rebuild  # noqa: F401, PLC0415
    from sitemap_updater.adapters import registry  # noqa: PLC0415
    from sitemap_updater.domain.clusters import Cluster, Member  # noqa: PLC0415
    from sitemap_updater.domain.entries import SitemapEntry, Video  # noqa: PLC0415
    from sitemap_updater.domain.patch import patched, shard_lines  # noqa: PLC0415
    from sitemap_updater.domain.render import render_entry  # noqa: PLC0415
    from sitemap_updater.domain.sharding import (  # noqa: PLC0415
        Limits,
        ShardFormat,
        shard_document,
    )
    from sitemap_updater.usecases.rebuild import RebuildShard  # noqa: PLC0415

    def peak_mb() -> float:  # VmHWM: ru_maxrss would keep the forking parent's peak
        status = Path("/proc/self/status")
        if status.exists():
            line = next(x for x in status.read_text().splitlines() if x.startswith("VmHWM:"))
            return round(int(line.split()[1]) / 1024)
        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

    for service in ("dynamodb", "s3", "sqs"):
        boto3.client(service, region_name="us-east-1")
    figures = {"imports_mb": peak_mb()}
    urls, images, languages, emoji = LARGEST_SHARDS[kind]
    langs = [f"l{n}" for n in range(languages)]

    def url_of(n: int, lang: str = "") -> str:
        return page(n)["url"].replace("/articles/", f"/{lang}/articles/" if lang else "/articles/")

    def items() -> Any:  # as botocore returns them, a page at a time
        for n in range(urls):
            pictures = tuple(f"{SITE}/images/{n:07d}/picture-{k}.jpg" for k in range(images))
            video = Video(f"{SITE}/t.jpg", "A title \U0001f600", "A video", f"{SITE}/v.mp4")
            videos = (video,) if emoji and n == 0 else ()
            entry = SitemapEntry(
                url_of(n, *langs[:1]), "2026-11-01T10:00:00+00:00", images=pictures, videos=videos
            )
            commit = SimpleNamespace(
                change=SimpleNamespace(version=1), cluster_id=f"c{n}" if languages else None
            )
            yield registry._entry_item("pages-00001", commit, entry)

    def cluster_item(cid: str) -> dict[str, Any]:  # a page in every language, all declared
        hrefs = [(lang, url_of(int(cid[1:]), lang)) for lang in langs]
        members = {
            href: Member(lang, tuple(hrefs), True, f"{lang}-00001", 300, 2000)
            for lang, href in hrefs
        }
        members_json = registry._members_json(Cluster(cid, 1, members))
        return registry._attrs({"version": 1, "members": members_json}, registry.cluster_key(cid))

    class Reader(registry.Registry):
        def __init__(self) -> None:
            pass

        def _partition(self, pk: str, prefix: str | None = None) -> Any:
            return items()

        def _batch_get(self, keys: Sequence[Any]) -> list[Any]:
            return [cluster_item(key["pk"]["S"].removeprefix("CLUSTER#")) for key in keys]

    limits, stylesheet, shards = Limits(max_urls_per_shard=50_000), "/sitemap.xsl", ShardFormat()
    now = datetime(2026, 11, 28, tzinfo=UTC)
    rebuild = RebuildShard(
        limits=limits,
        shard_format=shards,
        cache_control="",
        registry=Reader(),
        store=None,  # type: ignore[arg-type]
        index=None,  # type: ignore[arg-type]
        clock=lambda: now,
        stylesheet=stylesheet,
    )
    rendered, _ = rebuild._rendered(rebuild.registry.shard_entries("pages-00001"), now)
    document = shard_document(rendered, limits, stylesheet=stylesheet)
    body = shards.body(document)
    figures.update(document_mib=round(len(document) / 2**20, 1), full_render_mb=peak_mb())
    del rendered, document
    lines = shard_lines(shards.document_of(body) or b"") or []
    changed = SitemapEntry(url_of(urls // 2, *langs[:1]), "2026-11-21", "weekly")
    change = {changed.url: render_entry(changed)}
    shards.body(shard_document(patched(lines, change), limits, stylesheet=stylesheet))
    figures["then_patched_mb"] = peak_mb()
    return figures


def as_json(work: Work, events: int = 1) -> dict[str, Any]:
    """One row of the JSON summary: per event."""
    cost = dollars_per_event(work, events)
    return {
        "requests": round(work.total / events, 2),
        "requests_with_queue_traffic": round(
            (work.total + sum(work.queue_traffic.values())) / events, 2
        ),
        "operations": dict(sorted(work.operations.items())),
        "read_units": round(work.read_units / events, 2),
        "write_units": round(work.write_units / events, 2),
        "kb_sent": round(work.sent / KB / events, 1),
        "kb_received": round(work.received / KB / events, 1),
        "log_bytes": round(sum(work.log_bytes.values()) / events),
        "dollars_per_million": round(sum(cost.values()) * 1e6, 2),
        "dollars_per_million_by_service": {k: round(v * 1e6, 2) for k, v in cost.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="registry sizes on moto")
    parser.add_argument("--shard-size", type=int, default=1000, help="URLs per shard (1000)")
    parser.add_argument(
        "--simulate",
        default="1000000,10000000,100000000",
        help="site sizes simulated (only the event's shard stored; empty: none)",
    )
    parser.add_argument("--sim-shard-size", type=int, default=10_000, help="their shards' size")
    parser.add_argument("--burst", type=int, default=1000, help="publishes in the burst")
    parser.add_argument("--json", action="store_true", help="end with the figures as one JSON")
    args = parser.parse_args(argv)
    if args.burst < 1:  # checked first: the burst is measured after minutes of the rest
        parser.error("--burst must be at least 1")
    sizes = [int(size) for size in args.sizes.split(",")]
    simulated = [int(size) for size in args.simulate.split(",") if size]
    fake_aws_environment()
    from sitemap_updater.local.tuning import tune_moto  # noqa: PLC0415

    tune_moto()
    by_size = measure_sizes(sizes, args.shard_size)
    print_sizes(by_size, args.shard_size)
    by_sim = measure_sizes(simulated, args.sim_shard_size, load_sparse) if simulated else {}
    if by_sim:
        print_sizes(by_sim, args.sim_shard_size)
    burst, batch_size, invocations = measure_burst(args.burst, max(args.burst, args.shard_size))
    print_burst(burst, args.burst, batch_size, invocations)
    cpu = patch_cpu(args.sim_shard_size)
    print(
        f"\nRebuild CPU for one change in a shard of {cpu['entries']:,} entries: "
        f"{cpu['patched_ms']} ms patched, {cpu['full_render_ms']} ms rendered in full"
    )
    memory = rebuild_memory()
    print("Rebuild peak memory, the largest shards (MB after imports, rendered, then patched):")
    for kind, peak in memory.items():
        print(
            f"  {kind:16} {peak['document_mib']:5} MiB: {peak['imports_mb']} MB, "
            f"{peak['full_render_mb']} MB, {peak['then_patched_mb']} MB"
        )
    largest = by_size[sizes[-1]]
    print(
        f"\nCost at list prices (shards of {args.shard_size:,} URLs; Lambda time measured on moto,"
    )
    print("in process, without AWS's latency: docs/PERFORMANCE.md prices a duration model)")
    print_cost("each publish alone (an existing URL)", largest[0], 1)
    for size, works in by_sim.items():
        print_cost(f"each publish alone, {size:,} URLs (simulated)", works[0], 1)
    print_cost(f"a burst of {args.burst:,} into one shard", burst, args.burst)
    if args.json:
        rows = {**by_size, **by_sim}
        figures = {
            "sizes": {
                str(size): {name: as_json(w) for (name, _), w in zip(EVENTS, works, strict=True)}
                for size, works in rows.items()
            },
            "simulated": [str(size) for size in by_sim],
            "burst": {"events": args.burst, **as_json(burst, args.burst)},
            "rebuild_cpu": cpu,
            "rebuild_memory": memory,
        }
        print(json.dumps(figures, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
