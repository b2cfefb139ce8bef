"""``sitemap-updater validate``: walk a live site as a crawler would and report every fault
and warning (docs/OPERATIONS.md). A URL is judged by the domain's ``normalise_url``: a fault
when the functions would refuse it or must percent-encode some of it; any other spelling they
would normalise (the case of the scheme, the host or an escape, a default port) is the same
URL, and found as such when it is listed twice."""

from __future__ import annotations

import argparse
import hashlib
from dataclasses import dataclass, field
from functools import partial
from urllib.parse import urlsplit

from sitemap_updater.domain import sharding
from sitemap_updater.domain.dates import normalise_w3c
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import parse_record
from sitemap_updater.domain.render import SITEMAP_NS
from sitemap_updater.domain.robots import MAX_ROBOTS_BYTES
from sitemap_updater.domain.urls import DEFAULT_PORTS, MAX_URL_LENGTH, Site, normalise_url
from sitemap_updater.ops import crawl
from sitemap_updater.ops.crawl import FEED, INDEX, ROBOTS, TEXT, URLSET, Document
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.extensions import Extensions
from sitemap_updater.ops.fetch import fetch
from sitemap_updater.ops.fetch import url_origin as _origin
from sitemap_updater.ops.progress import Progress, print_summary
from sitemap_updater.schemas import sitemap_schema

MAX_SCHEMA_ERRORS = 20  # per document; the rest are counted
_NOT_HTTP = ("_not_absolute", "_not_http")
_ENTRIES = {URLSET: "<url> entries", TEXT: "URL lines", FEED: "feed entries"}


@dataclass(frozen=True)
class Finding:
    where: str  # URL, or URL:line
    message: str


