"""``sitemap-updater rebuild``: restore lost objects byte for byte; leave intact ones alone."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from sitemap_updater.cli import main
from sitemap_updater.ops import resolve
from tests.conftest import SITE
from tests.integration.conftest import STACK, publish, site_entries
from tests.pipeline import Pipeline


@pytest.fixture
def site(deployed: Pipeline) -> Pipeline:
    deployed.send_events([publish(f"/p{n}", 1, lastmod=f"2026-11-{n + 1:02d}") for n in range(7)])
    deployed.drain()
    return deployed


@pytest.fixture
def puts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Keys of every PutObject the commands' own clients send."""
    keys: list[str] = []
    real = resolve.session_for  # restored by monkeypatch

    def counting(*args: Any) -> boto3.session.Session:
        session = real(*args)
        session.events.register(
            "provide-client-params.s3.PutObject", lambda params, **_: keys.append(params["Key"])
        )
        return session

    monkeypatch.setattr(resolve, "session_for", counting)
    return keys


def rebuild(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    status = main(["rebuild", *argv, *STACK, "--json"])
    return status, json.loads(capsys.readouterr().out.splitlines()[-1])


def heads(pipeline: Pipeline) -> dict[str, tuple[str, str, dict[str, str]]]:
    bucket = pipeline.app.settings.bucket_name
    found = {}
    for key in pipeline.objects():
        head = pipeline.s3.head_object(Bucket=bucket, Key=key)
        found[key] = (head["ContentType"], head.get("CacheControl", ""), head["Metadata"])
    return found


def test_after_the_bucket_is_emptied_rebuild_all_restores_byte_identical_objects(
    make_pipeline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from sitemap_updater.local.stack import register_stack

    pipeline = make_pipeline(MAX_URLS_PER_SHARD=3)
    register_stack(pipeline.stack)
    pipeline.send_events([publish(f"/p{n}", 1, lastmod=f"2026-11-{n + 1:02d}") for n in range(7)])
    pipeline.drain()
    before, described = pipeline.objects(), heads(pipeline)
    assert len(before) == 5  # three shards, the index, robots.txt
    bucket = pipeline.app.settings.bucket_name
    for key in before:
        pipeline.s3.delete_object(Bucket=bucket, Key=key)

    status, summary = rebuild(capsys, "--all")

    assert status == 0
    assert summary["shards"] == {f"pages-0000{n}": "restored" for n in (1, 2, 3)}
    assert summary["index_files"] == {"sitemap.xml": "restored"}
    assert (summary["robots"], summary["index_requested"]) == ("written", False)
    assert pipeline.objects() == before
    assert heads(pipeline) == described  # the same lastmod, hash, type and caching too
    pipeline.drain()  # nothing was left for the functions to do
    assert pipeline.objects() == before


def test_intact_objects_are_not_rewritten(
    site: Pipeline, capsys: pytest.CaptureFixture[str], puts: list[str]
) -> None:
    status, summary = rebuild(capsys, "--all")
    assert status == 0
    assert summary["shards"] == {"pages-00001": "unchanged"}
    assert (summary["index_files"], summary["robots"]) == (
        {"sitemap.xml": "unchanged"},
        "unchanged",
    )
    assert puts == []


def test_an_altered_shard_object_is_restored_and_only_it(
    site: Pipeline, capsys: pytest.CaptureFixture[str], puts: list[str]
) -> None:
    before = site.objects()
    bucket = site.app.settings.bucket_name
    site.s3.put_object(Bucket=bucket, Key="sitemap-pages-00001.xml.gz", Body=b"oops")
    status, summary = rebuild(capsys, "--shard", "pages-00001")
    assert (status, summary["shards"]) == (0, {"pages-00001": "restored"})
    assert puts == ["sitemap-pages-00001.xml.gz"]
    assert site.objects() == before


def test_a_registry_change_that_never_got_its_rebuild_is_written_and_the_index_follows(
    site: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    from sitemap_updater.domain.events import parse_event

    change = parse_event(publish("/late", 1), site.app.settings.site)
    site.app.apply_change(change)  # committed; its rebuild request was lost
    status, summary = rebuild(capsys, "--all")
    assert status == 0
    assert summary["shards"] == {"pages-00001": "written"}
    assert summary["index_files"] == {"sitemap.xml": "behind"}
    assert summary["index_requested"] is True
    assert f"{SITE}/late" in site_entries(site.objects())
    written = site.app.registry.shard_output("pages-00001").obj
    assert written is not None
    assert f"<lastmod>{written.lastmod}</lastmod>" not in site.objects()["sitemap.xml"].decode()
    site.drain()  # the index function publishes the shard's new lastmod
    assert f"<lastmod>{written.lastmod}</lastmod>" in site.objects()["sitemap.xml"].decode()


def test_an_unknown_shard_or_a_bad_id_is_a_usage_error_and_nothing_is_rebuilt(
    site: Pipeline, capsys: pytest.CaptureFixture[str], puts: list[str]
) -> None:
    assert main(["rebuild", "--shard", "pages-00001", "--shard", "pages-00042", *STACK]) == 2
    assert capsys.readouterr().err == (
        "sitemap-updater: error: --shard pages-00042: the registry has no such shard (it has "
        "1: pages-00001; `status` lists them)\n"
    )
    assert puts == []
    assert main(["rebuild", "--shard", "nope", *STACK]) == 2
    assert "a shard id is like pages-00001" in capsys.readouterr().err


def test_after_compress_shards_is_switched_rebuild_all_moves_every_shard_to_its_new_key(
    make_pipeline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's procedure for switching COMPRESS_SHARDS: deploy, then ``rebuild --all``.
    The index then names the new keys only; the objects under the old keys stay (served,
    named by no index) until the operator deletes them."""
    from dataclasses import replace

    from sitemap_updater.bootstrap import build_app
    from sitemap_updater.local.stack import register_stack
    from tests.integration.conftest import index_locs

    compressed = make_pipeline(MAX_URLS_PER_SHARD=2)
    compressed.send_events([publish(f"/p{n}", 1) for n in range(3)])
    compressed.drain()
    old_keys = {"sitemap-pages-00001.xml.gz", "sitemap-pages-00002.xml.gz"}
    assert old_keys <= set(compressed.objects())
    # The deploy: the functions and the stack's outputs now say COMPRESS_SHARDS=false.
    settings = compressed.stack.settings.model_copy(update={"compress_shards": False})
    stack = replace(compressed.stack, settings=settings)
    register_stack(stack, name="switched")
    plain = Pipeline(stack, build_app(settings))

    status = main(["rebuild", "--all", "--stack", "switched", "--json"])
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    plain.drain()

    assert status == 0
    assert summary["shards"] == {"pages-00001": "written", "pages-00002": "written"}
    objects = plain.objects()
    named = index_locs(objects["sitemap.xml"])
    assert named == [f"{SITE}/sitemap-pages-00001.xml", f"{SITE}/sitemap-pages-00002.xml"]
    for loc in named:
        assert objects[loc.removeprefix(f"{SITE}/")].startswith(b"<?xml")
    assert set(site_entries(objects)) == {f"{SITE}/p{n}" for n in range(3)}
    assert old_keys <= set(objects)  # left for the operator, as the README says
