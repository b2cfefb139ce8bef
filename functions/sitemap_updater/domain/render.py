"""Rendering of shards (``<urlset>``, or text), sitemap indexes (``<sitemapindex>``) and the
Atom feed of recent changes.

Plain string building: every value is validated before it gets here and escaped on the
way out, one ``<url>`` per line, UTF-8, no timestamps of our own, so the same entries
always give the same bytes (a rebuild that changes nothing writes nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sitemap_updater.domain.entries import News, SitemapEntry, Video
from sitemap_updater.domain.feed import FEED_KEY, Feed
from sitemap_updater.domain.stylesheet import prologue
from sitemap_updater.domain.urls import Site

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"
VIDEO_NS = "http://www.google.com/schemas/sitemap-video/1.1"
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"
XHTML_NS = "http://www.w3.org/1999/xhtml"
XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
# Every shard declares every extension's namespace: one frame, of one known size, whatever
# the shard holds (byte accounting needs it), as common generators do.
URLSET_OPEN = (
    f'{XML_DECLARATION}<urlset xmlns="{SITEMAP_NS}" xmlns:xhtml="{XHTML_NS}" '
    f'xmlns:image="{IMAGE_NS}" xmlns:video="{VIDEO_NS}" xmlns:news="{NEWS_NS}">\n'
)
URLSET_CLOSE = "</urlset>\n"
_END = "</url>\n"  # of every <url> line
INDEX_OPEN = f'{XML_DECLARATION}<sitemapindex xmlns="{SITEMAP_NS}">\n'
INDEX_CLOSE = "</sitemapindex>\n"
ATOM_NS = "http://www.w3.org/2005/Atom"
URLSET_FRAME_BYTES = len(URLSET_OPEN) + len(URLSET_CLOSE)
# Bump when a line's rendering changes: shards written before are then rebuilt in full,
# never patched line by line into a mix of old and new renderings.
RENDERING = "2"


def escape(text: str) -> str:
    """Escape the five XML special characters, CR and LF (for element text and attribute
    values). A raw CR would reach a parser as a line feed (XML end-of-line handling); a raw
    LF would split a ``<url>`` over two lines, and the patch reads a shard line by line.

    Spelt as replacements ("&" first): ``str.translate`` with a table that maps characters to
    strings is looked up character by character, ten times slower."""
    if not (
        "&" in text
        or "<" in text
        or ">" in text
        or '"' in text
        or "'" in text
        or "\r" in text
        or "\n" in text
    ):
        return text
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
        .replace("\r", "&#13;")
        .replace("\n", "&#10;")
    )


def render_entry(entry: SitemapEntry, links: str | None = None) -> str:
    """One ``<url>`` element on one line. Every value is escaped, those whose grammar leaves
    nothing to escape too: a value that got past validation some other way (a registry item)
    never becomes markup. ``links``: ``render_links(entry.alternates)``, when already done
    (every member of a cluster lists the same)."""
    text = f"<url><loc>{escape(entry.url)}</loc>"
    if entry.lastmod is not None:
        text += f"<lastmod>{escape(entry.lastmod)}</lastmod>"
    if entry.changefreq is not None:
        text += f"<changefreq>{escape(entry.changefreq)}</changefreq>"
    if entry.priority is not None:
        text += f"<priority>{escape(entry.priority)}</priority>"
    if entry.alternates or entry.images or entry.videos or entry.news:
        text += _extensions(entry, links)
    return text + _END


def with_links(line: str, links: str) -> str:
    """``line``, ``render_entry`` of an entry without alternates, images, videos or news, as
    it renders with ``links`` (``render_links`` of its alternates), without rendering it
    again."""
    return line.removesuffix(_END) + links + _END


def render_links(alternates: Iterable[tuple[str, str]]) -> str:
    text = ""  # appended in place: a comprehension costs more than the links themselves
    for lang, href in alternates:
        text += f'<xhtml:link rel="alternate" hreflang="{escape(lang)}" href="{escape(href)}"/>'
    return text


def _extensions(entry: SitemapEntry, links: str | None) -> str:
    text = render_links(entry.alternates) if links is None else links
    for image in entry.images:
        text += f"<image:image><image:loc>{escape(image)}</image:loc></image:image>"
    for video in entry.videos:
        text += _video(video)
    if entry.news is not None:
        text += _news(entry.news)
    return text


def _element(prefix: str, name: str, value: object | None, attributes: str = "") -> str:
    if value is None:
        return ""
    return f"<{prefix}:{name}{attributes}>{escape(str(value))}</{prefix}:{name}>"


def _yes_no(value: bool | None) -> str | None:
    return None if value is None else ("yes" if value else "no")


def _video(video: Video) -> str:
    """One ``<video:video>``, its children in the order the video schema requires."""
    info = f' info="{escape(video.uploader_info)}"' if video.uploader_info else ""
    parts = [
        "<video:video>",
        _element("video", "thumbnail_loc", video.thumbnail_loc),
        _element("video", "title", video.title),
        _element("video", "description", video.description),
        _element("video", "content_loc", video.content_loc),
        _element("video", "player_loc", video.player_loc),
        _element("video", "duration", video.duration),
        _element("video", "expiration_date", video.expiration_date),
        _element("video", "rating", video.rating),
        _element("video", "view_count", video.view_count),
        _element("video", "publication_date", video.publication_date),
        *(_element("video", "tag", tag) for tag in video.tags),
        _element("video", "family_friendly", _yes_no(video.family_friendly)),
        _chosen("restriction", video.restriction),
        _element("video", "requires_subscription", _yes_no(video.requires_subscription)),
        _element("video", "uploader", video.uploader, info),
        _chosen("platform", video.platform),
        _element("video", "live", _yes_no(video.live)),
        "</video:video>",
    ]
    return "".join(parts)


def _chosen(name: str, choice: tuple[str, tuple[str, ...]] | None) -> str:
    """A video's restriction or platform: (allow|deny, its items)."""
    if choice is None:
        return ""
    relationship, items = choice
    return _element("video", name, " ".join(items), f' relationship="{escape(relationship)}"')