@dataclass
class Checker:
    """Everything that is wrong with the documents of one walk, in the order found."""

    site: Site
    served: str | None = None  # where the site is fetched from, when not from its origin
    faults: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: {"robots": 0, "indexes": 0, "sitemaps": 0, "urls": 0}
    )
    _seen: dict[bytes, str] = field(default_factory=dict)  # digests: millions of URLs fit
    _parent: dict[str, str] = field(default_factory=dict)  # document URL -> who named it
    _extensions: Extensions = field(init=False)

    def __post_init__(self) -> None:
        self._extensions = Extensions(self.site)

    @property
    def site_origin(self) -> tuple[str, str, int]:
        return self.site.scheme, self.site.host, self.site.port or DEFAULT_PORTS[self.site.scheme]

    def canonical(self, url: str, field: str) -> str | InvalidEvent:
        """The functions' spelling of ``url`` (on any origin), or why they would refuse it."""
        try:
            return normalise_url(url, self.site, field, same_site=False)
        except InvalidEvent as refused:
            return refused

    def fault(self, where: str, message: str) -> None:
        self.faults.append(Finding(where, message))

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(Finding(where, message))

    def check(self, document: Document) -> None:
        start = len(self.faults)
        if document.referrer:
            self._parent.setdefault(document.url, document.referrer.rpartition(":")[0])
        self.check_redirect(document)
        if document.kind == ROBOTS:
            self.check_robots(document)
        else:
            self.check_sitemap(document)
        self.faults[start:] = sorted(self.faults[start:], key=_line)  # stable: by line

    def check_redirect(self, document: Document) -> None:
        fetched = document.fetched
        asked, final = _origin(fetched.url), _origin(fetched.final_url)
        if asked is None or final is None or asked == final:
            return
        moved = f"redirected from {fetched.url} to {fetched.final_url}, another origin"
        if document.kind == ROBOTS:
            rules = "crawlers follow it and apply the rules found there to this host"
            self.warn(document.url, f"{moved}: {rules}")
        elif final in {self.site_origin, _origin(self.served or "")}:
            self.warn(document.url, f"{moved}{document.named}; it ends on the site")
        else:
            self.fault(
                document.url,
                f"{moved}{document.named}: crawlers take a sitemap's URLs only from the origin "
                "that serves it (unless robots.txt there names it), so they ignore these",
            )

    def check_robots(self, document: Document) -> None:
        self.counts["robots"] += 1
        where, status, body = document.url, document.fetched.status, document.fetched.body
        # Google reads a 4xx as no robots.txt, but 429 as a server error.
        if status is not None and 400 <= status < 500 and status != 429:
            why = "no robots.txt, so crawlers cannot discover the sitemaps from it"
            self.fault(where, f"HTTP {status}: {why}")
        elif status is not None and (status == 429 or status >= 500):
            self.fault(where, f"HTTP {status}: Google then treats the whole site as disallowed")
        elif document.error:
            self.fault(where, document.error)
        else:
            if len(body) > MAX_ROBOTS_BYTES:
                why = f"Google reads only the first {MAX_ROBOTS_BYTES:,}"
                self.fault(where, f"{len(body):,} bytes: {why}")
            if not document.sitemap_lines:
                self.fault(where, "names no sitemap (no Sitemap: line)")
            self.check_sitemap_lines(document)

    def check_sitemap_lines(self, document: Document) -> None:
        named: set[str] = set()
        for line in document.sitemap_lines:
            at = f"{document.url}:{line.line}"
            if not line.value:
                self.fault(at, "Sitemap: line without a URL")
                continue
            canonical = self.canonical(line.url, "Sitemap:")
            if isinstance(canonical, InvalidEvent):
                if canonical.code.endswith(_NOT_HTTP):
                    self.fault(at, f"Sitemap: {line.value!r} is not an http(s) URL")
                else:
                    self.fault(at, f"{canonical.detail}: {line.url[:120]!r}")
                continue
            if _origin(line.value) is None:
                relative = f"relative Sitemap URL {line.value!r}"
                self.warn(at, f"{relative}: crawlers expect an absolute one ({line.url})")
            elif _origin(canonical) != self.site_origin:
                self.warn(at, f"Sitemap URL {line.url} is on another origin than the site")
            if canonical in named:
                self.warn(at, f"Sitemap URL {line.url} is given twice")
            named.add(canonical)

    def check_sitemap(self, document: Document) -> None:
        where, root, kind, named = document.url, document.root, document.kind, document.named
        if document.fetched.too_large:
            size = f"over {sharding.PROTOCOL_MAX_BYTES:,} bytes uncompressed (50 MiB)"
            self.fault(where, f"{size}{named}")
            return
        fetched = document.fetched
        if urlsplit(where).path.endswith(".gz") and not (fetched.gzipped or fetched.problem()):
            self.fault(where, f"named .gz, but not gzip{named}")
            if kind == crawl.UNREADABLE:  # not XML either: what it is, is not ours to guess
                return
        if kind == crawl.UNREADABLE:
            dead = "dead link: " if document.fetched.status in (404, 410) else ""
            self.fault(where, f"{dead}{document.error}{named}")
            return
        if kind == crawl.UNKNOWN:
            tags = "<urlset>, <sitemapindex>, an Atom <feed> or an RSS 2.0 <rss>"
            self.fault(where, f"not a sitemap: the root element is <{root.tag}>, not {tags}")
            return
        self.counts["indexes" if kind == INDEX else "sitemaps"] += 1
        if kind == INDEX and document.depth > 0:
            nesting = "sitemaps.org does not allow nesting and Google does not follow it"
            self.warn(where, f"an index listed by another index{named}: {nesting}")
        if root is not None:  # XML (a text sitemap that is not UTF-8 is not read)
            self.check_xml(document)
        entries, tag, limit = (
            (document.sitemaps, "<sitemap> entries", sharding.PROTOCOL_MAX_INDEX_ENTRIES)
            if kind == INDEX
            else (document.urls, _ENTRIES[kind], sharding.PROTOCOL_MAX_URLS)
        )
        if len(entries) > limit:
            self.fault(where, f"{len(entries):,} {tag}; at most {limit:,} are allowed")
        for entry in entries:
            self.check_entry(document, entry)

    def check_xml(self, document: Document) -> None:
        """UTF-8, and a sitemap's or an index's namespace and schema."""
        where, root = document.url, document.root
        encoding = root.getroottree().docinfo.encoding or "UTF-8"
        if encoding.upper().replace("_", "-") not in ("UTF-8", "UTF8"):
            self.fault(where, f"encoded as {encoding}; sitemaps must be UTF-8")
        if document.kind == FEED:
            return
        if not str(root.tag).startswith(f"{{{SITEMAP_NS}}}"):
            self.fault(where, f"<{root.tag}> is not in the sitemaps.org namespace {SITEMAP_NS}")
        else:
            self.check_schema(document)

    def check_schema(self, document: Document) -> None:
        schema = sitemap_schema()  # cached: one per process
        if schema.validate(document.root):
            return
        errors = list(schema.error_log)
        for error in errors[:MAX_SCHEMA_ERRORS]:
            message = error.message.replace(f"{{{SITEMAP_NS}}}", "")  # the default namespace
            self.fault(f"{document.url}:{error.line}", f"schema: {message}")
        if len(errors) > MAX_SCHEMA_ERRORS:
            self.fault(document.url, f"schema: {len(errors) - MAX_SCHEMA_ERRORS:,} more errors")

    def check_entry(self, document: Document, entry: crawl.Entry) -> None:
        at, loc = f"{document.url}:{entry.line}", entry.loc
        if not loc:
            self.fault(at, "<loc> is missing or empty")
            return
        kind = URLSET if document.kind == TEXT else document.kind  # both list the site's pages
        canonical = self.check_loc(at, loc)
        key = f"{kind} {canonical}"
        if entry.lastmod:
            try:
                normalise_w3c(entry.lastmod)
            except ValueError as exc:
                self.fault(at, f"<lastmod> {entry.lastmod!r}: {exc}")
        if kind == URLSET:
            self.counts["urls"] += 1
            self.check_extensions(at, entry, canonical)
        elif self.leads_back(document.url, loc):
            where = "itself" if loc == document.url else f"{loc[:120]}, which lists this index"
            self.fault(at, f"loop: the index lists {where}")
        digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        first = self._seen.setdefault(digest, at)
        if first != at and kind == FEED:
            self.warn(at, f"feed entry {loc[:120]} names a page again (first at {first})")
        elif first != at and kind == INDEX:
            self.warn(at, f"sitemap {loc[:120]} is listed again (first at {first})")
        elif first != at:
            self.fault(at, f"duplicate URL {loc[:120]} (first listed at {first})")

    def check_extensions(self, at: str, entry: crawl.Entry, url: str) -> None:
        """Fault the images, videos, news and alternates the contract refuses (the schema types
        their URLs as any URI): backfill and the functions would refuse the page for them."""
        if entry.element is None or not (record := self._extensions.read(entry.element)):
            return  # a text sitemap's line, or no extension
        try:
            parse_record({"url": url, **record}, self.site)
        except InvalidEvent as refused:
            if not refused.code.startswith("url_"):  # check_loc has said what is wrong with it
                self.fault(at, f"the page is refused: {refused.reason}")

    def leads_back(self, url: str, loc: str) -> bool:
        """Whether ``loc`` is ``url`` or one of the documents that led to it."""
        while url != loc:
            if (parent := self._parent.get(url)) is None:
                return False
            url = parent
        return True

    def check_loc(self, at: str, loc: str) -> str:
        """Fault what the functions would refuse or spell otherwise; the URL they would take
        it for (duplicates are found by it)."""
        if len(loc) > MAX_URL_LENGTH:
            self.fault(at, f"<loc> is {len(loc):,} characters; at most {MAX_URL_LENGTH:,}")
        canonical = self.canonical(loc, "<loc>")
        if isinstance(canonical, InvalidEvent):
            if not (canonical.code.endswith("_too_long") and len(loc) > MAX_URL_LENGTH):
                self.fault(at, f"{canonical.detail}: {loc[:120]!r}")
            return loc
        if _origin(canonical) != self.site_origin:
            self.fault(at, f"<loc> {loc[:120]} is not on the site {self.site.origin}")
        unescaped = next((char for char in loc if not char.isascii()), None)
        if unescaped is not None:
            must = f"{unescaped!r}, which must be percent-encoded (UTF-8)"
            self.fault(at, f"<loc> holds {must}: {loc[:120]!r}")
        elif canonical.count("%") > loc.count("%"):
            must = f"characters that must be percent-encoded: {loc[:120]!r}"
            self.fault(at, f"<loc> holds {must} (escaped: {canonical[:120]})")
        return canonical


