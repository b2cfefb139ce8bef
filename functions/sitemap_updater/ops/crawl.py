"""Walk a live site's sitemaps as a crawler does: robots.txt -> Sitemap lines -> indexes ->
sitemaps. Shared by ``backfill`` (which imports the URLs) and ``validate`` (which checks
everything on the way).

Parsing is lenient about what it reads (elements are matched by local name, whitespace
around values is dropped) and safe about how: lxml with no network, no DTD and no entity
expansion. Documents are fetched a few at a time in parallel but handed out in the order
they were found (breadth first), so a walk of the same site gives the same order.

A walk with ``same_origin`` (backfill's) stays where it was sent: an index entry on another
origin than its index, and a redirect to another origin, are not followed (give it a fetch
with ``same_origin=True`` so the redirect is not even fetched); each comes out as an
unreadable document that says why.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

from sitemap_updater.ops.fetch import Fetched, off_origin, url_origin

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
URLSET = "urlset"
INDEX = "sitemapindex"
ROBOTS = "robots"
UNREADABLE = "unreadable"  # not fetched, or not XML
UNKNOWN = "unknown"  # XML, but neither a urlset nor a sitemap index
MAX_DEPTH = 5  # index -> index -> ... : sitemaps.org allows none; we follow a few
_BOM = b"\xef\xbb\xbf"
_SITEMAP_LINE = re.compile(rb"^[ \t]*sitemap[ \t]*:[ \t]*(.*?)[ \t]*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Entry:
    """A ``<url>`` or ``<sitemap>`` element: its values (stripped), and its line."""

    loc: str | None
    line: int | None
    lastmod: str | None = None
    changefreq: str | None = None
    priority: str | None = None


@dataclass(frozen=True, slots=True)
class SitemapLine:
    """A ``Sitemap:`` line of robots.txt."""

    line: int
    value: str  # as written
    url: str  # resolved against robots.txt's URL


@dataclass
class Document:
    """One thing fetched on the walk, as read."""

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


def redirected_off_origin(fetched: Fetched) -> bool:
    """Whether the fetch ended on another origin than the one asked (after redirects)."""
    asked, final = url_origin(fetched.url), url_origin(fetched.final_url)
    return asked is not None and final is not None and asked != final


def _local(tag: Any) -> str | None:
    if not isinstance(tag, str):
        return None  # a comment or processing instruction
    return tag.rpartition("}")[2]


def _text(element: Any) -> str:
    return element.text.strip() if element.text is not None else ""


def xml_parser() -> Any:
    from lxml import etree  # noqa: PLC0415 - lxml is the cli extra; the functions never parse

    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def parse_xml(body: bytes) -> tuple[Any, str | None]:
    """(root element, None) or (None, why it is not well-formed XML)."""
    from lxml import etree  # noqa: PLC0415

    try:
        return etree.fromstring(body, xml_parser()), None
    except etree.XMLSyntaxError as exc:
        return None, f"not well-formed XML: {exc}"


def read_entries(root: Any) -> tuple[str, list[Entry], list[Entry]]:
    """(kind, url entries, sitemap entries) of a parsed sitemap document."""
    kind = _local(root.tag)
    if kind not in (URLSET, INDEX):
        return UNKNOWN, [], []
    child = "url" if kind == URLSET else "sitemap"
    found: list[Entry] = []
    for element in root:
        if _local(element.tag) != child:
            continue
        values: dict[str, str | None] = {}
        for part in element:
            name = _local(part.tag)
            if name in ("loc", "lastmod", "changefreq", "priority") and name not in values:
                values[name] = _text(part)
        found.append(Entry(loc=values.pop("loc", None), line=element.sourceline, **values))
    return (kind, found, []) if kind == URLSET else (kind, [], found)


def sitemap_lines(body: bytes, robots_url: str) -> list[SitemapLine]:
    """The ``Sitemap:`` lines of a robots.txt, values resolved against its URL."""
    lines = []
    for number, raw in enumerate(body.split(b"\n"), start=1):
        line = raw.removeprefix(_BOM) if number == 1 else raw
        match = _SITEMAP_LINE.match(line.split(b"#", 1)[0].rstrip(b"\r"))
        if match is None:
            continue
        value = match.group(1).decode("utf-8", "replace")
        lines.append(SitemapLine(number, value, urljoin(robots_url, value) if value else ""))
    return lines


def robots_url_for(url: str) -> str | None:
    """robots.txt's URL when ``url`` is a site root or robots.txt itself; else None."""
    parts = urlsplit(url)
    if parts.path in ("", "/") and not parts.query:
        return f"{parts.scheme}://{parts.netloc}/robots.txt"
    if parts.path.lower() == "/robots.txt":
        return url
    return None


