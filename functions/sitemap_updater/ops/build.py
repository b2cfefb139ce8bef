"""``sitemap-updater build``: page records in, a complete site out, with no AWS at all.

Every step is the functions' own code (validation, hreflang clusters, placement, rendering),
so the files are what the pipeline would serve; the same input gives the same bytes. What a
snapshot has to choose (duplicates, a shard's lastmod) is in docs/OPERATIONS.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import partial
from itertools import chain
from operator import itemgetter
from pathlib import Path

import msgspec

from sitemap_updater.domain.clusters import Cluster, Member, Pairs, listings
from sitemap_updater.domain.contract import PageChange
from sitemap_updater.domain.dates import instant, normalise_w3c
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import parse_records
from sitemap_updater.domain.feed import FEED_KEY, Feed, feed_entry, merged
from sitemap_updater.domain.news import current_news
from sitemap_updater.domain.render import (
    IndexEntry,
    render_entry,
    render_feed,
    render_index,
    render_links,
    rendered_size,
    with_links,
)
from sitemap_updater.domain.robots import MAX_ROBOTS_BYTES, grows_too_large, with_sitemaps
from sitemap_updater.domain.sharding import (
    INDEX_KEY,
    ROBOTS_KEY,
    SITEMAP_FILE,
    GroupRules,
    Limits,
    ShardFormat,
    checked_rendered_size,
    fill,
    index_extras,
    index_room,
    shard_document,
    split_index,
    text_document,
)
from sitemap_updater.domain.stylesheet import STYLESHEET_HREF, STYLESHEET_KEY, stylesheet_bytes
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.pages import Problem, Record, read_records, record_value
from sitemap_updater.ops.parallel import in_two
from sitemap_updater.ops.progress import Progress, print_summary

_Placed = tuple[str, str, SitemapEntry, int]  # (URL, its <url> line, its entry, the line's bytes)
_Page = tuple[PageChange, str, int]  # a page's change, its <url> line without alternates, bytes
_DECLARED = (Member(), Member(live=True))  # a page that declares nothing, unpublished or not
_SHOW_SHARDS = 20


class ShardFile(msgspec.Struct, frozen=True):
    key: str
    entries: int
    bytes: int  # uncompressed
    lastmod: str | None


class BuildResult(msgspec.Struct):
    records: int = 0
    pages: int = 0
    duplicates: int = 0
    unpublished: int = 0
    rejected: list[Problem] = msgspec.field(default_factory=list)
    shards: list[ShardFile] = msgspec.field(default_factory=list)
    index_files: list[str] = msgspec.field(default_factory=list)
    stale_removed: list[str] = msgspec.field(default_factory=list)
    seconds: float = 0.0


class BuiltSite(msgspec.Struct):
    """Everything a build writes, in memory, before it touches the folder."""

    files: dict[str, bytes]
    result: BuildResult


def collect(
    records: Iterable[Record], site: Site, result: BuildResult, progress: Progress
) -> dict[str, _Page]:
    """URL -> its newest record's change and ``<url>`` line, in order of first appearance."""
    read = list(records)
    progress.total = result.records = len(read)
    parsed = in_two(read, partial(_parsed, site=site), _Page | str, progress.advance)
    pages: dict[str, _Page] = {}
    for record, page in zip(read, parsed, strict=True):
        if isinstance(page, str):
            reason = page if record.error is None else record.error.reason
            result.rejected.append(Problem(record.origin, reason))
        elif (before := pages.setdefault(page[0].url, page)) is not page:
            result.duplicates += 1
            if before[0].version <= page[0].version:  # the newer wins; of equals, the later
                pages[page[0].url] = page
    return pages


def _parsed(records: Sequence[Record], site: Site) -> list[_Page | str]:
    """Each record's change, its ``<url>`` line and that line's size, or why it is refused."""
    return [
        c.reason if isinstance(c, InvalidEvent) else _with_line(c)
        for c in parse_records([record_value(record) for record in records], site)
    ]


def _with_line(change: PageChange) -> _Page:
    line = render_entry(change.entry) if change.entry else ""
    return change, line, rendered_size(line)


