"""``sitemap-updater backfill``: import an existing site into the registry, each page as its
publish event through the ingest function's own code (docs/OPERATIONS.md)."""

from __future__ import annotations

import argparse
import threading
import time
import uuid
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import suppress
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from functools import partial
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from botocore.exceptions import BotoCoreError, ClientError

from sitemap_updater.domain.contract import PageChange, normalise_version
from sitemap_updater.domain.errors import InvalidEvent, RetryableError
from sitemap_updater.domain.feed import Gathered, feed_entry
from sitemap_updater.domain.sharding import PROTOCOL_MAX_BYTES, Limits, checked_entry_size
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops import crawl
from sitemap_updater.ops.errors import UserError, aws_error_message, exit_status
from sitemap_updater.ops.extensions import Extensions
from sitemap_updater.ops.fetch import GZIP_MAGIC, Fetched, fetch, gunzip
from sitemap_updater.ops.pages import (
    Problem,
    Record,
    page_change,
    read_bytes,
    read_records,
    record_suffix,
)
from sitemap_updater.ops.progress import Progress, print_summary
from sitemap_updater.ops.resolve import is_local, resolve
from sitemap_updater.usecases.retry import retry

if TYPE_CHECKING:
    from sitemap_updater.bootstrap import App
    from sitemap_updater.usecases.ingest import ApplyChange, IngestResult

RETRIES = 5
DEFAULT_WORKERS = 4
_RECORD_SUFFIXES = {".csv", ".tsv", ".jsonl", ".ndjson", ".json"}
_SHARDS_NAMED = 10  # in the failure's one line (the JSON report lists every shard)
_PAGES = (crawl.URLSET, crawl.TEXT, crawl.FEED)  # documents that list pages
Changes = Iterator[tuple[Record, PageChange]]
Apply = Callable[[PageChange], "IngestResult"]


@dataclass
class BackfillResult:
    """The run's summary; ``--json`` prints it in this order."""

    read: int = 0
    applied: int = 0
    duplicate: int = 0
    stale: int = 0
    valid: int = 0  # --dry-run: would be applied
    rejected: list[Problem] = field(default_factory=list)
    failed: list[Problem] = field(default_factory=list)  # retried, still failing
    not_carried: list[Problem] = field(default_factory=list)  # per page, what was dropped
    values_not_carried: int = 0
    source_faults: list[Problem] = field(default_factory=list)  # documents not read
    shards: set[str] = field(default_factory=set)
    rebuilds_requested: int = 0
    interrupted: bool = False
    not_applied: int = 0  # read, but Ctrl-C came first

    def settled(self) -> int:
        return self.applied + self.duplicate + self.stale + len(self.rejected) + len(self.failed)


def entry_record(origin: str, entry: crawl.Entry, extensions: Extensions) -> Record:
    """A sitemap ``<url>`` and its extensions as a page record; empty elements are absent."""
    record: dict[str, Any] = {} if entry.loc is None else {"url": entry.loc}
    for name in ("lastmod", "changefreq", "priority"):
        if getattr(entry, name):
            record[name] = getattr(entry, name)
    with suppress(InvalidOperation):  # not a number: the contract rejects it with its reason
        if entry.priority:
            record["priority"] = Decimal(entry.priority)  # the XML's number, as JSON's would be
    if entry.element is not None:
        record |= extensions.read(entry.element)
        return Record(origin, record, dropped=tuple(extensions.dropped))
    return Record(origin, record)


def document_records(
    documents: Iterable[crawl.Document], site: Site, faults: list[Problem]
) -> Iterator[Record]:
    """The pages of every sitemap on a walk; documents that cannot be read are faults."""
    extensions = Extensions(site)
    for document in documents:
        url, named = document.url, document.named
        if document.fetched.too_large:
            faults.append(Problem(url, f"over 50 MiB uncompressed{named}; not read"))
        elif document.kind == crawl.ROBOTS:
            if document.error:
                faults.append(Problem(url, document.error))
            elif not document.sitemap_lines:
                faults.append(Problem(url, "names no sitemap (no Sitemap: line)"))
        elif document.kind == crawl.UNREADABLE:
            faults.append(Problem(url, f"{document.error}{named}"))
        elif document.kind == crawl.UNKNOWN:
            faults.append(Problem(url, f"not a sitemap or sitemap index{named}"))
        elif document.kind in _PAGES:
            for entry in document.urls:
                yield entry_record(f"{url}:{entry.line}", entry, extensions)
        if stray := crawl.stray_entries(document):
            faults.append(Problem(url, f"{stray}{named}"))


