"""Walk a site's sitemaps as a crawler does (robots.txt, Sitemap lines, indexes, sitemaps)
for ``backfill`` and ``validate``: lenient about what it reads (local names, stripped
values), safe about how (no network, DTD or entities), in the order found (repeatable)."""

from __future__ import annotations

from codecs import BOM_UTF8, BOM_UTF16_BE, BOM_UTF16_LE
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from sitemap_updater.domain.robots import sitemap_value
from sitemap_updater.ops.fetch import Fetched, url_origin
from sitemap_updater.ops.pages import url_lines

URLSET = "urlset"
INDEX = "sitemapindex"
ROBOTS = "robots"
TEXT = "text"  # a text sitemap: one URL per line
FEED = "feed"  # an Atom or RSS 2.0 feed, which sitemaps.org accepts as a sitemap
UNREADABLE = "unreadable"  # not fetched, or not XML
UNKNOWN = "unknown"  # XML, but neither a urlset, a sitemap index nor a feed
MAX_DEPTH = 5  # index -> index -> ... : sitemaps.org allows none; we follow a few
_ELSEWHERE = "on another origin than the index naming it; not followed"
_TOO_DEEP = f"an index nested more than {MAX_DEPTH} deep; not followed"
PAGE_FIELDS = ("loc", "lastmod", "changefreq", "priority")


@dataclass(frozen=True, slots=True)
class Entry:
    """A ``<url>`` or ``<sitemap>`` element: its values (stripped), and its line."""

    loc: str | None
    line: int | None
    lastmod: str | None = None
    changefreq: str | None = None
    priority: str | None = None
    element: Any = None  # the lxml element, for readers of its extensions


@dataclass(frozen=True, slots=True)
class SitemapLine:
    line: int
    value: str  # as written
    url: str  # resolved against robots.txt's URL


@dataclass
class Document:
    url: str  # as named by whoever referred to it
    referrer: str | None  # "<url>:<line>" of the robots.txt line or index entry
    fetched: Fetched
    depth: int = 0
    kind: str = UNREADABLE
    error: str | None = None  # why it is UNREADABLE
    root: Any = None  # the lxml root element
    urls: list[Entry] = field(default_factory=list)
    sitemaps: list[Entry] = field(default_factory=list)
    sitemap_lines: list[SitemapLine] = field(default_factory=list)

    @property
    def named(self) -> str:
        return f" (named at {self.referrer})" if self.referrer else ""


def local_name(tag: Any) -> str | None:
    return tag.rpartition("}")[2] if isinstance(tag, str) else None  # not a comment or PI


def _children(element: Any, name: str) -> list[Any]:
    return [child for child in element if local_name(child.tag) == name]


def _text(found: Any) -> str | None:
    return None if found is None else (found.text or "").strip()


def feed_entries(root: Any) -> list[Entry] | None:
    """The pages an Atom feed's entries (their alternate link, their ``updated``) or an RSS
    2.0 feed's items (their ``link``) name; None when ``root`` is no feed."""
    kind = local_name(root.tag)
    if kind == "feed":
        return [_atom_entry(entry) for entry in _children(root, "entry")]
    if kind == "rss":
        items = [
            item for channel in _children(root, "channel") for item in _children(channel, "item")
        ]
        # RSS's own <link> is in no namespace: an <atom:link rel="self"> beside it is not it.
        return [Entry(_text(item.find("link")), item.sourceline) for item in items]
    return None


def _atom_entry(entry: Any) -> Entry:
    links = _children(entry, "link")
    href = next(
        (link.get("href") for link in links if link.get("rel", "alternate") == "alternate"), None
    )
    updated = _text(next(iter(_children(entry, "updated")), None))
    return Entry(href.strip() if href else None, entry.sourceline, updated)


def read_entries(root: Any) -> tuple[str, list[Entry], list[Entry]]:
    """(kind, url entries, sitemap entries) of a parsed sitemap document."""
    kind = local_name(root.tag)
    if kind not in (URLSET, INDEX):
        feed = feed_entries(root)
        return (UNKNOWN, [], []) if feed is None else (FEED, feed, [])
    child = "url" if kind == URLSET else "sitemap"
    found: list[Entry] = []
    for element in _children(root, child):
        values: dict[str, str | None] = {}
        for part in element:
            name = local_name(part.tag)
            if name in PAGE_FIELDS and name not in values:
                # Its whole text: a comment or an instruction inside does not end it.
                text = part.text if len(part) == 0 else "".join(part.itertext())
                values[name] = (text or "").strip()
        loc = values.pop("loc", None)
        found.append(Entry(loc, element.sourceline, **values, element=element))
    return (kind, found, []) if kind == URLSET else (kind, [], found)


def stray_entries(document: Document) -> str | None:
    """The other kind's entries a sitemap or an index holds, which no crawler reads."""
    if document.kind not in (URLSET, INDEX):
        return None
    stray, kind = ("sitemap", URLSET) if document.kind == URLSET else ("url", INDEX)
    count = len(_children(document.root, stray))
    return f"{count:,} <{stray}> entries in a <{kind}>: not read" if count else None


def sitemap_lines(body: bytes, robots_url: str) -> list[SitemapLine]:
    """The ``Sitemap:`` lines of a robots.txt, values resolved against its URL."""
    lines = []
    for number, line in enumerate(body.removeprefix(BOM_UTF8).splitlines(), start=1):
        value = sitemap_value(line)
        if value is not None:
            lines.append(SitemapLine(number, value, urljoin(robots_url, value) if value else ""))
    return lines


