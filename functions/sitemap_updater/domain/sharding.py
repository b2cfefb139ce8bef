"""Shards, groups, object keys and the protocol limits. A group owns numbered shards
(``pages-00001``, served as ``/sitemap-pages-00001.xml.gz``); new URLs fill its open shard
until it is full, then the next opens; a URL keeps its shard for life. The index is
``/sitemap.xml``, then ``/sitemap-index-2.xml``, ... past 50,000 shards.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from graphlib import CycleError, TopologicalSorter
from urllib.parse import urlsplit

from zlib_ng import zlib_ng

from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent, LimitExceeded
from sitemap_updater.domain.feed import FEED_KEY
from sitemap_updater.domain.news import MAX_NEWS_PER_SITEMAP
from sitemap_updater.domain.render import (
    URLSET_FRAME_BYTES,
    render_entry,
    rendered_size,
    urlset_of,
)
from sitemap_updater.domain.stylesheet import STYLESHEET_KEY
from sitemap_updater.domain.urls import Site, normalise_path_prefix, normalise_url

PROTOCOL_MAX_URLS = 50_000
PROTOCOL_MAX_BYTES = 52_428_800  # 50 MiB, uncompressed
PROTOCOL_MAX_INDEX_ENTRIES = 50_000
DEFAULT_GROUP = "pages"
_GZIP = 31  # zlib's window bits for a gzip wrapper
INDEX_KEY = "sitemap.xml"
ROBOTS_KEY = "robots.txt"
# The names of index files and shards (use fullmatch): what a build or a local run may remove.
SITEMAP_FILE = re.compile(
    r"sitemap\.xml|sitemap-index-[0-9]+\.xml|sitemap-[a-z0-9-]+-[0-9]{5,}\.(?:xml(?:\.gz)?|txt)"
)
GROUP_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?", re.ASCII)  # use fullmatch
_SHARD_ID = re.compile(rf"({GROUP_NAME.pattern})-([0-9]{{5,}})", re.ASCII)  # use fullmatch


@dataclass(frozen=True)
class Limits:
    """How full a shard or an index may get. Never above the protocol's limits."""

    max_urls_per_shard: int = 10_000
    max_shard_bytes: int = PROTOCOL_MAX_BYTES
    max_sitemaps_per_index: int = PROTOCOL_MAX_INDEX_ENTRIES

    def __post_init__(self) -> None:
        for name, low, high in (
            ("max_urls_per_shard", 1, PROTOCOL_MAX_URLS),
            ("max_shard_bytes", URLSET_FRAME_BYTES + 1, PROTOCOL_MAX_BYTES),
            ("max_sitemaps_per_index", 1, PROTOCOL_MAX_INDEX_ENTRIES),
        ):
            if not low <= getattr(self, name) <= high:
                raise ValueError(f"{name} must be {low}..{high}")

    @property
    def max_entry_bytes(self) -> int:
        return self.max_shard_bytes - URLSET_FRAME_BYTES


def shard_id(group: str, number: int) -> str:
    return f"{group}-{number:05d}"


def parse_shard_id(shard: str) -> tuple[str, int]:
    """``pages-00012`` -> (``pages``, 12); raises ValueError for anything else."""
    match = _SHARD_ID.fullmatch(shard)
    if not match:
        raise ValueError(f"not a shard id: {shard!r}")
    return match.group(1), int(match.group(2))


def shard_of_key(key: str) -> str:
    """The shard whose object ``key`` is, in any format (ValueError: none)."""
    shard = key.removeprefix("sitemap-").removesuffix(".gz").removesuffix(".xml")
    shard = shard.removesuffix(".txt")
    stored = ShardFormat(text=key.endswith(".txt"), compressed=key.endswith(".gz"))
    if stored.key(shard) != key:
        raise ValueError(f"not a shard's key: {key!r}")
    return shard


def index_key(position: int) -> str:
    """The key of the n-th index file (0-based): sitemap.xml, sitemap-index-2.xml, ..."""
    if isinstance(position, bool) or not isinstance(position, int) or position < 0:
        raise ValueError(f"not an index position: {position!r}")
    return INDEX_KEY if position == 0 else f"sitemap-index-{position + 1}.xml"


def index_extras(extras: Iterable[str], site: Site, feed: bool) -> tuple[str, ...]:
    """What the index lists after our shards: ``extras`` (EXTRA_SITEMAPS, made elsewhere; each
    on the site, none of our own files, each once: ValueError says which is not), then the feed."""
    found: list[str] = []
    for written in filter(None, (url.strip() for url in extras)):
        try:
            url = normalise_url(written, site, "sitemap")
        except InvalidEvent as exc:
            raise ValueError(f"{written!r}: {exc.detail}") from None
        path = urlsplit(url).path[1:]
        if SITEMAP_FILE.fullmatch(path) or path in (ROBOTS_KEY, STYLESHEET_KEY):
            raise ValueError(f"{written!r} is a file the updater writes itself")
        if url in found:
            raise ValueError(f"{written!r} is given twice")
        found.append(url)
    if not feed:
        return tuple(found)
    if site.url_for(FEED_KEY) in found:
        raise ValueError(f"/{FEED_KEY} is the feed FEED_ENTRIES writes and lists: leave it out")
    return (*found, site.url_for(FEED_KEY))


