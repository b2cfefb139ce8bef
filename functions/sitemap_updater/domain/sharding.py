"""Shards, groups, object keys and the protocol limits.

A *group* (``pages`` unless configured otherwise) owns numbered shards: ``pages-00001``,
``pages-00002``, ... New URLs fill the group's open shard; a shard that cannot take an
entry (by count or by bytes) closes and the next number opens. A URL keeps its shard for
life. Shard ``pages-00001`` is served as ``/sitemap-pages-00001.xml.gz``; the index is
``/sitemap.xml`` (then ``/sitemap-index-2.xml``, ... past 50,000 shards).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent, LimitExceeded
from sitemap_updater.domain.render import URLSET_FRAME_BYTES, entry_size, render_urlset

PROTOCOL_MAX_URLS = 50_000
PROTOCOL_MAX_BYTES = 52_428_800  # 50 MiB, uncompressed
PROTOCOL_MAX_INDEX_ENTRIES = 50_000
DEFAULT_GROUP = "pages"
INDEX_KEY = "sitemap.xml"
ROBOTS_KEY = "robots.txt"
GROUP_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?", re.ASCII)  # use fullmatch
_SHARD_ID = re.compile(r"^([a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?)-(\d{5,})$", re.ASCII)


@dataclass(frozen=True)
class Limits:
    """How full a shard or an index may get. Never above the protocol's limits."""

    max_urls_per_shard: int = 10_000
    max_shard_bytes: int = PROTOCOL_MAX_BYTES
    max_sitemaps_per_index: int = PROTOCOL_MAX_INDEX_ENTRIES

    def __post_init__(self) -> None:
        if not 1 <= self.max_urls_per_shard <= PROTOCOL_MAX_URLS:
            raise ValueError(f"max_urls_per_shard must be 1..{PROTOCOL_MAX_URLS}")
        if not URLSET_FRAME_BYTES < self.max_shard_bytes <= PROTOCOL_MAX_BYTES:
            raise ValueError(
                f"max_shard_bytes must be {URLSET_FRAME_BYTES + 1}..{PROTOCOL_MAX_BYTES}"
            )
        if not 1 <= self.max_sitemaps_per_index <= PROTOCOL_MAX_INDEX_ENTRIES:
            raise ValueError(f"max_sitemaps_per_index must be 1..{PROTOCOL_MAX_INDEX_ENTRIES}")

    @property
    def max_entry_bytes(self) -> int:
        """Room for entries in one shard: the byte limit less the <urlset> frame."""
        return self.max_shard_bytes - URLSET_FRAME_BYTES


def shard_id(group: str, number: int) -> str:
    return f"{group}-{number:05d}"


def parse_shard_id(shard: str) -> tuple[str, int]:
    """``pages-00012`` -> (``pages``, 12); raises ValueError for anything else."""
    match = _SHARD_ID.fullmatch(shard)  # not match: "$" also matches before a final "\n"
    if not match:
        raise ValueError(f"not a shard id: {shard!r}")
    return match.group(1), int(match.group(2))


def shard_key(shard: str, compressed: bool) -> str:
    """The object key (and root-relative path) of a shard.

    Only a valid shard id makes a key (ValueError otherwise): no '/', '..', or anything
    else a message could carry can ever reach an S3 key.
    """
    parse_shard_id(shard)
    return f"sitemap-{shard}.xml.gz" if compressed else f"sitemap-{shard}.xml"


def index_key(position: int) -> str:
    """The key of the n-th index file (0-based): sitemap.xml, sitemap-index-2.xml, ..."""
    if isinstance(position, bool) or not isinstance(position, int) or position < 0:
        raise ValueError(f"not an index position: {position!r}")
    return INDEX_KEY if position == 0 else f"sitemap-index-{position + 1}.xml"


def split_index(shards: Sequence[str], limits: Limits) -> list[tuple[str, list[str]]]:
    """Assign sorted shards to index files, at most ``max_sitemaps_per_index`` each."""
    ordered = sorted(shards)
    size = limits.max_sitemaps_per_index
    return [
        (index_key(position), ordered[start : start + size])
        for position, start in enumerate(range(0, len(ordered), size))
    ]


def checked_entry_size(entry: SitemapEntry, limits: Limits) -> int:
    """The bytes ``entry`` adds to a shard; InvalidEvent when no shard could ever hold it."""
    size = entry_size(entry)
    if size > limits.max_entry_bytes:
        raise InvalidEvent(
            "entry_too_large", f"entry is {size} bytes; a shard holds {limits.max_entry_bytes}"
        )
    return size


def render_shard(entries: Sequence[SitemapEntry], limits: Limits) -> bytes:
    """A shard's document from its entries (in URL order), checked against the limits.

    Placement guarantees the limits; LimitExceeded here is a bug, never a write.
    """
    if len(entries) > limits.max_urls_per_shard:
        raise LimitExceeded(f"{len(entries)} entries, over {limits.max_urls_per_shard}")
    document = render_urlset(entries)
    if len(document) > limits.max_shard_bytes:
        raise LimitExceeded(f"{len(document)} bytes, over {limits.max_shard_bytes}")
    return document


def shard_body(document: bytes, compressed: bool) -> bytes:
    """The bytes stored for a shard: its document, gzipped when ``compressed``.

    Deterministic (no file name, mtime 0, level 6): equal documents give equal objects, so
    the rebuild and ``sitemap-updater build`` write the same bytes for the same entries.
    """
    return gzip.compress(document, compresslevel=6, mtime=0) if compressed else document


def group_for(url: str) -> str:
    """The group a new URL is placed in. One group until path rules exist."""
    del url
    return DEFAULT_GROUP


@dataclass(frozen=True)
class Reservation:
    """Room claimed in a shard: a slot for a newly placed URL and/or more bytes."""

    shard: str
    slots: int
    bytes: int
