"""``sitemap-updater build``: page records in, a complete site out, with no AWS at all.

The same rules as the functions, from the same code: each record is validated as its
publish event (:func:`sitemap_updater.ops.pages.page_change`), entries are placed the way
ingest places new URLs (in input order, into their group's open shard, which closes when
the next entry would break the entry or byte limit), shards are rendered and gzipped by
the rebuild's own functions (``render_entry`` and ``shard_document``, which make up its
``render_shard``, and ``shard_body``), the index by
``render_index`` and robots.txt by ``with_sitemaps``. The same input gives the same bytes.

Choices a snapshot has to make:

* A URL given more than once: the record with the greater version wins; on equal (or
  absent) versions the later record wins. The page keeps the place of its first record.
  A record with ``"type": "unpublish"`` removes the page by the same rule.
* A shard's ``<lastmod>`` in the index is the newest ``lastmod`` of its entries (omitted
  when none has one), or ``--lastmod`` for every shard: never the time of the build, so a
  build is reproducible. (The pipeline's index says when each shard's bytes last changed.)
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from typing import Any

from sitemap_updater.domain.clusters import Cluster, Member
from sitemap_updater.domain.contract import X_DEFAULT, PageChange, normalise_lastmod
from sitemap_updater.domain.dates import instant, normalise_w3c
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.news import current_news
from sitemap_updater.domain.render import IndexEntry, render_entry, render_index, rendered_size
from sitemap_updater.domain.robots import MAX_ROBOTS_BYTES, with_sitemaps
from sitemap_updater.domain.sharding import (
    ROBOTS_KEY,
    SITEMAP_FILE,
    GroupRules,
    Limits,
    checked_rendered_size,
    shard_body,
    shard_document,
    shard_id,
    shard_key,
    split_index,
)
from sitemap_updater.domain.stylesheet import STYLESHEET_HREF, STYLESHEET_KEY, stylesheet_bytes
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.fast_records import FastPage, Pairs, links_of, with_alternates
from sitemap_updater.ops.pages import Record, page_change, read_pages
from sitemap_updater.ops.progress import Progress

# An entry as placed: (URL, its <url> line, its lastmod, the entry or None for a FastPage).
_Placed = tuple[str, str, str | None, SitemapEntry | None]
_SHOW_SHARDS = 20


@dataclass(frozen=True)
class Rejected:
    origin: str
    reason: str


@dataclass(frozen=True)
class ShardFile:
    shard: str
    key: str
    entries: int
    bytes: int  # uncompressed
    lastmod: str | None


@dataclass
class BuildResult:
    records: int = 0
    pages: int = 0
    duplicates: int = 0
    removed: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    shards: list[ShardFile] = field(default_factory=list)
    index_files: list[str] = field(default_factory=list)
    stale_removed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stylesheet: bool = False


@dataclass(slots=True)
class _Open:
    """A group's open shard while placing."""

    max_urls: int
    number: int = 1
    count: int = 0
    bytes: int = 0
    shard: list[Any] = field(default_factory=list)


@dataclass
class BuiltSite:
    """Everything a build writes, in memory, before it touches the folder."""

    files: dict[str, bytes]
    result: BuildResult


# A page as collected: (version, its change, or None for a FastPage, whose <url> line and
# lastmod follow).
def collect(
    records: Iterable[Record | FastPage],
    site: Site,
    result: BuildResult,
    progress: Progress,
    *,
    fast: bool = True,
) -> dict[str, FastPage]:
    """URL -> the page of its newest record (a FastPage as read, or one made of a validated
    PageChange), in order of first appearance."""
    pages: dict[str, FastPage] = {}
    advance = progress.advance if progress.enabled else None
    count = duplicates = 0
    for record in records:
        count += 1
        if advance is not None:
            advance()
        if isinstance(record, tuple):  # a FastPage: already valid and rendered
            page = record
        else:
            try:
                if record.error is not None:
                    raise record.error
                change = page_change(record.value, site, fast=fast)
            except InvalidEvent as rejected:
                result.rejected.append(Rejected(record.origin, rejected.reason))
                continue
            page = (
                change.url,
                change.version,
                "",
                None,
                change.hreflang,
                change.alternates,
                change,
            )
        url = page[0]
        before = pages.get(url)
        if before is not None:
            duplicates += 1
            if before[1] > page[1]:
                continue
        pages[url] = page
    result.records += count
    result.duplicates += duplicates
    return pages


