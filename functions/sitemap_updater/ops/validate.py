"""``sitemap-updater validate``: walk a live site as a crawler would and report every fault.

From a site root or robots.txt: each ``Sitemap:`` line; from there (or from a sitemap or
index URL given directly) every index entry and every sitemap, ``.gz`` included. Works on
any site, not only the ones this project writes.

Faults (exit status 1):

* robots.txt missing, failing (Google treats a 5xx as "disallow everything"), over 500 KiB,
  naming no sitemap, or with a Sitemap line that is empty or not http(s);
* a sitemap or index that cannot be fetched (a dead link, with who named it), is over
  50 MiB (52,428,800 bytes) uncompressed, is not well-formed XML, not UTF-8, not a
  ``<urlset>`` or ``<sitemapindex>`` in the sitemaps.org namespace, or not valid against
  the official schemas (``sitemap_updater/schemas``, with the Google extensions);
* more than 50,000 ``<url>`` or ``<sitemap>`` entries in one file;
* a ``<loc>`` that is missing, longer than 2,048 characters, not absolute http(s), not on
  the site's origin (scheme, host and port), or not URL-escaped (spaces, control
  characters, non-ASCII);
* a ``<lastmod>`` that is not a W3C Datetime the schemas accept;
* a URL listed more than once across the whole site; an index entry on another origin;
* a sitemap or index redirected to another origin than the one asked for, and off the
  site (crawlers take a sitemap's URLs only from the origin that serves it).

Warnings (reported, exit status unchanged): a relative Sitemap line (followed, resolved
against robots.txt), a Sitemap line on another host, a Sitemap line or index entry given
twice, an index that lists another index (sitemaps.org does not allow it and Google does
not follow it; followed here, a few levels deep), a walk stopped at ``--max-sitemaps``,
robots.txt redirected to another origin, a sitemap redirected from another origin onto the
site. Redirects are named with both URLs.

``--site-url`` checks a copy served elsewhere (staging, ``local --serve``): the sitemaps
must name the site's origin, and its URLs are fetched from the given URL's origin.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from sitemap_updater.domain.contract import normalise_lastmod
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.robots import MAX_ROBOTS_BYTES
from sitemap_updater.domain.sharding import PROTOCOL_MAX_BYTES, PROTOCOL_MAX_URLS
from sitemap_updater.domain.urls import DEFAULT_PORTS, MAX_URL_LENGTH, Site, normalise_url
from sitemap_updater.ops.crawl import (
    INDEX,
    ROBOTS,
    SITEMAP_NS,
    UNKNOWN,
    UNREADABLE,
    URLSET,
    Document,
    Entry,
    Walk,
    redirected_off_origin,
    robots_url_for,
)
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.fetch import fetch
from sitemap_updater.ops.fetch import url_origin as _origin
from sitemap_updater.ops.progress import Progress

MAX_SCHEMA_ERRORS = 20  # per document; the rest are counted
PROTOCOL_MAX_INDEX_ENTRIES = 50_000
_NOT_HTTP = ("_not_absolute", "_not_http")


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
    _seen: dict[bytes, str] = field(default_factory=dict)  # URL digest -> where first listed
    _listed_sitemaps: dict[str, str] = field(default_factory=dict)  # index entry -> where
    _schema: Any = None

    @property
    def site_origin(self) -> tuple[str, str, int]:
        return self.site.scheme, self.site.host, self.site.port or DEFAULT_PORTS[self.site.scheme]

    def canonical(self, url: str, field: str) -> str | InvalidEvent:
        """The functions' spelling of ``url`` (on any origin), or why they would refuse it:
        URLs are judged by the domain's rules, never by rules of validate's own."""
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
        self.check_redirect(document)
        if document.kind == ROBOTS:
            self.check_robots(document)
        else:
            self.check_sitemap(document)
        self.faults[start:] = sorted(self.faults[start:], key=_line)  # stable: by line

    def check_redirect(self, document: Document) -> None:
        """A document fetched from one origin and served from another, after redirects."""
        fetched = document.fetched
        if not redirected_off_origin(fetched):
            return
        moved = f"redirected from {fetched.url} to {fetched.final_url}, another origin"
        if document.kind == ROBOTS:
            self.warn(
                document.url,
                f"{moved}: crawlers follow it and apply the rules found there to this host",
            )
            return
        named = f" (named at {document.referrer})" if document.referrer else ""
        home = {self.site_origin, _origin(self.served or self.site.origin)}
        if _origin(fetched.final_url) in home:
            self.warn(document.url, f"{moved}{named}; it ends on the site")
            return
        self.fault(
            document.url,
            f"{moved}{named}: crawlers take a sitemap's URLs only from the origin that "
            "serves it (unless robots.txt there names it), so they ignore these",
        )

    # -- robots.txt -------------------------------------------------------------------------

    def check_robots(self, document: Document) -> None:
        self.counts["robots"] += 1
        where, fetched = document.url, document.fetched
        if fetched.status == 404 or (fetched.status is not None and 400 <= fetched.status < 500):
            self.fault(
                where,
                f"HTTP {fetched.status}: no robots.txt, so crawlers cannot "
                "discover the sitemaps from it",
            )
            return
        if fetched.status is not None and fetched.status >= 500:
            self.fault(
                where, f"HTTP {fetched.status}: Google then treats the whole site as disallowed"
            )
            return
        if document.error:
            self.fault(where, document.error)
            return
        if len(fetched.body) > MAX_ROBOTS_BYTES:
            self.fault(
                where,
                f"{len(fetched.body):,} bytes: Google reads only the first {MAX_ROBOTS_BYTES:,}",
            )
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
                self.warn(
                    at,
                    f"relative Sitemap URL {line.value!r}: crawlers expect an "
                    f"absolute one ({line.url})",
                )
            elif _origin(canonical) != self.site_origin:
                self.warn(at, f"Sitemap URL {line.url} is on another origin than the site")
            if canonical in named:
                self.warn(at, f"Sitemap URL {line.url} is given twice")
            named.add(canonical)

    # -- sitemaps and indexes -----------------------------------------------------------------

    def check_sitemap(self, document: Document) -> None:
        where = document.url
        named = f" (named at {document.referrer})" if document.referrer else ""
        if document.fetched.too_large:
            self.fault(where, f"over {PROTOCOL_MAX_BYTES:,} bytes uncompressed (50 MiB){named}")
            return
        if document.kind == UNREADABLE:
            dead = document.fetched.status is not None and document.fetched.status != 200
            self.fault(where, f"{'dead link: ' if dead else ''}{document.error}{named}")
            return
        root = document.root
        if document.kind == UNKNOWN:
            self.fault(
                where,
                f"not a sitemap: the root element is <{root.tag}>, not <urlset> or <sitemapindex>",
            )
            return
        self.counts["indexes" if document.kind == INDEX else "sitemaps"] += 1
        if document.kind == INDEX and document.depth > 0:
            self.warn(
                where,
                f"an index listed by another index{named}: sitemaps.org does "
                "not allow nesting and Google does not follow it",
            )
        encoding = root.getroottree().docinfo.encoding or "UTF-8"
        if encoding.upper().replace("_", "-") not in ("UTF-8", "UTF8"):
            self.fault(where, f"encoded as {encoding}; sitemaps must be UTF-8")
        if not str(root.tag).startswith(f"{{{SITEMAP_NS}}}"):
            self.fault(where, f"<{root.tag}> is not in the sitemaps.org namespace {SITEMAP_NS}")
        else:
            self.check_schema(document)
        entries = document.urls if document.kind == URLSET else document.sitemaps
        limit = PROTOCOL_MAX_URLS if document.kind == URLSET else PROTOCOL_MAX_INDEX_ENTRIES
        if len(entries) > limit:
            kind = "<url>" if document.kind == URLSET else "<sitemap>"
            self.fault(where, f"{len(entries):,} {kind} entries; at most {limit:,} are allowed")
        for entry in entries:
            self.check_entry(document, entry)

    def check_schema(self, document: Document) -> None:
        if self._schema is None:
            from sitemap_updater.schemas import sitemap_schema  # noqa: PLC0415

            self._schema = sitemap_schema()
        if self._schema.validate(document.root):
            return
        errors = list(self._schema.error_log)
        for error in errors[:MAX_SCHEMA_ERRORS]:
            message = error.message.replace(f"{{{SITEMAP_NS}}}", "")  # the default namespace
            self.fault(f"{document.url}:{error.line}", f"schema: {message}")
        if len(errors) > MAX_SCHEMA_ERRORS:
            self.fault(document.url, f"schema: {len(errors) - MAX_SCHEMA_ERRORS:,} more errors")

    def check_entry(self, document: Document, entry: Entry) -> None:
        at = f"{document.url}:{entry.line}"
        loc = entry.loc
        if not loc:
            self.fault(at, "<loc> is missing or empty")
            return
        key = self.check_loc(at, loc)
        if entry.lastmod:
            try:
                normalise_lastmod(entry.lastmod)
            except ValueError as exc:
                self.fault(at, f"<lastmod> {entry.lastmod!r}: {exc}")
        if document.kind == INDEX:
            first = self._listed_sitemaps.setdefault(key, at)
            if first != at:
                self.warn(at, f"sitemap {loc[:120]} is listed again (first at {first})")
        if document.kind == URLSET:
            self.counts["urls"] += 1
            digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            first = self._seen.setdefault(digest, at)
            if first != at:
                self.fault(at, f"duplicate URL {loc[:120]} (first listed at {first})")

    def check_loc(self, at: str, loc: str) -> str:
        """Fault what the functions would refuse or spell otherwise; the URL the functions
        would take it for (duplicates are found by it)."""
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
            self.fault(
                at,
                f"<loc> holds characters that must be percent-encoded: {loc[:120]!r} "
                f"(escaped: {canonical[:120]})",
            )
        return canonical


def _line(finding: Finding) -> int:
    _url, _sep, line = finding.where.rpartition(":")
    return int(line) if line.isdigit() else 0


# --- the walk -----------------------------------------------------------------------------


@dataclass
class Mapping:
    """Which URLs to fetch: the site's own are fetched from the served origin."""

    site: Site
    served: str  # scheme://host[:port] the site is fetched from

    def fetch_url(self, url: str) -> str | None:
        parts = urlsplit(url)
        if parts.scheme.lower() not in DEFAULT_PORTS:
            return None
        if _origin(url) == _origin(self.site.origin):
            rest = url[len(f"{parts.scheme}://{parts.netloc}") :]
            return f"{self.served}{rest}"
        return url