def load_document(
    url: str, fetched: Fetched, referrer: str | None = None, depth: int = 0
) -> Document:
    """Read a fetched sitemap or index (or say why it cannot be read)."""
    document = Document(url, referrer, fetched, depth)
    problem = fetched.problem()
    if problem is not None:
        document.error = problem
        return document
    root, error = parse_xml(fetched.body)
    if root is None:
        document.error = error
        return document
    document.root = root
    document.kind, document.urls, document.sitemaps = read_entries(root)
    return document


def _not_followed(url: str, referrer: str, depth: int) -> Document:
    why = "on another origin than the index naming it; not followed"
    return Document(url, referrer, Fetched(url, url, None, error=why), depth, error=why)


def _everything(document: Document, entry: Entry) -> bool:
    return True


@dataclass
class Walk:
    """A breadth-first walk. ``follow`` maps a named sitemap URL to the URL to fetch, or
    None to leave it (the default follows http(s) URLs as they are); ``accept`` says which
    index entries to follow at all; ``same_origin`` keeps the walk off other origins (index
    entries and redirects), reporting what it left."""

    fetch: Callable[[str], Fetched]
    workers: int = 4
    max_documents: int = 100_000
    follow: Callable[[str], str | None] = field(default=lambda url: url)
    accept: Callable[[Document, Entry], bool] = _everything
    same_origin: bool = False
    fetched: int = 0
    truncated: bool = False  # stopped at max_documents
    _seen: set[str] = field(default_factory=set)

    def run(self, start: str) -> Iterator[Document]:
        """Walk from a site root or robots.txt URL (Sitemap lines) or a sitemap URL."""
        robots = robots_url_for(start)
        if robots is None:
            yield from self.run_from([(start, None, 0)])
            return
        fetched = self._fetch(self.follow(robots) or robots)
        self.fetched += 1
        document = Document(robots, None, fetched, kind=ROBOTS)
        document.error = fetched.problem()
        if document.error is None:
            document.sitemap_lines = sitemap_lines(fetched.body, robots)
        yield document
        lines = [(line.url, f"{robots}:{line.line}", 0) for line in document.sitemap_lines]
        yield from self.run_from([line for line in lines if line[0]])

    def run_from(self, frontier: Iterable[tuple[str, str | None, int]]) -> Iterator[Document]:
        """Walk from these (url, referrer, depth) in order, following index entries."""
        pending = deque(frontier)
        running: deque[Future[Document]] = deque()
        with ThreadPoolExecutor(max_workers=max(1, self.workers)) as pool:
            while pending or running:
                while pending and len(running) < max(1, self.workers):
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
                if not running:
                    continue
                document = running.popleft().result()
                left: list[Document] = []
                if document.kind == INDEX and document.depth < MAX_DEPTH:
                    for entry in document.sitemaps:
                        if not entry.loc or not self.accept(document, entry):
                            continue
                        named = (entry.loc, f"{document.url}:{entry.line}", document.depth + 1)
                        if self._elsewhere(document.url, entry.loc):
                            if entry.loc not in self._seen:
                                self._seen.add(entry.loc)
                                left.append(_not_followed(*named))
                        else:
                            pending.append(named)
                yield document
                yield from left

    def _elsewhere(self, index: str, loc: str) -> bool:
        origin = url_origin(loc)
        return self.same_origin and origin is not None and origin != url_origin(index)

    def _fetch(self, target: str) -> Fetched:
        fetched = self.fetch(target)
        if self.same_origin and redirected_off_origin(fetched):
            return replace(fetched, body=b"", too_large=False, error=off_origin(fetched.final_url))
        return fetched

    def _load(self, url: str, target: str, referrer: str | None, depth: int) -> Document:
        return load_document(url, self._fetch(target), referrer, depth)
