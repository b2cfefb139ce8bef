"""``sitemap-updater backfill``: import an existing site into the registry.

Sources: a live sitemap tree (a site root or robots.txt URL, whose Sitemap lines are
followed; a sitemap index; a sitemap; ``.xml.gz`` read), a local sitemap or index file, or
page records (CSV, JSON Lines, JSON; see :mod:`sitemap_updater.ops.pages`).

Each page goes through the ingest function's own code: validated as its publish event
(:func:`~sitemap_updater.ops.pages.page_change`), then applied by ``ApplyChange`` (the
ordering gate, placement, the entry and byte limits), a few pages at a time in parallel.
A page without a version gets ``--version`` (default 0): any real CMS version is greater,
so the CMS's next event for the page always wins, and a page the CMS already published (or
unpublished) is left alone (stale). Running the same backfill again applies nothing twice:
equal versions are duplicates. That is how an interrupted backfill resumes.

At the end, one rebuild request per touched shard goes to the rebuild queue, exactly as
ingest sends them (and a duplicate asks again, in case the first run stopped before its
requests): the rebuild function renders each shard once, and the index follows.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from sitemap_updater.domain.contract import PageChange, normalise_version
from sitemap_updater.domain.errors import InvalidEvent, RetryableError
from sitemap_updater.domain.sharding import Limits, checked_entry_size
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.crawl import (
    INDEX,
    ROBOTS,
    UNKNOWN,
    UNREADABLE,
    URLSET,
    Document,
    Entry,
    Walk,
    load_document,
)
from sitemap_updater.ops.errors import UserError, aws_error_message
from sitemap_updater.ops.fetch import GZIP_MAGIC, Fetched, fetch, gunzip
from sitemap_updater.ops.pages import Record, page_change, read_records
from sitemap_updater.ops.progress import Progress
from sitemap_updater.ops.resolve import is_local, resolve

if TYPE_CHECKING:
    from sitemap_updater.bootstrap import App
    from sitemap_updater.usecases.ingest import IngestResult

RETRIES = 5
DEFAULT_WORKERS = 4
_RECORD_SUFFIXES = {".csv", ".jsonl", ".ndjson", ".json"}


@dataclass(frozen=True)
class Problem:
    origin: str
    reason: str


@dataclass
class BackfillResult:
    read: int = 0
    applied: int = 0
    duplicate: int = 0
    stale: int = 0
    valid: int = 0  # --dry-run: would be applied
    rejected: list[Problem] = field(default_factory=list)
    failed: list[Problem] = field(default_factory=list)  # retried, still failing
    source_faults: list[Problem] = field(default_factory=list)  # documents not read
    shards: set[str] = field(default_factory=set)
    rebuilds_requested: int = 0
    interrupted: bool = False


# --- sources ---------------------------------------------------------------------------------


def entry_record(entry: Entry) -> dict[str, Any]:
    """A sitemap ``<url>`` as a page record (empty elements count as absent)."""
    record: dict[str, Any] = {}
    if entry.loc is not None:
        record["url"] = entry.loc
    if entry.lastmod:
        record["lastmod"] = entry.lastmod
    if entry.changefreq:
        record["changefreq"] = entry.changefreq
    if entry.priority:
        try:
            record["priority"] = Decimal(entry.priority)  # the XML's number, as JSON's would be
        except InvalidOperation:
            record["priority"] = entry.priority  # rejected by the contract, with its reason
    return record


def document_records(documents: Iterable[Document], faults: list[Problem]) -> Iterator[Record]:
    """The pages of every sitemap on a walk; documents that cannot be read are faults."""
    for document in documents:
        named = f" (named at {document.referrer})" if document.referrer else ""
        if document.fetched.too_large:
            faults.append(Problem(document.url, f"over 50 MiB uncompressed{named}; not read"))
        elif document.kind == ROBOTS:
            if document.error:
                faults.append(Problem(document.url, document.error))
            elif not document.sitemap_lines:
                faults.append(Problem(document.url, "names no sitemap (no Sitemap: line)"))
        elif document.kind == UNREADABLE:
            faults.append(Problem(document.url, f"{document.error}{named}"))
        elif document.kind == UNKNOWN:
            faults.append(Problem(document.url, f"not a sitemap or sitemap index{named}"))
        elif document.kind == URLSET:
            for entry in document.urls:
                yield Record(f"{document.url}:{entry.line}", entry_record(entry))


def source_records(
    source: str, *, timeout: float, workers: int, faults: list[Problem]
) -> Iterator[Record]:
    """Every page record the source holds, in order."""
    walk = Walk(
        fetch=partial(fetch, timeout=timeout, same_origin=True), workers=workers, same_origin=True
    )
    if source.lower().startswith(("http://", "https://")):
        yield from document_records(walk.run(source), faults)
        return
    path = Path(source)
    if not path.is_file():
        raise UserError(f"no such file, and not an http(s) URL: {source}")
    if path.suffix.lower() in _RECORD_SUFFIXES:
        yield from read_records(path)
        return
    body = path.read_bytes()
    if body.startswith(GZIP_MAGIC):
        body, too_large = gunzip(body, 52_428_800)
        if too_large:
            raise UserError(f"{path}: over 50 MiB uncompressed")
    document = load_document(str(path), Fetched(str(path), str(path), 200, body))
    children = [(entry.loc, f"{path}:{entry.line}", 1) for entry in document.sitemaps if entry.loc]
    if document.kind == INDEX:
        yield from document_records(walk.run_from(children), faults)
    elif document.kind == URLSET:
        yield from document_records([document], faults)
    else:
        raise UserError(f"{path}: {document.error or 'not a sitemap, index or page records'}")


# --- applying ---------------------------------------------------------------------------------


class Importer:
    """Apply page changes through the ingest function's ApplyChange, a few in parallel."""

    def __init__(self, app: App, workers: int):
        self.app = app
        self.workers = max(1, workers)
        self._local = threading.local()

    def _apply(self, change: PageChange) -> IngestResult:
        from sitemap_updater.usecases.ingest import ApplyChange  # noqa: PLC0415

        apply = getattr(self._local, "apply", None)
        if apply is None:  # one per thread: it caches each group's open shard
            base = self.app.apply_change
            apply = ApplyChange(base.registry, base.limits, base.tombstone_ttl_seconds, base.clock)
            self._local.apply = apply
        for attempt in range(RETRIES):
            try:
                result: IngestResult = apply(change)
            except RetryableError:
                if attempt == RETRIES - 1:
                    raise
                time.sleep(0.05 * 2**attempt)
                continue
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def run(
        self,
        records: Iterable[Record],
        site: Site,
        version: Decimal,
        result: BackfillResult,
        progress: Progress,
    ) -> None:
        from sitemap_updater.observability import metrics  # noqa: PLC0415

        window: deque[tuple[Record, Future[IngestResult]]] = deque()
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            try:
                for record in records:
                    change = _validated(record, site, version, result)
                    if change is None:
                        progress.advance()
                        continue
                    window.append((record, pool.submit(self._apply, change)))
                    while len(window) >= self.workers * 4:
                        self._collect(*window.popleft(), result)
                        progress.advance()
                    if result.read % 50 == 0:
                        metrics.clear_metrics()  # never published from here
            except KeyboardInterrupt:
                result.interrupted = True
                for _record, future in window:
                    future.cancel()
            finally:
                while window:
                    record, future = window.popleft()
                    if not future.cancelled():
                        self._collect(record, future, result)
                        progress.advance()
                metrics.clear_metrics()

    @staticmethod
    def _collect(record: Record, future: Future[IngestResult], result: BackfillResult) -> None:
        from sitemap_updater.usecases.ingest import Outcome  # noqa: PLC0415

        try:
            outcome = future.result()
        except InvalidEvent as rejected:  # entry_too_large
            result.rejected.append(Problem(record.origin, rejected.reason))
            return
        except RetryableError as exc:
            result.failed.append(Problem(record.origin, f"{type(exc).__name__}: {exc}"))
            return
        result.shards.update(outcome.shards)
        if outcome.outcome is Outcome.APPLIED:
            result.applied += 1
        elif outcome.outcome is Outcome.DUPLICATE:
            result.duplicate += 1
        else:
            result.stale += 1