def index_room(limits: Limits, extras: Sequence[str]) -> Limits:
    """The limits index files split shards by when the first also lists ``extras``."""
    room = limits.max_sitemaps_per_index - len(extras)
    if room < 1:
        raise ValueError(
            f"{len(extras)} extra sitemap(s) leave no room in an index file of "
            f"{limits.max_sitemaps_per_index} entries"
        )
    return replace(limits, max_sitemaps_per_index=room)


def split_index(shards: Sequence[str], limits: Limits) -> list[tuple[str, list[str]]]:
    """Assign sorted shards to index files, at most ``max_sitemaps_per_index`` each."""
    ordered = sorted(shards)
    size = limits.max_sitemaps_per_index
    return [
        (index_key(position), ordered[start : start + size])
        for position, start in enumerate(range(0, len(ordered), size))
    ]


def write_order(
    files: list[tuple[str, list[str]]], before: Iterable[str], limits: Limits
) -> list[tuple[str, list[str]]]:
    """``files`` (``split_index`` of the shards to name) in an order of writing that never
    leaves a shard unnamed on the way: a shard that moves (a new one sorting early shifts the
    later ones) is written into its new file before its old file drops it. ``before``: the
    shards named until now. A cycle of moves keeps the files' own order."""
    was_in = {shard: key for key, shards in split_index(list(before), limits) for shard in shards}
    position = {key: number for number, (key, _) in enumerate(files)}
    graph: TopologicalSorter[str] = TopologicalSorter()
    for key, shards in files:
        graph.add(key)
        for old in {was_in.get(shard) for shard in shards} - {None, key}:
            if old in position:
                graph.add(old, key)  # the old file is written after the new one
    try:
        graph.prepare()
    except CycleError:
        return files
    ordered: list[str] = []
    ready: set[str] = set()
    while graph.is_active():
        ready.update(graph.get_ready())
        key = min(ready, key=position.__getitem__)
        ready.remove(key)
        ordered.append(key)
        graph.done(key)
    shards_of = dict(files)
    return [(key, shards_of[key]) for key in ordered]


def checked_entry_size(entry: SitemapEntry, limits: Limits) -> int:
    """The bytes ``entry`` adds to a shard; InvalidEvent when no shard could ever hold it."""
    return checked_rendered_size(render_entry(entry), limits)


def checked_rendered_size(rendered: str, limits: Limits) -> int:
    """``checked_entry_size`` of an entry already rendered (``render_entry``)."""
    size = rendered_size(rendered)
    if size > limits.max_entry_bytes:
        raise InvalidEvent(
            "entry_too_large", f"entry is {size} bytes; a shard holds {limits.max_entry_bytes}"
        )
    return size


def shard_document(
    rendered: Sequence[str], limits: Limits, *, stylesheet: str | None = None
) -> bytes:
    """A shard's document from its entries, rendered (``render_entry``) and in URL order,
    checked against the limits (LimitExceeded: never written); ``stylesheet``: the human
    view's instruction, if it fits."""
    return _within(
        limits,
        len(rendered),
        lambda: urlset_of(rendered, stylesheet=stylesheet, max_bytes=limits.max_shard_bytes),
    )


def text_document(urls: Sequence[str], limits: Limits) -> bytes:
    """A text shard (sitemaps.org): one URL per line, UTF-8, no lastmod, no extension; URLs are
    normalised (no whitespace) and not escaped. In URL order, checked against the limits."""
    return _within(limits, len(urls), lambda: "".join(f"{url}\n" for url in urls).encode())


def _within(limits: Limits, count: int, render: Callable[[], bytes]) -> bytes:
    if count > limits.max_urls_per_shard:
        raise LimitExceeded(f"{count} entries, over {limits.max_urls_per_shard}")
    document = render()
    if len(document) > limits.max_shard_bytes:
        raise LimitExceeded(f"{len(document)} bytes, over {limits.max_shard_bytes}")
    return document


