"""``sitemap-updater backfill``: an existing site into the registry, exactly as events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sitemap_updater.adapters.queues import Queues
from sitemap_updater.cli import main
from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.domain.feed import FEED_KEY
from sitemap_updater.local.stack import register_stack
from sitemap_updater.ops import backfill
from sitemap_updater.ops.pages import Record
from tests.atom import read_atom
from tests.conftest import SITE
from tests.httpsite import StaticSite, gz, sitemapindex, urlset
from tests.integration.conftest import STACK, publish, site_entries
from tests.pipeline import Pipeline


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], dict[str, Any]]:
    # One writer: moto's in-process DynamoDB is not thread-safe (tests/unit/test_backfill.py
    # runs several writers against an in-memory registry).
    status = main(["backfill", *argv, *STACK, "--json", "--workers", "1"])
    out = capsys.readouterr().out.splitlines()
    return status, out, json.loads(out[-1])


def pages_file(tmp_path: Path, pages: list[dict[str, Any]]) -> Path:
    path = tmp_path / "pages.jsonl"
    path.write_text("".join(json.dumps(page) + "\n" for page in pages))
    return path


def test_a_pages_file_is_applied_rebuilt_and_a_rerun_changes_nothing(
    deployed: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = pages_file(
        tmp_path,
        [
            {"url": f"{SITE}/a", "lastmod": "2026-11-01"},
            {"url": f"{SITE}/b", "priority": 0.3},
            {"url": "https://elsewhere.example.org/c"},
        ],
    )
    status, out, summary = run(capsys, str(source))
    assert status == 0
    assert (summary["applied"], summary["duplicate"], summary["stale"]) == (2, 0, 0)
    assert summary["rejected"] == [
        {
            "origin": f"{source}:3",
            "reason": "url_foreign_host: url host elsewhere.example.org is not the site's host "
            "www.example.com",
        }
    ]
    assert f"rejected {source}:3: url_foreign_host" in out[0]
    assert summary["shards"] == ["pages-00001"]
    assert summary["rebuilds_requested"] == 1
    deployed.drain()
    assert site_entries(deployed.objects()) == {
        f"{SITE}/a": {"lastmod": "2026-11-01", "changefreq": None, "priority": None},
        f"{SITE}/b": {"lastmod": None, "changefreq": None, "priority": "0.3"},
    }
    before = deployed.objects()

    status, _out, again = run(capsys, str(source))
    assert status == 0
    assert (again["applied"], again["duplicate"]) == (0, 2)
    deployed.drain()
    assert deployed.objects() == before


def test_the_cms_wins_over_backfilled_pages_in_both_orders(
    deployed: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed.send_events([publish("/cms", 5, lastmod="2026-11-20")])
    deployed.drain()
    source = pages_file(
        tmp_path, [{"url": f"{SITE}/cms", "lastmod": "2020-01-01"}, {"url": f"{SITE}/old"}]
    )
    _status, _out, summary = run(capsys, str(source))
    assert (summary["applied"], summary["stale"]) == (1, 1)
    deployed.send_events([publish("/old", 1, lastmod="2026-11-21")])
    deployed.drain()
    entries = site_entries(deployed.objects())
    assert entries[f"{SITE}/cms"]["lastmod"] == "2026-11-20"
    assert entries[f"{SITE}/old"]["lastmod"] == "2026-11-21"


def test_a_live_sitemap_tree_is_followed_from_robots_txt(
    deployed: Pipeline, http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    http_site.put("/robots.txt", "User-agent: *\nDisallow:\nSitemap: /sitemap_index.xml\n")
    http_site.put(
        "/sitemap_index.xml",
        sitemapindex(
            f"<loc>{http_site.url('/posts.xml.gz')}</loc>",
            f"<loc>{http_site.url('/pages.xml')}</loc><lastmod>2026-01-01</lastmod>",
            f"<loc>{http_site.url('/gone.xml')}</loc>",
        ),
    )
    http_site.put(
        "/posts.xml.gz",
        gz(
            urlset(
                f"<loc> {SITE}/posts/1 </loc><lastmod>2026-11-01T10:00:00+01:00</lastmod>",
                f"<loc>{SITE}/posts/2</loc><changefreq>weekly</changefreq><priority>0.7</priority>",
            )
        ),
    )
    http_site.put(
        "/pages.xml",
        urlset(
            f"<loc>{SITE}/about</loc><lastmod></lastmod>",
            f"<loc>{SITE}/bad</loc><lastmod>last tuesday</lastmod>",
            f"<loc>{SITE}/posts/1</loc>",
        ),
    )
    status, out, summary = run(capsys, http_site.url("/robots.txt"))
    assert status == 1  # one sitemap could not be read
    assert summary["source_faults"] == [
        {
            "origin": http_site.url("/gone.xml"),
            "reason": f"HTTP 404 (named at {http_site.url('/sitemap_index.xml')}:5)",
        }
    ]
    assert [r["origin"] for r in summary["rejected"]] == [f"{http_site.url('/pages.xml')}:4"]
    assert summary["rejected"][0]["reason"].startswith("invalid_lastmod")
    assert (summary["read"], summary["applied"], summary["duplicate"]) == (5, 3, 1)
    deployed.drain()
    assert site_entries(deployed.objects()) == {
        f"{SITE}/posts/1": {
            "lastmod": "2026-11-01T09:00:00Z",
            "changefreq": None,
            "priority": None,
        },
        f"{SITE}/posts/2": {"lastmod": None, "changefreq": "weekly", "priority": "0.7"},
        f"{SITE}/about": {"lastmod": None, "changefreq": None, "priority": None},
    }
    assert any(line.startswith("source fault ") for line in out)


def test_a_local_sitemap_file_is_a_source(
    deployed: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "sitemap.xml.gz"
    source.write_bytes(gz(urlset(f"<loc>{SITE}/x</loc>", f"<loc>{SITE}/y</loc>")))
    status, _out, summary = run(capsys, str(source))
    assert (status, summary["applied"]) == (0, 2)
    deployed.drain()
    assert set(site_entries(deployed.objects())) == {f"{SITE}/x", f"{SITE}/y"}


def test_pages_are_placed_by_the_deployments_limits(
    make_pipeline: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = make_pipeline(MAX_SHARD_BYTES=4096)  # two 2,000-character URLs do not fit
    register_stack(pipeline.stack)
    source = pages_file(tmp_path, [{"url": f"{SITE}/{letter * 2000}"} for letter in "xyz"])
    _status, _out, summary = run(capsys, str(source))
    assert summary["applied"] == 3
    assert summary["shards"] == ["pages-00001", "pages-00002", "pages-00003"]


def test_dry_run_validates_and_writes_nothing(
    deployed: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = {"type": "unpublish", "url": f"{SITE}/c"}  # valid, as the real run applies it
    pages = [{"url": f"{SITE}/a"}, {"url": f"{SITE}/b", "priority": 7}, gone]
    source = pages_file(tmp_path, pages)
    status, out, summary = run(capsys, str(source), "--dry-run")
    assert status == 0
    assert (summary["valid"], len(summary["rejected"]), summary["applied"]) == (2, 1, 0)
    assert summary["read"] == summary["valid"] + len(summary["rejected"])
    assert "nothing written" in out[-2]
    deployed.drain()
    assert "sitemap.xml" not in deployed.objects()


def test_an_interrupted_backfill_requests_its_rebuilds_and_a_rerun_resumes(
    deployed: Pipeline,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pages = [{"url": f"{SITE}/p{n}"} for n in range(30)]
    source = pages_file(tmp_path, pages)
    real = backfill.source_records

    def interrupted(*args: Any, **kwargs: Any) -> Iterator[Record]:
        for number, record in enumerate(real(*args, **kwargs)):
            if number == 12:
                raise KeyboardInterrupt
            yield record

    monkeypatch.setattr(backfill, "source_records", interrupted)
    status, out, summary = run(capsys, str(source))
    assert status == 130
    assert summary["interrupted"] is True
    first = summary["applied"]  # those already running finish; those waiting are dropped
    assert 1 <= first <= 12
    assert summary["rebuilds_requested"] == 1
    assert "run the same command again to resume" in out[-2]
    assert (summary["read"], first + summary["not_applied"]) == (12, 12)
    deployed.drain()
    assert len(site_entries(deployed.objects())) == first

    monkeypatch.setattr(backfill, "source_records", real)
    status, _out, summary = run(capsys, str(source))
    assert (status, summary["applied"], summary["duplicate"]) == (0, 30 - first, first)
    deployed.drain()
    assert len(site_entries(deployed.objects())) == 30


def test_ctrl_c_while_a_write_is_awaited_counts_it_as_applied(
    deployed: Pipeline,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = pages_file(tmp_path, [{"url": f"{SITE}/p{n}"} for n in range(10)])
    real = backfill.wait

    def interrupted(futures: Any) -> Any:
        real(futures)  # the write is done when Ctrl-C comes
        raise KeyboardInterrupt

    monkeypatch.setattr(backfill, "wait", interrupted)
    status, out, summary = run(capsys, str(source))
    assert status == 130
    written = summary["applied"]
    assert written >= 1
    assert summary["read"] == written + summary["not_applied"]
    assert f"{summary['read']} page(s) read: {written} applied" in out[-4]
    assert out[-4].endswith(f", {summary['not_applied']} not applied (interrupted)")
    deployed.drain()
    assert len(site_entries(deployed.objects())) == written


@pytest.mark.parametrize(
    "error",
    [
        RetryableError("could not send 1 message(s): m0: InternalError"),
        ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "SendMessageBatch"),
    ],
)
def test_rebuild_requests_that_fail_are_reported_with_the_summary_and_a_rerun_sends_them(
    deployed: Pipeline,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
) -> None:
    """The pages are in the registry; only their rebuild requests did not go out."""
    source = pages_file(tmp_path, [{"url": f"{SITE}/a"}, {"url": f"{SITE}/b"}])

    def refused(self: Queues, requests: Any) -> None:
        raise error

    original = Queues.request_rebuilds
    monkeypatch.setattr(Queues, "request_rebuilds", refused)
    status, out, summary = run(capsys, str(source))

    assert status == 1
    assert (summary["applied"], summary["rebuilds_requested"]) == (2, 0)
    (failure,) = summary["failed"]
    assert failure["origin"] == "rebuild requests"
    assert "pages-00001" in failure["reason"]
    assert "run the same command again to resume" in out[-2]
    monkeypatch.setattr(Queues, "request_rebuilds", original)
    status, _out, summary = run(capsys, str(source))
    assert (status, summary["duplicate"], summary["rebuilds_requested"]) == (0, 2, 1)
    deployed.drain()
    assert len(site_entries(deployed.objects())) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope.jsonl"], "no such file, and not an http(s) URL"),
        (["x.jsonl", "--version", "-1"], "--version must be a number >= 0"),
        (["x.jsonl", "--workers", "0"], "--workers must be at least 1"),
    ],
)
def test_backfill_usage_errors_exit_2(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["backfill", *argv, *STACK]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("version", ["1e200", "1" + "0" * 40 + ".5"])
@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_a_version_dynamodb_cannot_store_is_a_usage_error_dry_run_or_not(
    deployed: Pipeline,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    version: str,
    dry_run: list[str],
) -> None:
    """The ingest function refuses such a version (invalid_version); as the default for
    records without one it passed the dry run and every write would have failed."""
    source = pages_file(tmp_path, [{"url": f"{SITE}/a"}, {"url": f"{SITE}/b", "version": 3}])

    status = main(["backfill", str(source), *STACK, "--version", version, *dry_run])

    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--version must be a number >= 0 that DynamoDB can store" in err
    deployed.drain()
    assert "sitemap.xml" not in deployed.objects()


@pytest.mark.parametrize("timeout", ["0", "-5"])
def test_a_timeout_that_is_not_positive_is_a_usage_error(
    deployed: Pipeline, http_site: StaticSite, capsys: pytest.CaptureFixture[str], timeout: str
) -> None:
    http_site.put("/sitemap.xml", urlset(f"<loc>{SITE}/a</loc>"))
    assert main(["backfill", http_site.url("/sitemap.xml"), *STACK, "--timeout", timeout]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--timeout must be a number of seconds > 0" in err
    assert http_site.requests == []


def test_a_live_walk_stays_on_its_origin(
    deployed: Pipeline, http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    other = StaticSite()
    try:
        other.put("/theirs.xml", urlset(f"<loc>{SITE}/theirs</loc>"))
        other.put("/moved.xml", urlset(f"<loc>{SITE}/moved</loc>"))
        http_site.put(
            "/sitemap_index.xml",
            sitemapindex(
                f"<loc>{http_site.url('/ours.xml')}</loc>",
                f"<loc>{other.url('/theirs.xml')}</loc>",
                f"<loc>{http_site.url('/moved.xml')}</loc>",
            ),
        )
        http_site.put("/ours.xml", urlset(f"<loc>{SITE}/ours</loc>"))
        http_site.redirect("/moved.xml", other.url("/moved.xml"))
        status, out, summary = run(capsys, http_site.url("/sitemap_index.xml"))
        asked_elsewhere = list(other.requests)
    finally:
        other.stop()
    assert status == 1
    index = http_site.url("/sitemap_index.xml")
    assert summary["source_faults"] == [
        {
            "origin": other.url("/theirs.xml"),
            "reason": "on another origin than the index naming it; not followed "
            f"(named at {index}:4)",
        },
        {
            "origin": http_site.url("/moved.xml"),
            "reason": f"redirected to {other.url('/moved.xml')}, on another origin; not "
            f"followed (named at {index}:5)",
        },
    ]
    assert asked_elsewhere == []  # neither the entry nor the redirect was followed
    assert summary["applied"] == 1
    deployed.drain()
    assert set(site_entries(deployed.objects())) == {f"{SITE}/ours"}
    assert any(line.startswith("source fault ") for line in out)


def test_a_refused_rebuild_request_names_ten_shards_and_counts_the_rest() -> None:
    def refused(*_: Any) -> None:
        raise RetryableError("SQS throttled the request")

    app = SimpleNamespace(queues=SimpleNamespace(request_rebuilds=refused))
    result = backfill.BackfillResult(shards={f"pages-{n:05}" for n in range(1, 13)})
    backfill.request_rebuilds(app, result)  # type: ignore[arg-type]
    (failure,) = result.failed
    assert "pages-00010" in failure.reason
    assert "pages-00011" not in failure.reason
    assert "and 2 more" in failure.reason
    assert "SQS throttled the request" in failure.reason


def test_text_sitemaps_and_feeds_are_sources_too(
    deployed: Pipeline, http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    http_site.put("/robots.txt", "Sitemap: /pages.txt\nSitemap: /feed.atom\n")
    http_site.put("/pages.txt", f"{SITE}/a\n{SITE}/b\n")
    http_site.put(
        "/feed.atom",
        f'<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="{SITE}/c"/>'
        "<updated>2026-11-21T12:00:00Z</updated></entry></feed>",
    )
    status, _out, summary = run(capsys, http_site.url("/robots.txt"))
    assert (status, summary["applied"]) == (0, 3)
    deployed.drain()
    entries = site_entries(deployed.objects())
    assert set(entries) == {f"{SITE}/a", f"{SITE}/b", f"{SITE}/c"}
    assert entries[f"{SITE}/c"]["lastmod"] == "2026-11-21T12:00:00Z"


def test_a_backfill_keeps_the_group_rules_and_the_feed(
    make_pipeline: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pages land in the groups GROUP_RULES names, as events do; the feed gets the newest
    published pages and loses the unpublished ones, as from the ingest function."""
    pipeline = make_pipeline(FEED_ENTRIES=2, GROUP_RULES="/blog/=blog")
    register_stack(pipeline.stack)
    pipeline.send_events([publish("/gone", 1, lastmod="2026-11-20")])
    pipeline.drain()
    source = pages_file(
        tmp_path,
        [
            {"url": f"{SITE}/blog/a", "lastmod": "2026-11-01"},
            {"url": f"{SITE}/b", "lastmod": "2026-11-03"},
            {"url": f"{SITE}/c", "lastmod": "2026-11-02"},
            {"type": "unpublish", "url": f"{SITE}/gone", "version": 2},
        ],
    )
    status, _out, summary = run(capsys, str(source))
    assert status == 0
    assert summary["shards"] == ["blog-00001", "pages-00001"]
    pipeline.drain()
    feed = read_atom(pipeline.objects()[FEED_KEY])
    assert [e.link for e in feed.entries] == [f"{SITE}/b", f"{SITE}/c"]