def cluster_links(pages: dict[str, _Page]) -> dict[str, Pairs]:
    """URL -> the alternates its entry lists: every page that declares a language or
    alternates, and every page declared, in one cluster whose components the domain's rule
    lists (``domain.clusters.listings``)."""
    members = {
        url: Member(change.hreflang, change.alternates, change.live)
        for url, (change, _, _) in pages.items()
        if change.hreflang or change.alternates
    }
    for member in list(members.values()):
        for _, href in member.declares:
            if href not in members:  # declared only
                declared = pages.get(href)
                members[href] = _DECLARED[declared is not None and declared[0].live]
    return listings(Cluster(cid="build", members=members)) if members else {}


def _placed(
    pages: dict[str, _Page], limits: Limits, rules: GroupRules, result: BuildResult
) -> dict[str, list[_Placed]]:
    """Shard id -> its live entries, placed as ingest places new URLs (too large: rejected)."""
    links = cluster_links(pages)
    markup: dict[Pairs, str] = {}  # a cluster's links, rendered once for all its members
    groups: defaultdict[str, list[_Placed]] = defaultdict(list)
    max_entry_bytes, group_for = limits.max_entry_bytes, rules.group_for
    for url, page in pages.items():
        change, text, size = page
        entry = change.entry
        if entry is None:
            result.unpublished += 1
            continue
        if url in links:
            pairs = links[url]
            if pairs not in markup:
                markup[pairs] = render_links(pairs)
            entry = msgspec.structs.replace(entry, alternates=pairs)
            if entry.images or entry.videos or entry.news:
                text = render_entry(entry, markup[pairs])
            else:  # most pages: the line read in parallel, with the cluster's links
                text = with_links(text, markup[pairs])
            size = rendered_size(text)
        if size > max_entry_bytes:
            try:
                checked_rendered_size(text, limits)
            except InvalidEvent as rejected:
                result.rejected.append(Problem(url, rejected.reason))
                continue
        groups[group_for(url, change.group)].append((url, text, entry, size))
    shards: dict[str, list[_Placed]] = {}
    for group, placed in groups.items():
        start = 0
        for shard, count in fill(group, map(itemgetter(3), placed), limits, rules):
            shards[shard] = placed[start : start + count]
            start += count
    result.pages = sum(map(len, groups.values()))
    return shards


def render_site(
    records: Iterable[Record],
    site: Site,
    limits: Limits,
    *,
    compress: bool = True,
    text: bool = False,
    lastmod: str | None = None,
    robots: bytes | None = None,
    progress: Progress | None = None,
    rules: GroupRules | None = None,
    now: datetime | None = None,
    stylesheet: bool = False,
    extras: Sequence[str] = (),
    feed_entries: int = 0,
) -> BuiltSite:
    """Validate, place and render: every file of the site, keyed by its path. The options
    are the settings of the same names (STYLESHEET, EXTRA_SITEMAPS, SITEMAP_FORMAT=txt, ...)."""
    started = time.perf_counter()
    result = BuildResult()
    with progress or Progress("build", enabled=False) as bar:
        pages = collect(records, site, result, bar)
    placed = _placed(pages, limits, rules or GroupRules(), result)
    href = STYLESHEET_HREF if stylesheet else None
    files = {STYLESHEET_KEY: stylesheet_bytes()} if stylesheet else {}
    index_entries = _render_shards(
        placed,
        site,
        limits,
        files,
        result,
        shard_format=ShardFormat(text, compress),
        lastmod=lastmod,
        now=now or datetime.now(UTC),
        href=href,
    )
    if feed_entries:
        files[FEED_KEY] = render_feed(snapshot_feed(pages, feed_entries), site)
    for key, shards in split_index(list(index_entries), index_room(limits, extras)):
        listed = [index_entries[s] for s in shards]
        if key == INDEX_KEY:
            listed += [IndexEntry(url, None) for url in extras]
        files[key] = render_index(listed, stylesheet=href)
        result.index_files.append(key)
    robots_txt = with_sitemaps(robots, [site.url_for(key) for key in result.index_files], site)
    if grows_too_large(robots, robots_txt):
        raise UserError(f"robots.txt would be {len(robots_txt)} bytes, over {MAX_ROBOTS_BYTES}")
    if robots_txt:
        files[ROBOTS_KEY] = robots_txt
    result.seconds = time.perf_counter() - started
    return BuiltSite(files, result)


