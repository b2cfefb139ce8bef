"""``sitemap-updater local``: the whole pipeline on moto: send the events to the ingest queue,
drive the handlers until the queues are drained, copy the bucket to a folder and report."""

from __future__ import annotations

import json
import pkgutil
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3

from sitemap_updater.adapters.queues import REASON_ATTRIBUTE
from sitemap_updater.domain.contract import exact_json
from sitemap_updater.domain.feed import FEED_KEY
from sitemap_updater.domain.indexnow import KEY_PATTERN
from sitemap_updater.domain.sharding import ROBOTS_KEY, SITEMAP_FILE
from sitemap_updater.domain.stylesheet import STYLESHEET_KEY
from sitemap_updater.local import poller
from sitemap_updater.local.feeder import MessageBody, read_paths
from sitemap_updater.local.stack import (
    LOCAL_PREFIX,
    LocalStack,
    MotoServer,
    create_resources,
    use_endpoint,
)
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.progress import Progress
from sitemap_updater.ops.send import send_bodies

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

    from sitemap_updater.bootstrap import App


@dataclass
class Rejection:
    reason: str
    event: Any


@dataclass
class Summary:
    sent: int = 0
    accepted: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    dead_lettered: int = 0
    objects_written: int = 0
    objects: list[str] = field(default_factory=list)
    out: str = ""
    # Publish-to-visible latency (ms): how long after SQS received an event the index showed it.
    freshness_ms: dict[str, float] = field(default_factory=dict)