def source_records(
    source: str, site: Site, *, timeout: float, faults: list[Problem]
) -> Iterable[Record]:
    """Every page record the source holds, in order: a list when it is a file of records (so
    its total is known). A walk stays on its origins."""
    walk = crawl.Walk(fetch=partial(fetch, timeout=timeout, same_origin=True), same_origin=True)
    if source.lower().startswith(("http://", "https://")):
        return document_records(walk.run(source), site, faults)
    path = Path(source)
    if not path.exists():
        raise UserError(f"no such file, and not an http(s) URL: {source}")
    if record_suffix(path) in _RECORD_SUFFIXES:
        return read_records(path)
    body = read_bytes(path)
    if body.startswith(GZIP_MAGIC):
        try:
            body, too_large = gunzip(body, PROTOCOL_MAX_BYTES)
        except zlib.error as exc:  # e.g. a download cut short
            raise UserError(f"{path}: bad gzip data: {exc}") from None
        if too_large:
            raise UserError(f"{path}: over 50 MiB uncompressed")
    document = crawl.load_document(str(path), Fetched(str(path), str(path), 200, body))
    if document.kind not in (crawl.INDEX, *_PAGES):
        raise UserError(f"{path}: {document.error or 'not a sitemap, index or page records'}")
    children = [(entry.loc, f"{path}:{entry.line}", 1) for entry in document.sitemaps if entry.loc]
    return document_records(chain([document], walk.run_from(children)), site, faults)


def page_changes(
    records: Iterable[Record],
    site: Site,
    version: Decimal,
    result: BackfillResult,
    progress: Progress,
) -> Changes:
    """Each record's change, validated as the ingest function validates its event."""
    for record in records:
        result.read += 1
        try:
            change = page_change(record, site, version)
        except InvalidEvent as rejected:
            result.rejected.append(Problem(record.origin, rejected.reason))
            progress.advance()
            continue
        if record.dropped:
            result.not_carried.append(Problem(record.origin, "; ".join(record.dropped)))
            result.values_not_carried += len(record.dropped)
        yield record, change


def applier(apply: ApplyChange, feed: Gathered | None = None) -> Apply:
    """``apply`` retried, one copy per thread (each caches its groups' open shards),
    gathering what it changes in ``feed``."""
    from sitemap_updater.usecases.ingest import Outcome  # noqa: PLC0415

    lock, local = threading.Lock(), threading.local()

    def one(change: PageChange) -> IngestResult:
        if (mine := getattr(local, "apply", None)) is None:
            mine = local.apply = replace(apply)
        outcome: IngestResult = retry(
            partial(mine, change), RETRIES, (RetryableError,), lost=_pause
        )
        if feed is not None and outcome.outcome is Outcome.APPLIED:
            with lock:
                for url in sorted(outcome.left):
                    feed.add(url, None)
                if change.url:
                    feed.add(change.url, feed_entry(change, mine.clock()))
        return outcome

    return one


def import_changes(
    apply: Apply, changes: Changes, result: BackfillResult, progress: Progress, workers: int
) -> None:
    """Apply the changes a few in parallel, in a window of writes under way."""
    from sitemap_updater.observability import metrics  # noqa: PLC0415

    window: deque[tuple[Record, Future[IngestResult]]] = deque()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for record, change in changes:
                window.append((record, pool.submit(apply, change)))
                while len(window) >= workers * 4:
                    wait([window[0][1]])  # Ctrl-C here: the write is still in the window
                    _collect(*window.popleft(), result, progress)
                if result.read % 50 == 0:
                    metrics.clear_metrics()  # never published from here
        except KeyboardInterrupt:
            result.interrupted = True
            for _record, future in window:
                future.cancel()
        finally:
            for record, future in window:
                if not future.cancelled():
                    _collect(record, future, result, progress)
            metrics.clear_metrics()
            result.not_applied = result.read - result.settled()


def _pause(attempt: int, _error: Exception) -> None:
    if attempt < RETRIES:
        time.sleep(0.05 * 2 ** (attempt - 1))


def _collect(
    record: Record, future: Future[IngestResult], result: BackfillResult, progress: Progress
) -> None:
    progress.advance()
    try:
        outcome = future.result()
    except InvalidEvent as rejected:  # entry_too_large
        result.rejected.append(Problem(record.origin, rejected.reason))
        return
    except RetryableError as exc:
        result.failed.append(Problem(record.origin, f"{type(exc).__name__}: {exc}"))
        return
    from sitemap_updater.usecases.ingest import Outcome  # noqa: PLC0415

    result.shards.update(outcome.shards)
    if outcome.outcome in (Outcome.APPLIED, Outcome.REPAIRED):  # a repair writes its entry
        result.applied += 1
    elif outcome.outcome is Outcome.DUPLICATE:
        result.duplicate += 1
    else:
        result.stale += 1


