"""``build`` writes what the pipeline serves: the same pages give the same shard bytes."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sitemap_updater.domain.sharding import Limits
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.build import render_site
from sitemap_updater.ops.pages import Record
from tests.conftest import SITE
from tests.integration.conftest import PipelineFactory, publish

PAGES: list[dict[str, Any]] = [
    {"url": f"{SITE}/caf\u00e9/{n}?q=a&b={n}", "lastmod": f"2026-11-{n + 1:02d}T10:00:00+01:00"}
    for n in range(4)
] + [
    {"url": f"{SITE}/plain-{n}", "changefreq": "weekly", "priority": 0.25 * (n % 5)}
    for n in range(4)
]


@pytest.mark.parametrize("sitemap_format", ["xml", "txt"])
def test_build_and_the_pipeline_write_identical_shards_and_robots_txt(
    make_pipeline: PipelineFactory, sitemap_format: str
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=3, SITEMAP_FORMAT=sitemap_format)
    for page in PAGES:  # one at a time: the pipeline places them in this order too
        pipeline.send_events([publish(page["url"].removeprefix(SITE), 1, **_fields(page))])
        pipeline.drain()
    served = pipeline.objects()

    built = render_site(
        [Record(str(n), page) for n, page in enumerate(PAGES)],
        Site.parse(SITE),
        Limits(max_urls_per_shard=3),
        text=sitemap_format == "txt",
    ).files

    assert set(built) == set(served)
    for key in built:
        if key != "sitemap.xml":
            assert built[key] == served[key], key
    # The index differs only in its lastmods (the pipeline's: when each shard was written).
    assert _without_lastmod(built["sitemap.xml"]) == _without_lastmod(served["sitemap.xml"])


def _without_lastmod(index: bytes) -> bytes:
    return re.sub(rb"<lastmod>[^<]*</lastmod>", b"", index)


def _fields(page: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in page.items() if name != "url"}
