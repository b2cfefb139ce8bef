"""Applying changes to a document's previous bytes gives a full render's bytes."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from sitemap_updater.domain.entries import SitemapEntry, Video
from sitemap_updater.domain.patch import index_lines, loc_of, patched, shard_lines
from sitemap_updater.domain.render import IndexEntry, render_entry, render_index
from sitemap_updater.domain.sharding import Limits, shard_document
from sitemap_updater.domain.stylesheet import STYLESHEET_HREF
from tests.rendering import render_shard

LIMITS = Limits()
# With a character beyond the BMP and a CR (written &#13;): lines are decoded one by one.
PATHS = st.text(alphabet="ab&'()=?é/\U0001f600\r", min_size=1, max_size=6)
ENTRIES = st.dictionaries(
    PATHS.map(lambda p: f"https://www.example.com/{p}"),
    st.sampled_from([None, "2026-11-20", "2026-11-21T10:00:00Z"]),
    max_size=12,
)


def entries_of(pages: dict[str, str | None]) -> list[SitemapEntry]:
    return [SitemapEntry(url=url, lastmod=lastmod) for url, lastmod in sorted(pages.items())]


@given(before=ENTRIES, after=ENTRIES, stylesheet=st.sampled_from([None, STYLESHEET_HREF]))
def test_a_patched_shard_is_byte_for_byte_its_full_render(
    before: dict[str, str | None], after: dict[str, str | None], stylesheet: str | None
) -> None:
    old = render_shard(entries_of(before), LIMITS, stylesheet=stylesheet)
    changes = {
        url: (None if url not in after else render_entry(SitemapEntry(url, after[url])))
        for url in {*before, *after}
        if before.get(url, "gone") != after.get(url, "gone")
    }
    lines = shard_lines(old)
    assert lines is not None
    new = shard_document(patched(lines, changes), LIMITS, stylesheet=stylesheet)
    assert new == render_shard(entries_of(after), LIMITS, stylesheet=stylesheet)


def test_a_document_the_renderer_did_not_write_is_not_patched() -> None:
    good = render_shard([SitemapEntry("https://www.example.com/a")], LIMITS)
    assert shard_lines(good) == ["<url><loc>https://www.example.com/a</loc></url>\n"]
    for bad in (
        b"",
        good.replace(b"<url>", b"<url >"),
        good.replace(b"</urlset>\n", b"</urlset>"),
        good + b"\n",
        good.replace(b"</url>\n", b"</url><url><loc>x</loc></url>\n"),
        b"\xff" + good,
        good.replace(b"/a<", b"/a\r<"),  # the renderer writes no CR
    ):
        assert shard_lines(bad) is None, bad
    assert index_lines(good) is None


def test_index_lines_are_patched_in_shard_order() -> None:
    def loc(shard: str) -> str:
        return f"https://www.example.com/sitemap-{shard}.xml.gz"

    shards = ["a-00001", "a-0-00001", "a-00001-00001", "pages-00001"]
    document = render_index([IndexEntry(loc(s), "2026-11-20") for s in sorted(shards)])
    lines = index_lines(document)
    assert lines is not None

    def shard_of(line: str) -> str:
        match = re.fullmatch(r".*/sitemap-(.+)\.xml\.gz", loc_of(line))
        assert match is not None
        return match.group(1)

    (new,) = index_lines(render_index([IndexEntry(loc("a-00002"), "2026-11-21")])) or [""]
    result = patched(lines, {"a-00002": new, "pages-00001": None}, key=shard_of)
    assert [shard_of(line) for line in result] == sorted(
        ["a-00001", "a-0-00001", "a-00001-00001", "a-00002"]
    )


def test_text_over_several_lines_keeps_each_entry_on_one_line() -> None:
    """A video description's line breaks are written as references: the shard stays one
    ``<url>`` a line, so its next change is patched, and a parser reads the same text."""
    video = Video(
        thumbnail_loc="https://cdn.example.com/t.jpg",
        title="Two\nlines",
        description="first line\nsecond line\r\n",
        content_loc="https://cdn.example.com/v.mp4",
        tags=("a\nb",),
    )
    entries = [SitemapEntry("https://www.example.com/a", videos=(video,))]
    document = render_shard(entries, LIMITS)
    lines = shard_lines(document)
    assert lines is not None
    assert len(lines) == 1
    description = etree.fromstring(document).find(".//{*}description")
    assert description is not None
    assert description.text == "first line\nsecond line\r\n"
