from __future__ import annotations

from tests.integration.conftest import Recorder, publish, site_entries, unpublish
from tests.pipeline import Pipeline


def test_publish_then_unpublish_round_trip(pipeline: Pipeline, recorder: Recorder) -> None:
    pipeline.send_events([publish("/a", 1, lastmod="2026-11-20"), publish("/b", 1)])
    pipeline.drain()
    objects = pipeline.objects()
    assert set(site_entries(objects)) == {"https://www.example.com/a", "https://www.example.com/b"}
    assert b"Sitemap: https://www.example.com/sitemap.xml" in objects["robots.txt"]
    pipeline.send_events([unpublish("/a", 2)])
    pipeline.drain()
    assert set(site_entries(pipeline.objects())) == {"https://www.example.com/b"}


def test_the_local_queues_take_what_the_deployed_ones_take(pipeline: Pipeline) -> None:
    """Message size and retention as infra/sitemap_infra/queues.py sets them."""
    from sitemap_updater.resources import (
        DLQ_RETENTION_DAYS,
        MAX_MESSAGE_BYTES,
        QUEUE_RETENTION_DAYS,
    )

    for queue in pipeline.stack.queues.values():
        for url, days in ((queue.url, QUEUE_RETENTION_DAYS), (queue.dlq_url, DLQ_RETENTION_DAYS)):
            attributes = pipeline.sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=["MaximumMessageSize", "MessageRetentionPeriod"]
            )["Attributes"]
            assert attributes == {
                "MaximumMessageSize": str(MAX_MESSAGE_BYTES),
                "MessageRetentionPeriod": str(days * 86_400),
            }
