"""``sitemap-updater build``: the offline path, with the functions' rendering and limits."""

from __future__ import annotations

import gc
import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from lxml import etree

from sitemap_updater.cli import main
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.events import parse_record
from sitemap_updater.domain.render import URLSET_FRAME_BYTES, render_entry
from sitemap_updater.domain.sharding import Limits
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.build import render_site, write_site
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.pages import Record
from sitemap_updater.schemas import sitemap_schema
from tests.atom import read_atom
from tests.rendering import entry_size

SITE = Site.parse("https://www.example.com")
NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}


def records(*pages: dict[str, Any]) -> list[Record]:
    return [Record(f"test#{n}", page) for n, page in enumerate(pages)]


def page(path: str, **fields: Any) -> dict[str, Any]:
    return {"url": f"https://www.example.com{path}", **fields}


def urls(body: bytes) -> list[str]:
    document = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
    return [loc.text for loc in etree.fromstring(document).findall(".//sm:loc", NS)]


def write_jsonl(path: Path, pages: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in pages), encoding="utf-8")
    return path


def test_pages_fill_shards_in_input_order_and_each_shard_lists_its_urls_sorted() -> None:
    pages = [page(f"/{name}") for name in "edcba"]
    built = render_site(records(*pages), SITE, Limits(max_urls_per_shard=2))
    files = built.files
    assert sorted(files) == [
        "robots.txt",
        "sitemap-pages-00001.xml.gz",
        "sitemap-pages-00002.xml.gz",
        "sitemap-pages-00003.xml.gz",
        "sitemap.xml",
    ]
    assert urls(files["sitemap-pages-00001.xml.gz"]) == [
        "https://www.example.com/d",
        "https://www.example.com/e",
    ]
    assert urls(files["sitemap-pages-00003.xml.gz"]) == ["https://www.example.com/a"]
    assert urls(files["sitemap.xml"]) == [
        f"https://www.example.com/sitemap-pages-0000{n}.xml.gz" for n in (1, 2, 3)
    ]
    assert files["robots.txt"] == (
        b"User-agent: *\nDisallow:\n\nSitemap: https://www.example.com/sitemap.xml\n"
    )
    schema = sitemap_schema()
    for name, body in files.items():
        if name.endswith((".xml", ".gz")):
            document = gzip.decompress(body) if name.endswith(".gz") else body
            assert schema.validate(etree.fromstring(document)), (name, schema.error_log)


def test_a_cluster_members_line_is_its_entry_rendered_with_the_clusters_links() -> None:
    """Whatever else it holds: the links come before a page's images and news."""
    paths = {"en": "/en/a", "de": "/de/a", "fr": "/fr/a"}
    pairs = tuple(sorted((lang, f"https://www.example.com{path}") for lang, path in paths.items()))

    def member(lang: str, **fields: Any) -> dict[str, Any]:
        others = [{"hreflang": other, "href": href} for other, href in pairs if other != lang]
        return page(paths[lang], hreflang=lang, alternates=others, **fields)

    news = {
        "publication": {"name": "Example", "language": "en"},
        "publication_date": "2026-11-21T10:00:00Z",
        "title": "A",
    }
    members = [
        member("en", lastmod="2026-11-20"),
        member("de", images=[{"loc": "https://cdn.example.com/a.jpg"}]),
        member("fr", news=news),
    ]
    now = datetime(2026, 11, 22, tzinfo=UTC)

    built = render_site(records(*members), SITE, Limits(), compress=False, now=now)

    lines = built.files["sitemap-pages-00001.xml"].decode().splitlines(keepends=True)
    for record in members:
        entry = parse_record(json.dumps(record).encode(), SITE).entry
        assert entry is not None
        assert render_entry(msgspec.structs.replace(entry, alternates=pairs)) in lines