def clusters_of(changes: Iterable[PageChange]) -> dict[str, Cluster]:
    """URL -> its hreflang cluster, built from every page's declarations (the same rules as
    the registry's clusters: see domain.clusters). The build uses cluster_alternates, which
    tests hold to this and domain.clusters.alternates."""
    parent: dict[str, str] = {}

    def root(url: str) -> str:
        parent.setdefault(url, url)
        while parent[url] != url:
            parent[url] = parent[parent[url]]
            url = parent[url]
        return url

    declared = [change for change in changes if change.alternates or change.hreflang]
    for change in declared:
        for _, href in change.alternates:
            parent[root(href)] = root(change.url)
        root(change.url)
    members: dict[str, dict[str, Member]] = {}
    for change in declared:
        members.setdefault(root(change.url), {})[change.url] = Member(
            lang=change.hreflang, declares=change.alternates, live=change.live
        )
    for url in parent:
        members.setdefault(root(url), {}).setdefault(url, Member())
    return {
        url: Cluster(cid=group, members=group_members)
        for group, group_members in members.items()
        for url in group_members
    }


def cluster_alternates(
    declaring: Iterable[tuple[str, str | None, Pairs, bool]],
) -> dict[str, Pairs]:
    """URL -> ``alternates(cluster, url)`` for the clusters ``clusters_of`` makes, computed
    once per cluster rather than once per member; only URLs that list any.

    ``declaring``: (url, hreflang, declared pairs, live) of every page that declares a
    language or alternates. A cluster's members are linked by declarations, so a member's
    component is its whole cluster, and every member lists the same pairs (the live members'
    languages), provided it is live, has a language and the pairs name two pages or more.
    """
    parent: dict[str, str] = {}

    def root(url: str) -> str:
        parent.setdefault(url, url)
        while parent[url] != url:
            parent[url] = parent[parent[url]]
            url = parent[url]
        return url

    declared = list(declaring)
    for url, _, pairs, _ in declared:
        for _, href in pairs:
            parent[root(href)] = root(url)
        root(url)
    groups: dict[str, dict[str, tuple[str | None, Pairs, bool]]] = {}
    for url, lang, pairs, live in declared:
        groups.setdefault(root(url), {})[url] = (lang, pairs, live)
    for url in parent:
        groups.setdefault(root(url), {}).setdefault(url, (None, (), False))
    listed_by: dict[str, Pairs] = {}
    for members in groups.values():
        declared_for: dict[str, set[str]] = {}
        for _, pairs, _ in members.values():
            for lang, href in pairs:
                declared_for.setdefault(href, set()).add(lang)
        languages: dict[str, set[str]] = {}
        for url, (lang, _, _) in members.items():
            others = declared_for.get(url, set())
            languages[url] = {lang} | (others & {X_DEFAULT}) if lang is not None else others
        listed = tuple(
            sorted(
                (lang, url)
                for url, (_, _, live) in members.items()
                if live
                for lang in languages[url]
            )
        )
        if len({href for _, href in listed}) < 2:
            continue
        for url, (_, _, live) in members.items():
            if live and languages[url]:
                listed_by[url] = listed
    return listed_by


def _placed(
    pages: dict[str, FastPage],
    links: dict[str, Pairs],
    limits: Limits,
    rules: GroupRules,
    result: BuildResult,
) -> dict[str, list[_Placed]]:
    """Every live page's entry, rendered and placed: shard id -> its entries.

    Placement is the ingest's for new URLs: in the pages' order, each group fills its open
    shard, and the next entry that does not fit (the group's URL limit, news groups holding
    fewer, or ``max_entry_bytes``) closes it. Entries no shard could hold are rejected.
    ``links``: see cluster_alternates.

    Each entry is rendered once: its text gives its size and goes into its shard as is
    (re-rendered only when news ageing changes the entry). A FastPage comes rendered.
    """
    max_bytes = limits.max_entry_bytes
    plain_group = None if rules.prefixes else rules.default
    rendered_links: dict[Pairs, str] = {}  # a cluster's members list the same pairs
    shards: dict[str, list[_Placed]] = {}
    groups: dict[str, _Open] = {}
    for url, (_, _, read_text, page_lastmod, _, _, change) in pages.items():
        entry = None
        if change is None:
            text = read_text
            if url in links:
                pairs = links[url]
                if pairs not in rendered_links:
                    rendered_links[pairs] = links_of(pairs)
                text = with_alternates(text, rendered_links[pairs])
            size = len(text)  # ASCII
            group = plain_group or rules.group_for(url)
        else:
            entry = change.entry
            if entry is None:
                result.removed += 1
                continue
            if url in links:
                entry = replace(entry, alternates=links[url])
            text = render_entry(entry)
            size = rendered_size(text)
            group = rules.group_for(url, change.group)
        if size > max_bytes:
            try:
                checked_rendered_size(text, limits)
            except InvalidEvent as rejected:
                result.rejected.append(Rejected(url, rejected.reason))
                continue
        state = groups.get(group)
        if state is None:
            state = groups[group] = _Open(max_urls=rules.max_urls(group, limits))
            state.shard = shards.setdefault(shard_id(group, state.number), [])
        if state.count >= state.max_urls or state.bytes + size > max_bytes:
            state.number, state.count, state.bytes = state.number + 1, 0, 0
            state.shard = shards.setdefault(shard_id(group, state.number), [])
        state.count += 1
        state.bytes += size
        state.shard.append((url, text, page_lastmod if entry is None else entry.lastmod, entry))
        result.pages += 1
    return shards


