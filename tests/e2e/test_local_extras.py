"""``sitemap-updater local`` with the human view and IndexNow on (``--setting``): the real
console script over events/, IndexNow submitting to an endpoint on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sitemap_updater.domain.stylesheet import stylesheet_bytes
from tests.e2e.test_local_cli import EVENTS, SITE, bodies_in, entries, newest_publishes, run, xml_of
from tests.indexnow_endpoint import RecordingEndpoint

KEY = "e2e-0123456789-key"
PI = b'<?xml-stylesheet type="text/xsl" href="/sitemap.xsl"?>'


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RecordingEndpoint]:
    recording = RecordingEndpoint()
    yield recording
    recording.stop()


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory, endpoint: RecordingEndpoint) -> Path:
    site = tmp_path_factory.mktemp("extras") / "site"
    result = run(
        "local", "events/", "--site-url", SITE, "--out", site,
        "--setting", "STYLESHEET=true",
        "--setting", f"INDEXNOW_KEY={KEY}",
        "--setting", f"INDEXNOW_ENDPOINT={endpoint.url}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return site


def test_the_site_serves_the_stylesheet_and_the_key_file(out: Path) -> None:
    assert (out / "sitemap.xsl").read_bytes() == stylesheet_bytes()
    assert (out / f"{KEY}.txt").read_text(encoding="utf-8") == KEY
    for name in ("sitemap.xml", "sitemap-pages-00001.xml.gz"):
        assert xml_of((out / name).read_bytes()).splitlines()[1] == PI


def test_indexnow_hears_of_every_applied_change_and_nothing_else(
    out: Path, endpoint: RecordingEndpoint
) -> None:
    submitted = set(endpoint.submitted())
    listed = set(entries(out, SITE))
    assert listed == set(newest_publishes(bodies_in(EVENTS), SITE))
    assert listed <= submitted  # every page in the sitemaps
    assert f"{SITE}/old-page" in submitted  # events/04-unpublish.json: crawlers see its 404
    assert all(url.startswith(f"{SITE}/") for url in submitted)  # never evil.example.net
    assert "https://www.example.com/late-and-stale" not in submitted  # rejected: bad version
    for request in endpoint.requests:
        assert request.body["key"] == KEY
        assert request.body["keyLocation"] == f"{SITE}/{KEY}.txt"
        assert 1 <= len(request.urls) <= 10_000


def test_a_setting_the_local_stack_owns_is_a_usage_error(tmp_path: Path) -> None:
    result = run(
        "local", "events/", "--site-url", SITE, "--out", tmp_path / "site",
        "--setting", "TABLE_NAME=mine",
    )  # fmt: skip
    assert result.returncode == 2
    assert "--setting TABLE_NAME: the local stack sets it" in result.stderr