def test_a_shard_closes_when_the_next_entry_would_break_the_byte_limit() -> None:
    pages = [page(f"/{n}") for n in range(5)]
    size = entry_size(SitemapEntry(url="https://www.example.com/0"))
    limits = Limits(max_shard_bytes=URLSET_FRAME_BYTES + 2 * size + size // 2)
    files = render_site(records(*pages), SITE, limits).files
    assert [len(urls(files[f"sitemap-pages-0000{n}.xml.gz"])) for n in (1, 2, 3)] == [2, 2, 1]
    for n in (1, 2, 3):
        assert (
            len(gzip.decompress(files[f"sitemap-pages-0000{n}.xml.gz"])) <= limits.max_shard_bytes
        )


def test_an_entry_no_shard_can_hold_is_rejected_with_the_events_reason() -> None:
    limits = Limits(max_shard_bytes=URLSET_FRAME_BYTES + 60)
    built = render_site(records(page("/short"), page("/" + "long" * 20)), SITE, limits)
    assert built.result.pages == 1
    (rejected,) = built.result.rejected
    assert rejected.reason.startswith("entry_too_large: entry is ")


def test_more_shards_than_an_index_holds_make_more_index_files_each_in_robots() -> None:
    pages = [page(f"/{n}") for n in range(5)]
    limits = Limits(max_urls_per_shard=1, max_sitemaps_per_index=2)
    built = render_site(records(*pages), SITE, limits, compress=False)
    assert built.result.index_files == ["sitemap.xml", "sitemap-index-2.xml", "sitemap-index-3.xml"]
    assert urls(built.files["sitemap-index-3.xml"]) == [
        "https://www.example.com/sitemap-pages-00005.xml"
    ]
    robots = built.files["robots.txt"].decode()
    for key in built.result.index_files:
        assert f"Sitemap: https://www.example.com/{key}\n" in robots


def test_the_same_input_gives_byte_identical_files(tmp_path: Path) -> None:
    pages = [page(f"/p{n}", lastmod=f"2026-11-{n % 28 + 1:02d}", priority=0.5) for n in range(50)]
    first = render_site(records(*pages), SITE, Limits(max_urls_per_shard=7)).files
    second = render_site(records(*pages), SITE, Limits(max_urls_per_shard=7)).files
    assert first == second
    write_site(first, tmp_path / "a")
    write_site(second, tmp_path / "b")
    for name in first:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_repeated_url_keeps_its_first_place_and_the_later_or_newer_record_wins() -> None:
    built = render_site(
        records(
            page("/a", lastmod="2026-01-01"),
            page("/b", version=5, lastmod="2026-05-05"),
            page("/c"),
            page("/a", lastmod="2026-02-02"),  # later, equal version: wins
            page("/b", version=4, lastmod="2026-04-04"),  # older: loses
        ),
        SITE,
        Limits(max_urls_per_shard=2),
    )
    assert built.result.duplicates == 2
    shard = gzip.decompress(built.files["sitemap-pages-00001.xml.gz"]).decode()
    assert "<loc>https://www.example.com/a</loc><lastmod>2026-02-02</lastmod>" in shard
    assert "<loc>https://www.example.com/b</loc><lastmod>2026-05-05</lastmod>" in shard


def test_an_unpublish_record_removes_the_page() -> None:
    built = render_site(
        records(
            page("/a"), page("/b"), {"type": "unpublish", "url": page("/a")["url"], "version": 1}
        ),
        SITE,
        Limits(),
    )
    assert built.result.unpublished == 1
    assert urls(built.files["sitemap-pages-00001.xml.gz"]) == ["https://www.example.com/b"]


def test_a_shards_lastmod_in_the_index_is_its_newest_entrys_or_the_given_one() -> None:
    pages = [
        page("/a", lastmod="2026-11-20"),
        page("/b", lastmod="2026-11-20T08:00:00+01:00"),
        page("/c"),
        page("/d"),
    ]
    index = render_site(records(*pages), SITE, Limits(max_urls_per_shard=2)).files["sitemap.xml"]
    text = index.decode()
    assert "sitemap-pages-00001.xml.gz</loc><lastmod>2026-11-20T07:00:00Z</lastmod>" in text
    assert "sitemap-pages-00002.xml.gz</loc></sitemap>" in text
    given = render_site(records(*pages), SITE, Limits(), lastmod="2026-01-01").files
    assert "<lastmod>2026-01-01</lastmod>" in given["sitemap.xml"].decode()


def test_the_owners_robots_txt_is_kept_with_our_sitemap_line_set() -> None:
    owner = b"User-agent: *\r\nDisallow: /private\r\nSitemap: https://www.example.com/other.xml\r\n"
    files = render_site(records(page("/a")), SITE, Limits(), robots=owner).files
    assert files["robots.txt"] == owner + b"Sitemap: https://www.example.com/sitemap.xml\r\n"


def test_a_rebuild_into_the_same_folder_removes_its_stale_files_only(tmp_path: Path) -> None:
    out = tmp_path / "site"
    big = render_site(
        records(*[page(f"/{n}") for n in range(4)]), SITE, Limits(max_urls_per_shard=1)
    )
    write_site(big.files, out)
    (out / "index.html").write_text("mine")
    small = render_site(records(page("/0")), SITE, Limits(max_urls_per_shard=1))
    removed = write_site(small.files, out)
    assert removed == [f"sitemap-pages-0000{n}.xml.gz" for n in (2, 3, 4)]
    assert sorted(p.name for p in out.iterdir()) == [
        "index.html",
        "robots.txt",
        "sitemap-pages-00001.xml.gz",
        "sitemap.xml",
    ]


# --- the command ---------------------------------------------------------------------------


def test_build_command_writes_the_site_and_lists_rejected_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(
        tmp_path / "pages.jsonl", [page("/a"), page("/b"), {"url": "https://evil.example.org/x"}]
    )
    csv_source = tmp_path / "more.csv"
    csv_source.write_text("url,priority\nhttps://www.example.com/c,0.8\n")
    out = tmp_path / "site"
    status = main(
        [
            "build",
            str(source),
            str(csv_source),
            "--site-url",
            "https://www.example.com",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert status == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("build: 4 records -> 3 pages in 1 shard(s) and 1 index file(s)")
    assert (
        f"  rejected {source}:3: url_foreign_host: url host evil.example.org is not the "
        "site's host www.example.com" in lines
    )
    summary = json.loads(lines[-1])
    assert summary["pages"] == 3
    assert summary["shards"][0]["key"] == "sitemap-pages-00001.xml.gz"
    assert urls((out / "sitemap-pages-00001.xml.gz").read_bytes()) == [
        "https://www.example.com/a",
        "https://www.example.com/b",
        "https://www.example.com/c",
    ]


def test_build_strict_exits_1_when_a_record_was_rejected(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "pages.jsonl", [page("/a"), {"url": "ftp://x"}])
    args = ["build", str(source), "--site-url", "https://www.example.com", "--out", str(tmp_path)]
    assert main(args) == 0
    assert main([*args, "--strict"]) == 1
    assert gc.isenabled()  # a build pauses the collector, not the process after it


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--site-url", "www.example.com"], "site URL must start with http"),
        (["--site-url", "https://www.example.com", "--max-urls-per-shard", "60000"], "max_urls"),
        (["--site-url", "https://www.example.com", "--lastmod", "yesterday"], "lastmod"),
        (["--site-url", "https://www.example.com", "--robots", "/nonexistent"], "cannot read"),
        (
            ["--site-url", "https://www.example.com", "--extra-sitemap", "https://x.example/a"],
            "host x.example is not the site's host",
        ),
    ],
)
def test_build_usage_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    source = write_jsonl(tmp_path / "pages.jsonl", [page("/a")])
    status = main(["build", str(source), "--out", str(tmp_path / "out"), *extra])
    error = capsys.readouterr().err
    assert status == 2
    assert error.startswith("sitemap-updater: error: ")
    assert message in error
    assert error.count("\n") == 1


def test_build_of_a_missing_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "build",
            str(tmp_path / "none.jsonl"),
            "--site-url",
            "https://www.example.com",
            "--out",
            str(tmp_path),
        ]
    )
    assert status == 2
    assert "no such file" in capsys.readouterr().err