def render_site(
    records: Iterable[Record | FastPage],
    site: Site,
    limits: Limits,
    *,
    compress: bool = True,
    lastmod: str | None = None,
    robots: bytes | None = None,
    progress: Progress | None = None,
    rules: GroupRules | None = None,
    now: datetime | None = None,
    stylesheet: bool = False,
    fast: bool = True,
) -> BuiltSite:
    """Validate, place and render: every file of the site, keyed by its path.

    ``stylesheet``: the human view, as the STYLESHEET setting does (``/sitemap.xsl``,
    referenced from the index and shards). ``fast=False`` validates every record with
    ``parse_event`` (see ``page_change``): the same files, slower; for tests.
    """
    started = time.perf_counter()
    result = BuildResult(stylesheet=stylesheet)
    with progress or Progress("build", enabled=False) as bar:
        pages = collect(records, site, result, bar, fast=fast)
    rules = rules or GroupRules()
    moment = now or datetime.now(UTC)
    links = cluster_alternates(
        (url, lang, pairs, change is None or change.live)
        for url, _, _, _, lang, pairs, change in pages.values()
        if lang or pairs
    )
    placed_by_shard = _placed(pages, links, limits, rules, result)

    files: dict[str, bytes] = {}
    href = STYLESHEET_HREF if stylesheet else None
    if stylesheet:
        files[STYLESHEET_KEY] = stylesheet_bytes()
    index_entries: dict[str, IndexEntry] = {}
    # zlib lets go of the GIL while it compresses: shards are gzipped on other threads while
    # the next ones render (the bytes are the same, shard by shard).
    with _Gzip(workers=os.cpu_count() or 1) as pool:
        bodies: dict[str, list[bytes]] = {}
        for shard, placed in sorted(placed_by_shard.items()):
            placed.sort(key=itemgetter(0))  # the registry's order: by URL
            texts = _current_texts(placed, moment)
            document = shard_document(texts, limits, stylesheet=href)
            key = shard_key(shard, compress)
            bodies[key] = pool.submit(document, compress)
            newest = lastmod or max((p[2] for p in placed if p[2]), default=None)
            index_entries[shard] = IndexEntry(site.url_for(key), newest)
            result.shards.append(ShardFile(shard, key, len(texts), len(document), newest))
    files.update((key, body) for key, (body,) in bodies.items())
    for key, shards in split_index(list(index_entries), limits):
        files[key] = render_index((index_entries[s] for s in shards), stylesheet=href)
        result.index_files.append(key)
    robots_txt = with_sitemaps(robots, [site.url_for(key) for key in result.index_files], site)
    if len(robots_txt) > MAX_ROBOTS_BYTES:
        raise UserError(f"robots.txt would be {len(robots_txt)} bytes, over {MAX_ROBOTS_BYTES}")
    if robots_txt:
        files[ROBOTS_KEY] = robots_txt
    result.seconds = time.perf_counter() - started
    return BuiltSite(files, result)


class _Gzip:
    """``shard_body`` on other threads, at most ``workers`` at once: zlib lets go of the GIL
    while it compresses. (Plain threads: concurrent.futures would import logging, queue and
    more for every build.)"""

    def __init__(self, workers: int) -> None:
        self._slots = threading.BoundedSemaphore(workers)
        self._threads: list[threading.Thread] = []
        self._failed: list[BaseException] = []

    def submit(self, document: bytes, compress: bool) -> list[bytes]:
        """A list that holds the body once ``__exit__`` has returned."""
        body: list[bytes] = []

        def run() -> None:
            try:
                body.append(shard_body(document, compress))
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