def snapshot_feed(pages: dict[str, _Page], size: int) -> Feed:
    """The feed a snapshot can give: its newest pages by lastmod (a page without one has no
    time of change to list it by)."""
    listed = {
        url: feed_entry(change, datetime.min)
        for url, (change, _, _) in pages.items()
        if change.entry and change.entry.lastmod
    }
    entries = merged((), listed, size)
    return Feed(entries, entries[0].updated) if entries else Feed()


def _render_shards(
    placed: dict[str, list[_Placed]],
    site: Site,
    limits: Limits,
    files: dict[str, bytes],
    result: BuildResult,
    *,
    shard_format: ShardFormat,
    lastmod: str | None,
    now: datetime,
    href: str | None,
) -> dict[str, IndexEntry]:
    """Each shard's document into ``files`` (gzipped by ``_Gzip``), and its index entry."""
    index_entries: dict[str, IndexEntry] = {}
    bodies: dict[str, list[bytes]] = {}
    with _Gzip(workers=os.cpu_count() or 1) as pool:
        for shard, entries in sorted(placed.items()):
            entries.sort(key=itemgetter(0))  # the registry's order: by URL
            if shard_format.text:
                document = text_document([url for url, _, _, _ in entries], limits)
            else:
                document = shard_document(_current_texts(entries, now), limits, stylesheet=href)
            key = shard_format.key(shard)
            bodies[key] = pool.submit(document, shard_format)
            newest = lastmod or _newest(entries)
            index_entries[shard] = IndexEntry(site.url_for(key), newest)
            result.shards.append(ShardFile(key, len(entries), len(document), newest))
    files.update((key, body) for key, (body,) in bodies.items())
    return index_entries


class _Gzip:
    """``ShardFormat.body`` on other threads, at most ``workers`` at once: zlib lets go of the GIL
    while it compresses. (Plain threads: concurrent.futures would import logging, queue and
    more for every build.)"""

    def __init__(self, workers: int) -> None:
        self._slots = threading.BoundedSemaphore(workers)
        self._threads: list[threading.Thread] = []
        self._failed: list[BaseException] = []

    def submit(self, document: bytes, shard_format: ShardFormat) -> list[bytes]:
        """A list that holds the body once ``__exit__`` has returned."""
        body: list[bytes] = []

        def run() -> None:
            try:
                body.append(shard_format.body(document))
            except BaseException as exc:  # noqa: BLE001 - raised again in __exit__
                self._failed.append(exc)
            finally:
                self._slots.release()

        self._slots.acquire()
        thread = threading.Thread(target=run, name="gzip", daemon=True)
        thread.start()
        self._threads.append(thread)
        return body

    def __enter__(self) -> _Gzip:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for thread in self._threads:
            thread.join()
        if self._failed:
            raise self._failed[0]


def _newest(placed: list[_Placed]) -> str | None:
    """The shard's latest lastmod, if any entry has one."""
    return max(filter(None, [entry.lastmod for _, _, entry, _ in placed]), default=None)


def _current_texts(placed: list[_Placed], moment: datetime) -> list[str]:
    """The shard's <url> lines as they render at ``moment`` (news ages: domain.news)."""
    texts = [text for _, text, entry, _ in placed if entry.news is None]
    if len(texts) == len(placed):  # no news (most shards): every line as placed
        return texts
    entries, _expiry = current_news([entry for _, _, entry, _ in placed], moment)
    return [
        text if entry is original else render_entry(entry)
        for entry, (_, text, original, _) in zip(entries, placed, strict=True)
    ]


