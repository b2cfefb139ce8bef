"""SITEMAP_FORMAT=txt on the local runtime: text shards of one URL per line, listed in the
index, within the limits; switching formats is a deploy and ``rebuild --all``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from sitemap_updater.bootstrap import build_app
from sitemap_updater.cli import main
from sitemap_updater.local.stack import register_stack
from sitemap_updater.settings import Settings
from tests.conftest import SITE
from tests.integration.conftest import index_locs, publish, site_entries
from tests.pipeline import Pipeline


def test_text_shards_list_one_url_per_line_and_the_index_names_them(
    make_pipeline: Any,
) -> None:
    pipeline = make_pipeline(SITEMAP_FORMAT="txt", MAX_URLS_PER_SHARD=2)
    image = {"images": [{"loc": "https://cdn.example.net/a.jpg"}]}
    pipeline.send_events(
        [
            publish("/b?x=1&y=2", 1, lastmod="2026-11-01"),
            publish("/caf\u00e9", 1, **image),  # its image is not carried by a text file
            publish("/a", 1),
        ]
    )
    pipeline.drain()
    objects = pipeline.objects()
    assert index_locs(objects["sitemap.xml"]) == [
        f"{SITE}/sitemap-pages-00001.txt",
        f"{SITE}/sitemap-pages-00002.txt",
    ]
    assert objects["sitemap-pages-00001.txt"] == (f"{SITE}/b?x=1&y=2\n{SITE}/caf%C3%A9\n".encode())
    assert objects["sitemap-pages-00002.txt"] == f"{SITE}/a\n".encode()
    stored = pipeline.app.store.client.head_object(
        Bucket=pipeline.stack.settings.bucket_name, Key="sitemap-pages-00002.txt"
    )
    assert stored["ContentType"] == "text/plain; charset=utf-8"


def test_switching_formats_is_a_deploy_and_rebuild_all(
    make_pipeline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    xml = make_pipeline()
    xml.send_events([publish("/a", 1, lastmod="2026-11-01"), publish("/b", 1)])
    xml.drain()
    values = xml.stack.settings.model_dump() | {"sitemap_format": "txt"}
    settings = Settings.model_validate(values)
    stack = replace(xml.stack, settings=settings)
    register_stack(stack, name="text")
    text = Pipeline(stack, build_app(settings))

    assert main(["rebuild", "--all", "--stack", "text"]) == 0
    capsys.readouterr()
    text.drain()
    objects = text.objects()
    assert index_locs(objects["sitemap.xml"]) == [f"{SITE}/sitemap-pages-00001.txt"]
    assert objects["sitemap-pages-00001.txt"] == f"{SITE}/a\n{SITE}/b\n".encode()

    # And back: the registry kept every field, so the XML shard is as it was.
    xml_again = Pipeline(replace(xml.stack), build_app(xml.stack.settings))
    register_stack(xml.stack, name="xml-again")
    assert main(["rebuild", "--all", "--stack", "xml-again"]) == 0
    xml_again.drain()
    assert site_entries(xml_again.objects())[f"{SITE}/a"]["lastmod"] == "2026-11-01"