def _validated(
    record: Record, site: Site, version: Decimal, result: BackfillResult
) -> PageChange | None:
    result.read += 1
    try:
        if record.error is not None:
            raise record.error
        return page_change(record, site, version)
    except InvalidEvent as rejected:
        result.rejected.append(Problem(record.origin, rejected.reason))
        return None


def dry_run(
    records: Iterable[Record],
    site: Site,
    limits: Limits,
    *,
    version: Decimal,
    result: BackfillResult,
    progress: Progress,
) -> None:
    """Validate only: what would be applied, what would be rejected and why."""
    for record in records:
        progress.advance()
        change = _validated(record, site, version, result)
        if change is None or change.entry is None:
            continue
        try:
            checked_entry_size(change.entry, limits)
        except InvalidEvent as rejected:
            result.rejected.append(Problem(record.origin, rejected.reason))
            continue
        result.valid += 1


def request_rebuilds(app: App, shards: set[str], run_id: str) -> int:
    """One rebuild request per shard, deduplicated within this run only."""
    if shards:
        app.queues.request_rebuilds({shard: [f"backfill:{run_id}"] for shard in sorted(shards)})
    return len(shards)


# --- the command ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    version = _default_version(args.version)
    if args.workers is not None and args.workers < 1:
        raise UserError("--workers must be at least 1")
    deployment = resolve(args)
    workers = args.workers or (1 if is_local(args.endpoint_url) else DEFAULT_WORKERS)
    faults: list[Problem] = []
    records = source_records(args.source, timeout=args.timeout, workers=4, faults=faults)
    result = BackfillResult()
    with Progress("backfill") as progress:
        if args.dry_run:
            dry_run(
                records,
                deployment.site,
                deployment.limits,
                version=version,
                result=result,
                progress=progress,
            )
        else:
            app = deployment.app
            site = deployment.settings.site
            try:
                Importer(app, workers).run(records, site, version, result, progress)
            finally:  # even after a fatal error: the pages applied so far get their rebuilds
                _request_rebuilds(app, result)
    result.source_faults = faults
    _report(result, args)
    if result.interrupted:
        return 130
    return 1 if result.failed or result.source_faults else 0