def write_site(files: dict[str, bytes], out_dir: Path) -> list[str]:
    """Write every file whole (temporary file, then rename); remove the build's own files
    that are no longer part of the site. Returns the names removed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        target = out_dir / name
        if target.is_file() and target.read_bytes() == body:
            continue
        handle, temporary = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(body)
            os.chmod(temporary, 0o644)  # a web root: readable by the server, as open() makes it
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    # The build's own files that are gone: shards and index files, and sitemap.xsl when it
    # holds the human view's stylesheet (not the owner's own). Others are never touched.
    stale = sorted(
        path.name
        for path in out_dir.iterdir()
        if path.is_file()
        and path.name not in files
        and (
            SITEMAP_FILE.fullmatch(path.name)
            or (path.name == STYLESHEET_KEY and path.read_bytes() == stylesheet_bytes())
        )
    )
    for name in stale:
        (out_dir / name).unlink()
    return stale


def run(args: argparse.Namespace) -> int:
    try:
        site = Site.parse(args.site_url)
        limits = Limits(
            max_urls_per_shard=args.max_urls_per_shard,
            max_shard_bytes=args.max_shard_bytes,
            max_sitemaps_per_index=args.max_sitemaps_per_index,
        )
        lastmod = normalise_w3c(args.lastmod) if args.lastmod is not None else None
        rules = GroupRules.parse(args.group_rules, args.news_groups)
        now = instant(normalise_w3c(args.now, "--now")) if args.now is not None else None
        extras = index_extras(args.extra_sitemap, site, bool(args.feed_entries))
        index_room(limits, extras)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    # The owner's robots.txt: --robots, else the one already in --out (the web root's, or an
    # earlier build's), edited as the index function edits the bucket's; ours only if none.
    robots_path = args.robots
    if robots_path is None and (args.out / ROBOTS_KEY).is_file():
        robots_path = args.out / ROBOTS_KEY
    try:
        robots = robots_path.read_bytes() if robots_path is not None else None
    except OSError as exc:
        raise UserError(f"cannot read {robots_path}: {exc.strerror}") from exc
    gc.disable()  # its objects live until it ends: collections would walk them all for nothing
    try:
        built = render_site(
            chain.from_iterable(map(read_records, args.pages)),
            site,
            limits,
            compress=not args.no_compress,
            text=args.format == "txt",
            lastmod=lastmod,
            robots=robots,
            progress=Progress("build"),
            rules=rules,
            now=now,
            stylesheet=args.stylesheet,
            extras=extras,
            feed_entries=args.feed_entries,
        )
    finally:
        gc.enable()
    result = built.result
    if result.pages:  # a site of no pages would replace the one in --out: write nothing
        result.stale_removed = write_site(built.files, args.out)
    _report(built, args.out, as_json=args.json)
    return 0 if result.pages and not (args.strict and result.rejected) else 1


def _report(built: BuiltSite, out_dir: Path, as_json: bool) -> None:
    result = built.result
    lines = [
        f"build: {result.records:,} records -> {result.pages:,} pages in "
        f"{len(result.shards):,} shard(s) and {len(result.index_files)} index file(s) "
        f"in {result.seconds:.2f} s",
        f"  rejected: {len(result.rejected):,}; duplicate URLs: {result.duplicates:,}; "
        f"unpublished: {result.unpublished:,}",
    ]
    lines.extend(f"  rejected {r.origin}: {r.reason}" for r in result.rejected)
    if not result.pages:
        lines.append(f"no valid page: nothing written, {out_dir}/ left as it was")
    else:
        lines.extend(_written(built, out_dir))
    summary = msgspec.to_builtins(result) | {"seconds": round(result.seconds, 3)}
    print_summary(lines, summary, as_json, ensure_ascii=False)


def _written(built: BuiltSite, out_dir: Path) -> list[str]:
    result = built.result
    lines = [f"wrote {out_dir}/:", f"  {out_dir}/{ROBOTS_KEY}"]
    named = [key for key in (STYLESHEET_KEY, FEED_KEY) if key in built.files]
    lines.extend(f"  {out_dir}/{key}" for key in named + result.index_files)
    shown = result.shards[:_SHOW_SHARDS]
    lines.extend(
        f"  {out_dir}/{s.key}  {s.entries:,} entries, {s.bytes:,} bytes uncompressed" for s in shown
    )
    if len(shown) < len(result.shards):
        lines.append(f"  ... and {len(result.shards) - len(shown):,} more shards")
    lines.extend(f"  removed stale {out_dir}/{name}" for name in result.stale_removed)
    return lines