def _news(news: News) -> str:
    return (
        "<news:news><news:publication>"
        f"{_element('news', 'name', news.publication_name)}"
        f"{_element('news', 'language', news.publication_language)}"
        "</news:publication>"
        f"{_element('news', 'publication_date', news.publication_date)}"
        f"{_element('news', 'title', news.title)}"
        "</news:news>"
    )


def rendered_size(rendered: str) -> int:
    return len(rendered) if rendered.isascii() else len(rendered.encode("utf-8"))


def urlset_of(
    rendered: Sequence[str], *, stylesheet: str | None = None, max_bytes: int | None = None
) -> bytes:
    """A complete ``<urlset>`` document from entries already rendered (``render_entry``),
    with the human view's instruction as ``prologue`` adds it."""
    return _joined(URLSET_OPEN, rendered, URLSET_CLOSE, stylesheet, max_bytes)


def _joined(
    opening: str, lines: Sequence[str], closing: str, href: str | None, max_bytes: int | None
) -> bytes:
    """The lines in their frame, encoded a thousand at a time and joined once: a shard of
    50 MiB joined into one string would take four bytes a character for a single emoji."""
    frame = opening.removeprefix(XML_DECLARATION)
    chunks = [frame.encode()]
    chunks += ("".join(lines[at : at + 1000]).encode() for at in range(0, len(lines), 1000))
    chunks.append(closing.encode())
    size = len(XML_DECLARATION) + sum(map(len, chunks))
    return b"".join([prologue(size, href, max_bytes), *chunks])


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One ``<sitemap>`` element of an index: a shard's absolute URL and when its bytes changed."""

    loc: str
    lastmod: str | None


def render_index(entries: Iterable[IndexEntry], *, stylesheet: str | None = None) -> bytes:
    """A complete ``<sitemapindex>`` document (``stylesheet``: as for ``urlset_of``)."""
    return index_of([index_line(entry) for entry in entries], stylesheet=stylesheet)


def index_line(entry: IndexEntry) -> str:
    lastmod = f"<lastmod>{escape(entry.lastmod)}</lastmod>" if entry.lastmod else ""
    return f"<sitemap><loc>{escape(entry.loc)}</loc>{lastmod}</sitemap>\n"


def index_of(lines: Sequence[str], *, stylesheet: str | None = None) -> bytes:
    """A complete ``<sitemapindex>`` document from lines already rendered (``index_line``)."""
    return _joined(INDEX_OPEN, lines, INDEX_CLOSE, stylesheet, None)


def render_feed(feed: Feed, site: Site) -> bytes:
    """The Atom 1.0 feed (RFC 4287) of recent changes: its own URL as its id, the site as its
    author; each entry's id and link its page's URL, its title the page's (or the URL)."""
    url, home, host = site.url_for(FEED_KEY), site.url_for(""), site.origin.partition("://")[2]
    entries = "".join(
        f"<entry><id>{escape(e.url)}</id><title>{escape(e.title or e.url)}</title>"
        f'<link href="{escape(e.url)}"/><updated>{e.updated}</updated></entry>\n'
        for e in feed.entries
    )
    return (
        f'{XML_DECLARATION}<feed xmlns="{ATOM_NS}">\n<id>{escape(url)}</id>'
        f"<title>Recent changes on {escape(host)}</title><updated>{feed.changed}</updated>"
        f"<author><name>{escape(host)}</name><uri>{escape(home)}</uri></author>"
        f'<link rel="self" href="{escape(url)}"/><link href="{escape(home)}"/>\n'
        f"{entries}</feed>\n"
    ).encode()