@dataclass(frozen=True)
class ShardFormat:
    """How shards are stored (SITEMAP_FORMAT, COMPRESS_SHARDS): XML, gzipped or not; or text,
    one URL per line, never gzipped (lastmod and extensions stay in the registry)."""

    text: bool = False
    compressed: bool = True

    @property
    def gzipped(self) -> bool:
        return self.compressed and not self.text

    def key(self, shard: str) -> str:
        """The object key (and root-relative path); only a valid shard id makes one, so
        nothing a message carries ('/', '..') ever reaches an S3 key (ValueError)."""
        parse_shard_id(shard)
        if self.text:
            return f"sitemap-{shard}.txt"
        return f"sitemap-{shard}.xml.gz" if self.compressed else f"sitemap-{shard}.xml"

    def body(self, document: bytes) -> bytes:
        """The bytes stored for a shard, gzipped deterministically when ``gzipped`` (on one
        machine, the rebuild and ``build`` write the same bytes for the same entries).
        zlib-ng's level 6 takes a third less time than zlib's, for as small a file; its own
        gzip wrapper (no name, no time)."""
        return zlib_ng.compress(document, 6, _GZIP) if self.gzipped else document

    def document_of(self, body: bytes) -> bytes | None:
        """The document stored bytes hold (None: not a gzip file, when shards are gzipped)."""
        if not self.gzipped:
            return body
        try:
            return zlib_ng.decompress(body, _GZIP)
        except zlib_ng.error:  # type: ignore[misc]  # its stub types the class as an instance
            return None


@dataclass(frozen=True)
class GroupRules:
    """A new URL's group: the event's ``sitemap`` field, else the longest matching path
    prefix, else the default. News groups hold at most 1,000 URLs per sitemap (Google News)."""

    prefixes: tuple[tuple[str, str], ...] = ()  # (path prefix, group)
    news: frozenset[str] = frozenset({"news"})

    @classmethod
    def parse(cls, rules: str, news: str = "news") -> GroupRules:
        """``"/news/=news, /products/=products"``; ``news`` names the news groups."""
        prefixes = []
        for rule in filter(None, (part.strip() for part in rules.split(","))):
            prefix, _, group = rule.partition("=")
            prefix, group = prefix.strip(), group.strip()
            if not prefix.startswith("/") or not GROUP_NAME.fullmatch(group):
                raise ValueError(
                    f"group rule {rule!r} must look like /path/prefix=group "
                    "(group: a-z, 0-9 and '-', at most 32)"
                )
            try:
                prefix = normalise_path_prefix(prefix)
            except ValueError as exc:
                raise ValueError(f"group rule {rule!r}: {exc}") from None
            prefixes.append((prefix, group))
        news_groups = frozenset(filter(None, (part.strip() for part in news.split(","))))
        for group in news_groups:
            if not GROUP_NAME.fullmatch(group):
                raise ValueError(f"{group!r} is not a valid group name")
        prefixes.sort(key=lambda rule: -len(rule[0]))
        return cls(prefixes=tuple(prefixes), news=news_groups)

    @property
    def named(self) -> frozenset[str]:
        """The groups these rules name (an event may name others: its ``sitemap``)."""
        return frozenset({DEFAULT_GROUP, *self.news, *(group for _, group in self.prefixes)})

    def group_for(self, url: str, explicit: str | None = None) -> str:
        if explicit is not None:
            return explicit
        if not self.prefixes:
            return DEFAULT_GROUP
        path = urlsplit(url).path
        for prefix, group in self.prefixes:
            if path.startswith(prefix):
                return group
        return DEFAULT_GROUP

    def max_urls(self, group: str, limits: Limits) -> int:
        if group in self.news:
            return min(limits.max_urls_per_shard, MAX_NEWS_PER_SITEMAP)
        return limits.max_urls_per_shard


@dataclass(frozen=True)
class Reservation:
    """Room claimed in a shard: a slot for a newly placed URL and/or more bytes;
    ``max_slots``: its group's entry limit."""

    shard: str
    slots: int
    bytes: int
    max_slots: int = PROTOCOL_MAX_URLS

    def bounds(self, limits: Limits) -> tuple[int, int]:
        """The most slots and bytes a shard may already hold for this claim to fit (negative:
        none can): the one rule of a shard's room, for the registry's conditional write and
        ``build``."""
        slots = min(limits.max_urls_per_shard, self.max_slots) - self.slots
        return slots, limits.max_entry_bytes - self.bytes


def fill(
    group: str, sizes: Iterable[int], limits: Limits, groups: GroupRules
) -> list[tuple[str, int]]:
    """New URLs placed without a registry (``build``): the group's shards, each with how
    many of the entries (of ``sizes`` bytes, in order) it takes. A shard that cannot take
    the next entry closes for the next number, by the registry's rule (``Reservation.bounds``)."""
    max_slots, max_bytes = Reservation(group, 1, 0, groups.max_urls(group, limits)).bounds(limits)
    counts: list[int] = []
    count = used = 0
    for size in sizes:
        if count > max_slots or used > max_bytes - size:
            counts.append(count)
            count = used = 0
        count += 1
        used += size
    counts.append(count)
    return [(shard_id(group, n), count) for n, count in enumerate(counts, start=1) if count]