def _line(finding: Finding) -> int:
    line = finding.where.rpartition(":")[2]
    return int(line) if line.isdigit() else 0


def fetch_url(site: Site, served: str, url: str) -> str | None:
    """Where to fetch ``url`` from: the site's own URLs from the origin it is served at."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in DEFAULT_PORTS:
        return None
    if _origin(url) != _origin(site.origin):
        return url
    return served + url[len(f"{parts.scheme}://{parts.netloc}") :]


def validate(args: argparse.Namespace, site: Site, served: str, progress: Progress) -> Checker:
    checker = Checker(site, served)
    walk = crawl.Walk(
        fetch=partial(fetch, timeout=args.timeout),
        workers=args.workers,
        max_documents=args.max_sitemaps,
        follow=partial(fetch_url, site, served),
        accept=lambda document, entry: _origin(entry.loc or "") == checker.site_origin,
    )
    start = f"{site.origin}/robots.txt" if crawl.robots_url_for(args.url) else args.url
    for document in walk.run(start):
        checker.check(document)
        progress.advance()
        if document.kind == ROBOTS and not any(_origin(s.url) for s in document.sitemap_lines):
            fallback = f"{site.origin}/sitemap.xml"  # walk.run goes on there
            checker.warn(document.url, f"trying {fallback}, where sitemaps usually are")
    if walk.truncated:
        stopped = f"stopped after {args.max_sitemaps:,} sitemap file(s) (--max-sitemaps)"
        checker.fault(args.url, f"truncated: {stopped}; the others named were not checked")
    return checker


def run(args: argparse.Namespace) -> int:
    if _origin(args.url) is None:
        raise UserError(f"URL must be an absolute http(s) URL, got {args.url!r}")
    parts = urlsplit(args.url)
    served = f"{parts.scheme}://{parts.netloc}"
    try:
        site = Site.parse(args.site_url or served)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    try:
        import lxml  # noqa: F401, PLC0415
    except ImportError as exc:  # pragma: no cover - the dev extra has it
        raise UserError("validate needs lxml: pip install 'sitemap-updater[cli]'") from exc
    with Progress("validate") as progress:
        checker = validate(args, site, served, progress)
    faults, warnings, c = checker.faults, checker.warnings, checker.counts
    lines = [f"fault {f.where}: {f.message}" for f in faults]
    lines += [f"warning {w.where}: {w.message}" for w in warnings]
    lines.append(
        f"validate {args.url}: {c['robots']} robots.txt, {c['indexes']:,} index file(s), "
        f"{c['sitemaps']:,} sitemap(s), {c['urls']:,} URL(s): {len(faults):,} "
        f"fault(s), {len(warnings):,} warning(s)"
    )
    found = {"faults": [vars(f) for f in faults], "warnings": [vars(w) for w in warnings]}
    report = {"url": args.url, "site": site.origin, "counts": c, **found}
    print_summary(lines, report, args.json, ensure_ascii=False)
    return 1 if faults else 0
