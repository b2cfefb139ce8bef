"""The human view through the pipeline: with STYLESHEET on, the index function serves
/sitemap.xsl (before any document references it, and again only when its bytes change), and
every index file and shard references it; off, nothing changes."""

from __future__ import annotations

from sitemap_updater.bootstrap import build_app
from sitemap_updater.domain.stylesheet import STYLESHEET_KEY, stylesheet_bytes
from tests.integration.conftest import PipelineFactory, Recorder, document, publish, unpublish
from tests.pipeline import Pipeline

PI = b'<?xml-stylesheet type="text/xsl" href="/sitemap.xsl"?>\n'


def viewed(pipeline: Pipeline) -> dict[str, bool]:
    """Each XML object: whether it references the stylesheet right after its declaration."""
    return {
        key: document(body).split(b"\n", 2)[1] + b"\n" == PI
        for key, body in pipeline.objects().items()
        if key.endswith((".xml", ".xml.gz"))
    }


def test_the_stylesheet_is_served_before_any_document_references_it(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(STYLESHEET="true", MAX_URLS_PER_SHARD=2)
    recorder = Recorder(pipeline)
    pipeline.send_events([publish(f"/{n}", 1) for n in range(5)])
    pipeline.drain()

    objects = pipeline.objects()
    assert objects[STYLESHEET_KEY] == stylesheet_bytes()
    head = pipeline.s3.head_object(Bucket=pipeline.app.settings.bucket_name, Key=STYLESHEET_KEY)
    assert head["ContentType"] == "text/xsl; charset=utf-8"
    assert head["CacheControl"] == "public, max-age=60"
    assert viewed(pipeline) == {
        "sitemap.xml": True,
        "sitemap-pages-00001.xml.gz": True,
        "sitemap-pages-00002.xml.gz": True,
        "sitemap-pages-00003.xml.gz": True,
    }
    assert recorder.puts.count(STYLESHEET_KEY) == 1
    assert recorder.puts.index(STYLESHEET_KEY) < recorder.puts.index("sitemap.xml")
    assert recorder.violations == []  # every document schema-valid when written


def test_the_stylesheet_is_written_again_only_when_it_is_missing_or_differs(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(STYLESHEET="true")
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    recorder = Recorder(pipeline)
    runs = pipeline.mappings["index"].invocations

    pipeline.send_events([publish("/b", 1), unpublish("/a", 2)])
    pipeline.drain()
    assert pipeline.mappings["index"].invocations > runs  # the index was published again...
    touched = [p.get("Key") for op, p in recorder.calls if op in ("HeadObject", "PutObject")]
    assert STYLESHEET_KEY not in touched  # ...and the stylesheet, checked once, left alone

    # A new execution environment checks once (HEAD), and leaves the right bytes alone.
    bucket = pipeline.app.settings.bucket_name
    fresh = build_app(pipeline.app.settings, clock=pipeline.app.clock)
    assert fresh.site_files is not None
    assert fresh.site_files() == []
    # Altered or missing: the operators' restore (and the next cold start) writes it again.
    pipeline.s3.put_object(Bucket=bucket, Key=STYLESHEET_KEY, Body=b"<broken/>")
    assert fresh.site_files() == []  # this environment checked it already
    fresh.publish_index.restore()
    assert pipeline.objects()[STYLESHEET_KEY] == stylesheet_bytes()
    pipeline.s3.delete_object(Bucket=bucket, Key=STYLESHEET_KEY)
    assert build_app(pipeline.app.settings).site_files() == [STYLESHEET_KEY]  # type: ignore[misc]
    assert pipeline.objects()[STYLESHEET_KEY] == stylesheet_bytes()


def test_off_by_default(pipeline: Pipeline, recorder: Recorder) -> None:
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    assert STYLESHEET_KEY not in pipeline.objects()
    assert set(viewed(pipeline).values()) == {False}
    assert pipeline.app.site_files is None


def test_turning_it_on_later_views_each_shard_as_it_is_rebuilt(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)
    pipeline.send_events([publish("/a", 1), publish("/b", 1)])
    pipeline.drain()
    settings = pipeline.app.settings.model_copy(update={"stylesheet": True})
    pipeline = Pipeline(pipeline.stack, build_app(settings, clock=pipeline.app.clock))
    pipeline.send_events([publish("/a", 2)])  # only a's shard changes
    pipeline.drain()
    assert viewed(pipeline) == {
        "sitemap.xml": True,
        "sitemap-pages-00001.xml.gz": True,
        "sitemap-pages-00002.xml.gz": False,
    }
    pipeline.app.rebuild_shard("pages-00002")  # what `sitemap-updater rebuild --all` does
    assert set(viewed(pipeline).values()) == {True}