class Pipeline:
    """The deployed resources and the handlers, driven from their queues wherever boto3 points:
    moto's server (``sitemap-updater local``) or its in-process mock (the tests)."""

    def __init__(self, stack: LocalStack, app: App, session: boto3.session.Session | None = None):
        self.stack = stack
        self.app = app
        self.put_count = 0
        self.refused: list[Rejection] = []  # bodies the ingest queue did not take
        app.store.client.meta.events.register("after-call.s3.PutObject", self._count_put)
        # The functions use the app's clients; the CMS, Lambda's pollers and whoever looks at
        # the bucket use their own, so hooks on the app's clients see the functions' calls only.
        session = session or boto3.session.Session()
        self.sqs: SQSClient = session.client("sqs")
        self.s3: S3Client = session.client("s3")
        self.mappings = {
            name: poller.EventSourceMapping(
                sqs=self.sqs,
                queue_url=queue.url,
                queue_arn=queue.arn,
                function_name=f"sitemap-updater-{name}",
                handler=partial(pkgutil.resolve_name(queue.spec.handler), app_=app),
                batch_size=queue.spec.batch_size,
            )
            for name, queue in stack.queues.items()
        }

    @classmethod
    def create(
        cls,
        site_url: str,
        settings_overrides: dict[str, Any] | None = None,
        *,
        visibility_timeout: int | None = 2,
        clock: Callable[[], datetime] | None = None,
        prefix: str = LOCAL_PREFIX,
        session: boto3.session.Session | None = None,
    ) -> Pipeline:
        """Create the resources and wire the functions (one ``session`` for many pipelines
        saves building the clients' service models each time)."""
        from sitemap_updater.bootstrap import build_app, utc_now  # noqa: PLC0415

        session = session or boto3.session.Session()
        stack = create_resources(
            site_url, settings_overrides, visibility_timeout, session=session, prefix=prefix
        )
        app = build_app(stack.settings, session=session, clock=clock or utc_now)
        return cls(stack, app, session)

    def _count_put(self, http_response: Any, **_: Any) -> None:
        if http_response.status_code == 200:
            self.put_count += 1

    def send_messages(self, messages: Sequence[MessageBody]) -> int:
        """Put the bodies on the ingest queue as ``sitemap-updater send`` does; one SQS refuses
        (over its size limit, say) is a rejected event of the summary. Returns how many went."""
        url = self.stack.queues["ingest"].url
        result = send_bodies(self.sqs, url, messages, Progress("send", enabled=False))
        if result.interrupted:
            raise KeyboardInterrupt
        if result.stopped:  # moto's server gone, say: not a fault of the events
            raise ConnectionError(f"the ingest queue took no more messages: {result.stopped}")
        bodies = {message.origin: message.body for message in messages}
        self.refused.extend(
            Rejection(
                reason=f"not_sent: the ingest queue refused {failure.origin}: "
                f"{failure.code}: {failure.message}",
                event=_as_json(bodies[failure.origin]),
            )
            for failure in result.failed
        )
        return result.sent

    def drain(self, timeout_seconds: float = 600) -> None:
        poller.drain(self.sqs, list(self.mappings.values()), timeout_seconds)

    def run_forever(self) -> None:
        """Drive the handlers from their queues, as Lambda would, until interrupted."""
        while True:
            if not poller.poll_round(self.mappings.values()):
                time.sleep(0.2)

    def dead_letters(self) -> list[dict[str, Any]]:
        """The messages in every DLQ, read and left there: all of a standard queue's, at most
        ten per message group of a FIFO one (count with queue_depth)."""
        messages: list[dict[str, Any]] = []
        for queue in self.stack.queues.values():
            held = poller.receive(self.sqs, queue.dlq_url, VisibilityTimeout=60)
            handles = [message["ReceiptHandle"] for message in held]
            # Visible again at once, so that a redrive can move them.
            poller.set_visibility(self.sqs, queue.dlq_url, handles, 0)
            messages.extend({"queue": queue.spec.name, **message} for message in held)
        return messages

    def objects(self) -> dict[str, bytes]:
        """Every object in the bucket, as stored (shards still gzipped)."""
        bucket = self.app.settings.bucket_name
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
        return {key: self.s3.get_object(Bucket=bucket, Key=key)["Body"].read() for key in keys}

    def export(self, out_dir: Path) -> list[str]:
        """Copy the bucket into ``out_dir``, replacing it (see check_replaceable)."""
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        objects = self.objects()
        for key, body in objects.items():
            target = (out_dir / key).resolve()
            if out_dir.resolve() not in target.parents:
                raise ValueError(f"refusing to write outside {out_dir}: {key}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
        return sorted(objects)

    def summarise(self, sent: int, out_dir: Path) -> Summary:
        letters = [m for m in self.dead_letters() if m["queue"] == "ingest"]
        return Summary(
            sent=sent,
            accepted=sent - len(letters),
            rejected=[*self.refused, *(_rejection(letter) for letter in letters)],
            dead_lettered=sum(
                poller.queue_depth(self.sqs, q.dlq_url) for q in self.stack.queues.values()
            ),
            objects_written=self.put_count,
            objects=self.export(out_dir),
            out=str(out_dir),
            freshness_ms=freshness(self.app.publish_index.latencies),
        )


def freshness(latencies: Iterable[float]) -> dict[str, float]:
    """p50, p99 and max of the latencies (nearest rank), as the dashboard shows them."""
    ordered = sorted(latencies)
    if not ordered:
        return {}
    figures = {f"p{q}": ordered[-(-len(ordered) * q // 100) - 1] for q in (50, 99)}  # ceil
    return {**figures, "max": ordered[-1], "changes": len(ordered)}


def _rejection(letter: dict[str, Any]) -> Rejection:
    """A dead letter of the ingest queue: its reason, or that SQS moved it there."""
    reason = letter.get("MessageAttributes", {}).get(REASON_ATTRIBUTE, {}).get("StringValue")
    fallback = "dead_lettered: failed maxReceiveCount times (see the logs)"
    return Rejection(reason=reason or fallback, event=_as_json(letter["Body"]))


# Far deeper than any event. The summary is written out with json, which recurses: a body
# nested deeper than this is reported as its text.
MAX_REPORTED_NESTING = 100


def _as_json(body: str) -> Any:
    """The body as the summary reports it: its JSON when that says what the text says (no
    key given twice, no NaN, no number beyond a float), else its text."""
    try:
        exact_json(body)  # the contract's reading: refuses a key given twice, NaN
        document = json.loads(body, parse_float=_float_as_written)
    except (ValueError, RecursionError):
        return body
    return body if _nested_deeper_than(document, MAX_REPORTED_NESTING) else document


def _float_as_written(text: str) -> float:
    value = float(text)
    if Decimal(repr(value)) != Decimal(text):  # 1e400 (infinity), more digits than a float
        raise ValueError(text)
    return value


def _nested_deeper_than(document: Any, levels: int) -> bool:
    level = [document]
    for _ in range(levels):
        level = [
            child
            for node in level
            if isinstance(node, dict | list)
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return False
    return True


def run_local(
    paths: Sequence[Path],
    site_url: str,
    out_dir: Path,
    settings_overrides: dict[str, Any] | None = None,
    moto_port: int = 0,
) -> tuple[MotoServer, Pipeline, Summary]:
    """Run the pipeline over the event files; moto's server is left running (stop() it)."""
    messages = read_paths(paths)
    server = MotoServer(moto_port)
    try:
        use_endpoint(server.start())
        pipeline = Pipeline.create(site_url, settings_overrides)
        sent = pipeline.send_messages(messages)
        pipeline.drain()
        return server, pipeline, pipeline.summarise(sent, out_dir)
    except BaseException:
        server.stop()
        raise


def check_replaceable(out: Path, events: Sequence[Path]) -> None:
    """A run replaces ``out`` whole, so it must be absent or hold only what a run writes, and
    never the events or the current folder: a web root given by mistake is refused, not emptied."""
    target = out.resolve()
    for kept in (Path.cwd(), *events):
        if target == kept.resolve() or target in kept.resolve().parents:
            raise UserError(f"--out {out} would delete {kept}: give it a folder of its own")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is not a folder")
    foreign = sorted(p.name for p in out.iterdir() if not _written(p)) if out.is_dir() else []
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise UserError(
            f"--out {out} holds {foreign[0]!r}{more}, which a local run does not write, and "
            "the run replaces the folder whole: give it a folder of its own, or empty it"
        )


def _written(path: Path) -> bool:
    return path.is_file() and bool(
        SITEMAP_FILE.fullmatch(path.name)
        or path.name in (ROBOTS_KEY, STYLESHEET_KEY, FEED_KEY)
        or (path.suffix == ".txt" and KEY_PATTERN.fullmatch(path.stem))
    )
