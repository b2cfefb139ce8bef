"""EXTRA_SITEMAPS on the local runtime: the index lists them after our shards, in order, and a
change of the setting reaches the index on its next refresh and with ``rebuild --all``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.bootstrap import build_app
from sitemap_updater.cli import main
from sitemap_updater.local.stack import register_stack
from sitemap_updater.settings import Settings
from tests.conftest import SITE, FakeClock
from tests.integration.conftest import Recorder, index_locs, publish
from tests.pipeline import Pipeline

SHOP, VIDEOS = f"{SITE}/shop/sitemap.xml", f"{SITE}/videos/sitemap-index.xml"


def deployed_with(pipeline: Pipeline, extras: str, name: str) -> Pipeline:
    """The same resources, deployed again with EXTRA_SITEMAPS=``extras``."""
    from dataclasses import replace

    values = pipeline.stack.settings.model_dump() | {"extra_sitemaps": extras}
    settings = Settings.model_validate(values)
    stack = replace(pipeline.stack, settings=settings)
    register_stack(stack, name=name)
    return Pipeline(stack, build_app(settings))


def test_the_index_lists_the_extra_sitemaps_after_ours_in_the_given_order(
    make_pipeline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = make_pipeline(EXTRA_SITEMAPS=f"{VIDEOS},{SHOP}", MAX_URLS_PER_SHARD=1)
    recorder = Recorder(pipeline)  # every index written validates and names no missing object
    pipeline.send_events([publish("/a", 1), publish("/b", 1)])
    pipeline.drain()
    assert index_locs(pipeline.objects()["sitemap.xml"]) == [
        f"{SITE}/sitemap-pages-00001.xml.gz",
        f"{SITE}/sitemap-pages-00002.xml.gz",
        VIDEOS,
        SHOP,
    ]
    assert recorder.violations == []

    # Deployed again with one extra sitemap: the next refresh (the index function's schedule)
    # lists exactly it.
    changed = deployed_with(pipeline, SHOP, "changed")
    changed.app.publish_index()
    assert index_locs(changed.objects()["sitemap.xml"])[2:] == [SHOP]

    # And with none, through `rebuild --all`, which asks the index function to publish.
    cleared = deployed_with(pipeline, "", "cleared")
    assert main(["rebuild", "--all", "--stack", "cleared", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["index_requested"]
    cleared.drain()
    assert index_locs(cleared.objects()["sitemap.xml"]) == [
        f"{SITE}/sitemap-pages-00001.xml.gz",
        f"{SITE}/sitemap-pages-00002.xml.gz",
    ]


def test_a_shard_change_patches_the_index_around_the_extras_until_they_change(
    make_pipeline: Any, clock: FakeClock
) -> None:
    pipeline = make_pipeline(EXTRA_SITEMAPS=f"{VIDEOS},{SHOP}", MAX_URLS_PER_SHARD=1)
    pipeline.send_events([publish("/a", 1), publish("/b", 1)])
    pipeline.drain()
    clock.advance(60)  # a new lastmod for the shard the next change rewrites
    before = pipeline.objects()["sitemap.xml"]
    pipeline.send_events([publish("/a", 2, changefreq="daily")])
    pipeline.drain()
    patched = pipeline.objects()["sitemap.xml"]
    assert patched != before
    assert index_locs(patched)[2:] == [VIDEOS, SHOP]
    # The patched file is the one a full publish renders: it finds nothing to write.
    recorded = pipeline.app.registry.index_outputs()
    pipeline.app.publish_index()
    assert pipeline.app.registry.index_outputs() == recorded

    # Deployed again with other extras: the next shard change publishes in full, so the
    # index lists exactly the new ones.
    changed = deployed_with(pipeline, SHOP, "changed")
    changed.send_events([publish("/b", 2, changefreq="daily")])
    changed.drain()
    assert index_locs(changed.objects()["sitemap.xml"])[2:] == [SHOP]