def _current_texts(placed: list[_Placed], moment: datetime) -> list[str]:
    """The shard's <url> lines as they render at ``moment`` (news ages: domain.news)."""
    if not any(entry is not None and entry.news is not None for _, _, _, entry in placed):
        return [text for _, text, _, _ in placed]
    originals = [entry or SitemapEntry(url) for url, _, _, entry in placed]
    entries, _expiry = current_news(originals, moment)
    return [
        text if entry is original else render_entry(entry)
        for entry, original, (_, text, _, _) in zip(entries, originals, placed, strict=True)
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
    """The ``build`` command: read, render, write, report."""
    try:
        site = Site.parse(args.site_url)
        limits = Limits(
            max_urls_per_shard=args.max_urls_per_shard,
            max_shard_bytes=args.max_shard_bytes,
            max_sitemaps_per_index=args.max_sitemaps_per_index,
        )
        lastmod = normalise_lastmod(args.lastmod) if args.lastmod is not None else None
        rules = GroupRules.parse(args.group_rules, args.news_groups)
        now = instant(normalise_w3c(args.now, "--now")) if args.now is not None else None
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    # The owner's robots.txt: --robots, else the one already in --out (the web root's, or an
    # earlier build's), edited as the index function edits the bucket's; ours only if none.
    robots = None
    robots_path = args.robots
    if robots_path is None and (args.out / ROBOTS_KEY).is_file():
        robots_path = args.out / ROBOTS_KEY
    if robots_path is not None:
        try:
            robots = robots_path.read_bytes()
        except OSError as exc:
            raise UserError(f"cannot read {robots_path}: {exc.strerror}") from exc
    for path in args.pages:
        if not path.is_file():
            raise UserError(f"no such file: {path}")
    built = render_site(
        read_pages(args.pages, site),
        site,
        limits,
        compress=not args.no_compress,
        lastmod=lastmod,
        robots=robots,
        progress=Progress("reading"),
        rules=rules,
        now=now,
        stylesheet=args.stylesheet,
    )
    result = built.result
    result.stale_removed = write_site(built.files, args.out)
    _report(result, args.out, as_json=args.json)
    return 1 if args.strict and result.rejected else 0


def _report(result: BuildResult, out_dir: Path, as_json: bool) -> None:
    lines = [
        f"build: {result.records:,} records -> {result.pages:,} pages in "
        f"{len(result.shards):,} shard(s) and {len(result.index_files)} index file(s) "
        f"in {result.seconds:.2f} s",
        f"  rejected: {len(result.rejected):,}; duplicate URLs: {result.duplicates:,}; "
        f"unpublished: {result.removed:,}",
    ]
    lines.extend(f"  rejected {r.origin}: {r.reason}" for r in result.rejected)
    lines.append(f"wrote {out_dir}/:")
    lines.append(f"  {out_dir}/{ROBOTS_KEY}")
    if result.stylesheet:
        lines.append(f"  {out_dir}/{STYLESHEET_KEY}")
    lines.extend(f"  {out_dir}/{key}" for key in result.index_files)
    shown = result.shards if len(result.shards) <= _SHOW_SHARDS else result.shards[:_SHOW_SHARDS]
    lines.extend(
        f"  {out_dir}/{s.key}  {s.entries:,} entries, {s.bytes:,} bytes uncompressed" for s in shown
    )
    if len(shown) < len(result.shards):
        lines.append(f"  ... and {len(result.shards) - len(shown):,} more shards")
    lines.extend(f"  removed stale {out_dir}/{name}" for name in result.stale_removed)
    print("\n".join(lines), flush=True)
    if as_json:
        summary = {
            "records": result.records,
            "pages": result.pages,
            "duplicates": result.duplicates,
            "unpublished": result.removed,
            "rejected": [{"origin": r.origin, "reason": r.reason} for r in result.rejected],
            "shards": [
                {"key": s.key, "entries": s.entries, "bytes": s.bytes, "lastmod": s.lastmod}
                for s in result.shards
            ],
            "index_files": result.index_files,
            "stale_removed": result.stale_removed,
            "seconds": round(result.seconds, 3),
        }
        print(json.dumps(summary, ensure_ascii=False), flush=True)