def test_the_owners_robots_txt_already_in_out_is_kept_as_the_pipeline_keeps_the_buckets(
    tmp_path: Path,
) -> None:
    # --out is often the web root: its robots.txt is the owner's, as the bucket's is to the
    # index function (edited, never replaced), and an earlier build's Sitemap line there is
    # ours to correct.
    out = tmp_path / "site"
    out.mkdir()
    owner = b"User-agent: *\r\nDisallow: /admin/\r\n"
    (out / "robots.txt").write_bytes(owner)
    source = write_jsonl(tmp_path / "pages.jsonl", [page("/a")])
    args = ["build", str(source), "--site-url", "https://www.example.com", "--out", str(out)]
    assert main(args) == 0
    with_ours = owner + b"\r\nSitemap: https://www.example.com/sitemap.xml\r\n"
    assert (out / "robots.txt").read_bytes() == with_ours
    assert main(args) == 0  # again: nothing to change
    assert (out / "robots.txt").read_bytes() == with_ours


@pytest.mark.parametrize(
    ("name", "text"),
    [("empty.jsonl", ""), ("notes.txt", "call Bob about the shop\nnew pages Friday\n")],
)
@pytest.mark.parametrize("strict", [[], ["--strict"]])
def test_no_valid_page_writes_nothing_and_never_replaces_a_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, strict: list[str]
) -> None:
    out, empty = tmp_path / "site", tmp_path / "empty"
    source = write_jsonl(tmp_path / "pages.jsonl", [page("/a")])
    site = ["--site-url", "https://www.example.com"]
    assert main(["build", str(source), *site, "--out", str(out)]) == 0
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    capsys.readouterr()
    (tmp_path / name).write_text(text)
    for target in (out, empty):
        assert main(["build", str(tmp_path / name), *site, "--out", str(target), *strict]) == 1
        assert capsys.readouterr().out.splitlines()[-1] == (
            f"no valid page: nothing written, {target}/ left as it was"
        )
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before
    assert not empty.exists()