def validate(
    url: str, site: Site, *, timeout: float, workers: int, max_sitemaps: int, progress: Progress
) -> Checker:
    parts = urlsplit(url)
    mapping = Mapping(site, f"{parts.scheme}://{parts.netloc}")
    checker = Checker(site, served=mapping.served)
    walk = Walk(
        fetch=partial(fetch, timeout=timeout),
        workers=workers,
        max_documents=max_sitemaps,
        follow=mapping.fetch_url,
        accept=lambda document, entry: _origin(entry.loc or "") == checker.site_origin,
    )
    named = url
    if robots_url_for(url) is not None:  # a site root or robots.txt: named on the site
        named = f"{site.origin}/robots.txt"
    for document in walk.run(named):
        checker.check(document)
        progress.advance()
        if document.kind == ROBOTS and not _usable_lines(document):
            fallback = f"{site.origin}/sitemap.xml"
            checker.warn(document.url, f"trying {fallback}, where sitemaps usually are")
            for found in walk.run_from([(fallback, None, 0)]):
                checker.check(found)
                progress.advance()
    if walk.truncated:
        checker.warn(url, f"stopped after {max_sitemaps:,} documents (--max-sitemaps)")
    return checker


def _usable_lines(document: Document) -> bool:
    return any(_origin(line.url) for line in document.sitemap_lines)