def robots_url_for(url: str) -> str | None:
    """robots.txt's URL when ``url`` is a site root or robots.txt itself; else None."""
    parts = urlsplit(url)
    if parts.path in ("", "/") and not parts.query:
        return f"{parts.scheme}://{parts.netloc}/robots.txt"
    return url if parts.path.lower() == "/robots.txt" else None


def load_document(
    url: str, fetched: Fetched, referrer: str | None = None, depth: int = 0
) -> Document:
    """Read a fetched sitemap or index (or say why it cannot be read)."""
    from lxml import etree  # noqa: PLC0415 - lxml is the cli extra; the functions never parse

    document = Document(url, referrer, fetched, depth, error=fetched.problem())
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )
    if document.error is None and fetched.body.startswith((BOM_UTF16_LE, BOM_UTF16_BE)):
        document.error = "encoded as UTF-16: the protocol asks for UTF-8"
    start = fetched.body.removeprefix(BOM_UTF8).lstrip()[:14].lower()
    if document.error is None and start.startswith((b"<!doctype html", b"<html")):
        # What many servers answer for a page they do not have (a soft 404).
        document.error = "an HTML page, not a sitemap"
    try:
        if document.error is None and start[:1] not in b"<":
            text = fetched.body.removeprefix(BOM_UTF8).decode("utf-8")
            document.kind, document.urls = TEXT, [Entry(url, n) for n, url in url_lines(text)]
        elif document.error is None:
            root = etree.fromstring(fetched.body, parser)
            if root.getroottree().docinfo.doctype:
                # Its entities would be left unexpanded (never read: no XXE), so values
                # would not be the ones meant; and the schema check cannot take them.
                document.error = "declares a DOCTYPE: a sitemap has none"
            else:
                document.root = root
                document.kind, document.urls, document.sitemaps = read_entries(root)
    except etree.XMLSyntaxError as exc:
        document.error = f"not well-formed XML: {exc}"
    except UnicodeDecodeError as exc:
        document.kind, document.error = UNREADABLE, f"a text sitemap that is not UTF-8: {exc}"
    return document


@dataclass
class Walk:
    """A breadth-first walk. ``follow`` maps a named sitemap URL to the URL to fetch, or
    None to leave it; ``accept`` says which index entries to follow at all. ``same_origin``
    (backfill's) leaves an index entry on another origin than its index, reported as an
    unreadable document; redirects are the fetch's to refuse (``fetch(same_origin=True)``)."""

    fetch: Callable[[str], Fetched]
    workers: int = 4
    max_documents: int = 100_000
    follow: Callable[[str], str | None] = field(default=lambda url: url)
    accept: Callable[[Document, Entry], bool] = field(default=lambda document, entry: True)
    same_origin: bool = False
    fetched: int = 0  # sitemaps and indexes
    truncated: bool = False  # stopped at max_documents
    _seen: set[str] = field(default_factory=set)

    def run(self, start: str) -> Iterator[Document]:
        """Walk from a site root or robots.txt URL (Sitemap lines) or a sitemap URL."""
        robots = robots_url_for(start)
        if robots is None:
            yield from self.run_from([(start, None, 0)])
            return
        fetched = self.fetch(self.follow(robots) or robots)  # not a sitemap: not counted
        document = Document(robots, None, fetched, kind=ROBOTS, error=fetched.problem())
        if document.error is None:
            document.sitemap_lines = sitemap_lines(fetched.body, robots)
        yield document
        lines: list[tuple[str, str | None, int]] = [
            (line.url, f"{robots}:{line.line}", 0) for line in document.sitemap_lines if line.url
        ]
        if not any(url_origin(url) for url, _, _ in lines):  # where sitemaps usually are
            lines.append((robots.removesuffix("robots.txt") + "sitemap.xml", None, 0))
        yield from self.run_from(lines)

    def run_from(self, frontier: Iterable[tuple[str, str | None, int]]) -> Iterator[Document]:
        """Walk from these (url, referrer, depth) in order, following index entries."""
        pending = deque(frontier)
        running: deque[Future[Document]] = deque()
        workers = max(1, self.workers)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            while pending or running:
                while pending and len(running) < workers:
                    url, referrer, depth = pending.popleft()
                    target = self.follow(url)
                    if target is None or target in self._seen:
                        continue
                    if self.fetched >= self.max_documents:
                        self.truncated = True
                        pending.clear()
                        break
                    self._seen.add(target)
                    self.fetched += 1
                    running.append(pool.submit(self._load, url, target, referrer, depth))
                if running:
                    document = running.popleft().result()
                    left = self._children(document, pending)
                    yield document
                    yield from left

    def _children(
        self, document: Document, pending: deque[tuple[str, str | None, int]]
    ) -> list[Document]:
        """Queue the index entries to follow; the documents left on other origins."""
        left: list[Document] = []
        for entry in document.sitemaps:
            if not entry.loc or not self.accept(document, entry):
                continue
            url, referrer, depth = entry.loc, f"{document.url}:{entry.line}", document.depth + 1
            same = not self.same_origin or url_origin(url) in (None, url_origin(document.url))
            if same and document.depth < MAX_DEPTH:
                pending.append((url, referrer, depth))
            elif url not in self._seen:
                self._seen.add(url)
                why = _ELSEWHERE if not same else _TOO_DEEP
                left.append(load_document(url, Fetched(url, url, None, error=why), referrer, depth))
        return left

    def _load(self, url: str, target: str, referrer: str | None, depth: int) -> Document:
        return load_document(url, self.fetch(target), referrer, depth)