_SHARDS_NAMED = 10  # in the failure's one line (the JSON report lists every shard)


def _request_rebuilds(app: App, result: BackfillResult) -> None:
    """Ask for the touched shards' rebuilds; a refusal is a failure of the run, reported with
    its summary (the pages are applied: running the same backfill again asks again)."""
    try:
        result.rebuilds_requested = request_rebuilds(app, result.shards, uuid.uuid4().hex)
    except (RetryableError, ClientError, BotoCoreError) as exc:
        why = aws_error_message(exc) or f"{type(exc).__name__}: {exc}"
        named = sorted(result.shards)
        shards = ", ".join(named[:_SHARDS_NAMED]) + (
            f" and {len(named) - _SHARDS_NAMED} more" if len(named) > _SHARDS_NAMED else ""
        )
        result.failed.append(Problem("rebuild requests", f"not sent for {shards}: {why}"))


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
    lines = [f"source fault {p.origin}: {p.reason}" for p in result.source_faults]
    lines += [f"rejected {p.origin}: {p.reason}" for p in result.rejected]
    lines += [f"failed {p.origin}: {p.reason}" for p in result.failed]
    if args.dry_run:
        lines.append(
            f"backfill --dry-run: {result.read:,} page(s) read, {result.valid:,} valid, "
            f"{len(result.rejected):,} rejected; nothing written"
        )
    else:
        lines.append(
            f"backfill: {result.read:,} page(s) read: {result.applied:,} applied, "
            f"{result.duplicate:,} already there (duplicate), {result.stale:,} stale (the "
            f"registry has a newer version), {len(result.rejected):,} rejected, "
            f"{len(result.failed):,} failed"
        )
        lines.append(
            f"rebuild requested for {result.rebuilds_requested:,} shard(s); the rebuild and "
            "index functions publish them"
        )
    if result.source_faults:
        lines.append(f"{len(result.source_faults):,} source document(s) could not be read")
    if result.interrupted or result.failed:
        lines.append("incomplete: run the same command again to resume (it is idempotent)")
    print("\n".join(lines), flush=True)
    if args.json:
        summary = {
            "read": result.read,
            "applied": result.applied,
            "duplicate": result.duplicate,
            "stale": result.stale,
            "valid": result.valid,
            "rejected": [vars(p) for p in result.rejected],
            "failed": [vars(p) for p in result.failed],
            "source_faults": [vars(p) for p in result.source_faults],
            "shards": sorted(result.shards),
            "rebuilds_requested": result.rebuilds_requested,
            "interrupted": result.interrupted,
        }
        print(json.dumps(summary, ensure_ascii=False), flush=True)