def run(args: argparse.Namespace) -> int:
    if _origin(args.url) is None:
        raise UserError(f"URL must be an absolute http(s) URL, got {args.url!r}")
    if args.workers < 1 or args.max_sitemaps < 1:
        raise UserError("--workers and --max-sitemaps must be at least 1")
    parts = urlsplit(args.url)
    try:
        site = Site.parse(args.site_url or f"{parts.scheme}://{parts.netloc}")
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    try:
        import lxml  # noqa: F401, PLC0415
    except ImportError as exc:  # pragma: no cover - the dev extra has it
        raise UserError("validate needs lxml: pip install 'sitemap-updater[cli]'") from exc
    with Progress("validate") as progress:
        checker = validate(
            args.url,
            site,
            timeout=args.timeout,
            workers=args.workers,
            max_sitemaps=args.max_sitemaps,
            progress=progress,
        )
    lines = [f"fault {f.where}: {f.message}" for f in checker.faults]
    lines += [f"warning {w.where}: {w.message}" for w in checker.warnings]
    c = checker.counts
    lines.append(
        f"validate {args.url}: {c['robots']} robots.txt, {c['indexes']:,} index file(s), "
        f"{c['sitemaps']:,} sitemap(s), {c['urls']:,} URL(s): {len(checker.faults):,} "
        f"fault(s), {len(checker.warnings):,} warning(s)"
    )
    print("\n".join(lines), flush=True)
    if args.json:
        print(
            json.dumps(
                {
                    "url": args.url,
                    "site": site.origin,
                    "counts": c,
                    "faults": [vars(f) for f in checker.faults],
                    "warnings": [vars(w) for w in checker.warnings],
                },
                ensure_ascii=False,
            )
        )
    return 1 if checker.faults else 0