def dry_run(changes: Changes, limits: Limits, result: BackfillResult, progress: Progress) -> None:
    """Validate only: what would be applied, what would be rejected and why."""
    for record, change in changes:
        progress.advance()
        try:
            if change.entry is not None:  # an unpublish is valid as parsed
                checked_entry_size(change.entry, limits)
        except InvalidEvent as rejected:
            result.rejected.append(Problem(record.origin, rejected.reason))
        else:
            result.valid += 1


def request_rebuilds(app: App, result: BackfillResult) -> None:
    """One rebuild request per touched shard. A refusal is a failure of the run (the pages
    are applied: running the same backfill again asks again)."""
    cause, shards = f"backfill:{uuid.uuid4().hex}", sorted(result.shards)
    try:
        if shards:
            app.queues.request_rebuilds({shard: [cause] for shard in shards})
        result.rebuilds_requested = len(shards)
    except (RetryableError, ClientError, BotoCoreError) as exc:
        more = f" and {len(shards) - _SHARDS_NAMED} more" if len(shards) > _SHARDS_NAMED else ""
        why = f"not sent for {', '.join(shards[:_SHARDS_NAMED])}{more}: {aws_error_message(exc)}"
        result.failed.append(Problem("rebuild requests", why))


def update_feed(app: App, gathered: Gathered | None, result: BackfillResult) -> None:
    """Merge what the run changed into the feed once, at the end, as ingest does per batch."""
    feed = app.ingest.feed
    if feed is None or gathered is None or not gathered.changes:
        return
    try:
        feed(gathered.changes, app.apply_change.clock())
    except (RetryableError, ClientError, BotoCoreError) as exc:  # ConcurrentChange is one
        result.failed.append(Problem("feed", f"not updated: {aws_error_message(exc)}"))


def run(args: argparse.Namespace) -> int:
    version = _default_version(args.version)
    deployment = resolve(args)
    workers = args.workers or (1 if is_local(args.endpoint_url) else DEFAULT_WORKERS)
    result, site = BackfillResult(), deployment.site
    records = source_records(args.source, site, timeout=args.timeout, faults=result.source_faults)
    total = len(records) if isinstance(records, list) else None  # a walk's is not known
    with Progress("backfill", total=total) as progress:
        changes = page_changes(records, site, version, result, progress)
        if args.dry_run:
            dry_run(changes, deployment.limits, result, progress)
        else:
            app = deployment.app
            feed = Gathered(app.settings.feed_entries) if app.settings.feed_entries else None
            try:
                import_changes(applier(app.apply_change, feed), changes, result, progress, workers)
            finally:  # even after a fatal error: the pages applied so far get their rebuilds
                request_rebuilds(app, result)
                update_feed(app, feed, result)
    _report(result, args)
    return exit_status(
        interrupted=result.interrupted, failed=bool(result.failed or result.source_faults)
    )


def _default_version(text: str) -> Decimal:
    """A version the ingest function would accept (the contract's rule): one DynamoDB cannot
    store would pass the dry run and fail every write."""
    try:
        return normalise_version(Decimal(text))
    except (InvalidOperation, ValueError) as exc:
        why = f" ({exc})" if isinstance(exc, ValueError) else ""  # the contract's reason
        raise UserError(
            f"--version must be a number >= 0 that DynamoDB can store, got {text!r}{why}"
        ) from exc


def _report(result: BackfillResult, args: argparse.Namespace) -> None:
    lines = [
        f"{label} {problem.origin}: {problem.reason}"
        for label, problems in (
            ("source fault", result.source_faults),
            ("rejected", result.rejected),
            ("failed", result.failed),
            ("not carried", result.not_carried),
        )
        for problem in problems
    ]
    rejected, failed = len(result.rejected), len(result.failed)
    if args.dry_run:
        lines.append(
            f"backfill --dry-run: {result.read:,} page(s) read, {result.valid:,} valid, "
            f"{rejected:,} rejected; nothing written"
        )
    else:
        lines.append(
            f"backfill: {result.read:,} page(s) read: {result.applied:,} applied, "
            f"{result.duplicate:,} already there (duplicate), {result.stale:,} stale (the "
            f"registry has a newer version), {rejected:,} rejected, {failed:,} failed"
            + (f", {result.not_applied:,} not applied (interrupted)" if result.not_applied else "")
        )
        lines.append(
            f"rebuild requested for {result.rebuilds_requested:,} shard(s); the rebuild and "
            "index functions publish them"
        )
    if result.source_faults:
        lines.append(f"{len(result.source_faults):,} source document(s) could not be read")
    if result.not_carried:
        lines.append(
            f"{result.values_not_carried:,} value(s) of {len(result.not_carried):,} page(s) "
            "not carried: the event contract has no field for them (listed above)"
        )
    if result.interrupted or result.failed:
        lines.append("incomplete: run the same command again to resume (it is idempotent)")
    summary = msgspec.to_builtins(result) | {"shards": sorted(result.shards)}
    print_summary(lines, summary, args.json, ensure_ascii=False)