def test_a_sitemap_xsl_the_build_did_not_write_is_never_removed(tmp_path: Path) -> None:
    # Only the build's own stylesheet is stale when the view is off: the web root may hold
    # the owner's sitemap.xsl (for another sitemap, or their own human view).
    out = tmp_path / "site"
    out.mkdir()
    (out / "sitemap.xsl").write_text("<xsl:stylesheet/><!-- the owner's -->")
    assert write_site(render_site(records(page("/a")), SITE, Limits()).files, out) == []
    assert (out / "sitemap.xsl").read_text() == "<xsl:stylesheet/><!-- the owner's -->"


def test_extra_sitemaps_follow_our_shards_in_the_first_index_file_within_its_limit() -> None:
    pages = [page(f"/{n}") for n in range(3)]
    extras = ("https://www.example.com/shop.xml", "https://www.example.com/feed/atom")
    limits = Limits(max_urls_per_shard=1, max_sitemaps_per_index=3)
    built = render_site(records(*pages), SITE, limits, compress=False, extras=extras)
    assert urls(built.files["sitemap.xml"]) == [
        "https://www.example.com/sitemap-pages-00001.xml",
        *extras,
    ]
    # Every file keeps that room: a file's shards never move when another file fills up.
    assert built.result.index_files == ["sitemap.xml", "sitemap-index-2.xml", "sitemap-index-3.xml"]
    assert sitemap_schema().validate(etree.fromstring(built.files["sitemap.xml"]))


def test_build_extra_sitemap_flags_are_listed_in_order(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "pages.jsonl", [page("/a")])
    out = tmp_path / "out"
    extras = ["https://www.example.com/b.xml", "https://www.example.com/a.xml?x=1&y=2"]
    flags = [flag for url in extras for flag in ("--extra-sitemap", url)]
    argv = ["build", str(source), "--site-url", "https://www.example.com", "--out", str(out)]
    assert main([*argv, *flags]) == 0
    index = (out / "sitemap.xml").read_bytes()
    assert urls(index) == ["https://www.example.com/sitemap-pages-00001.xml.gz", *extras]
    assert b"a.xml?x=1&amp;y=2" in index


def test_build_format_txt_writes_text_shards_within_the_limits(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "pages.jsonl", [page(f"/{n}") for n in range(3)])
    out = tmp_path / "out"
    argv = ["build", str(source), "--site-url", "https://www.example.com", "--out", str(out)]
    assert main([*argv, "--format", "txt", "--max-urls-per-shard", "2"]) == 0
    assert (out / "sitemap-pages-00001.txt").read_text() == (
        "https://www.example.com/0\nhttps://www.example.com/1\n"
    )
    assert (out / "sitemap-pages-00002.txt").read_text() == "https://www.example.com/2\n"
    assert urls((out / "sitemap.xml").read_bytes()) == [
        "https://www.example.com/sitemap-pages-00001.txt",
        "https://www.example.com/sitemap-pages-00002.txt",
    ]
    assert main([*argv]) == 0  # back to XML: the text shards are the build's own, removed
    assert sorted(path.name for path in out.glob("sitemap-*")) == ["sitemap-pages-00001.xml.gz"]


def test_build_feed_entries_writes_the_feed_of_the_newest_pages_and_lists_it(
    tmp_path: Path,
) -> None:
    pages = [
        page("/old", lastmod="2026-01-01", title="Old"),
        page("/new", lastmod="2026-11-20T10:00:00+01:00", title="New & shiny"),
        page("/undated"),  # no time of change: a snapshot cannot place it
        page("/mid", lastmod="2026-06-01"),
    ]
    source = write_jsonl(tmp_path / "pages.jsonl", pages)
    out = tmp_path / "out"
    argv = ["build", str(source), "--site-url", "https://www.example.com", "--out", str(out)]
    assert main([*argv, "--feed-entries", "2"]) == 0
    feed = read_atom((out / "feed.atom").read_bytes())
    assert [(e.link, e.title, e.updated) for e in feed.entries] == [
        ("https://www.example.com/new", "New & shiny", "2026-11-20T09:00:00Z"),
        ("https://www.example.com/mid", "https://www.example.com/mid", "2026-06-01T00:00:00Z"),
    ]
    assert urls((out / "sitemap.xml").read_bytes())[-1] == "https://www.example.com/feed.atom"


def test_an_owners_robots_txt_over_the_limit_is_refused_only_if_it_would_grow() -> None:
    """As the index function does: our line already in it, the file is kept as it is."""
    rules = b"".join(b"Disallow: /private/%d\n" % n for n in range(40_000))
    assert len(rules) > 512_000
    ours = b"Sitemap: https://www.example.com/sitemap.xml\n"
    files = render_site(records(page("/a")), SITE, Limits(), robots=rules + ours).files
    assert files["robots.txt"] == rules + ours
    with pytest.raises(UserError, match=r"robots\.txt would be"):
        render_site(records(page("/a")), SITE, Limits(), robots=rules)
