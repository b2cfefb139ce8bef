"""Optional CloudFront invalidation: exactly the changed paths, and never in the way."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from sitemap_updater.adapters.cdn import Cdn
from sitemap_updater.observability import Metric, metrics
from tests.conftest import FakeClock
from tests.integration.conftest import PipelineFactory, publish, unpublish


def _distribution() -> str:
    client = boto3.client("cloudfront")
    response = client.create_distribution(
        DistributionConfig={
            "CallerReference": "test",
            "Comment": "",
            "Enabled": True,
            "Origins": {
                "Quantity": 1,
                "Items": [
                    {
                        "Id": "bucket",
                        "DomainName": "bucket.s3.amazonaws.com",
                        "S3OriginConfig": {"OriginAccessIdentity": ""},
                    }
                ],
            },
            "DefaultCacheBehavior": {
                "TargetOriginId": "bucket",
                "ViewerProtocolPolicy": "redirect-to-https",
                "CachePolicyId": "658327ea-f89d-4fab-a63d-7e88639e58f6",
            },
        }
    )
    return response["Distribution"]["Id"]


def _invalidated(distribution_id: str) -> list[list[str]]:
    client = boto3.client("cloudfront")
    summaries = client.list_invalidations(DistributionId=distribution_id)["InvalidationList"]
    batches = []
    for summary in summaries.get("Items", []):
        found = client.get_invalidation(DistributionId=distribution_id, Id=summary["Id"])
        batches.append(found["Invalidation"]["InvalidationBatch"]["Paths"]["Items"])
    return batches


def _metric_values(name: str) -> list[float]:
    return metrics.metric_set.get(name, {}).get("Value", [])


@mock_aws
def test_invalidates_exactly_the_given_paths() -> None:
    distribution = _distribution()
    cdn = Cdn(distribution, client=boto3.client("cloudfront"))
    assert cdn.invalidate(["sitemap-pages-00001.xml.gz"]) is True
    assert cdn.invalidate([]) is True  # nothing to do: no request
    assert _invalidated(distribution) == [["/sitemap-pages-00001.xml.gz"]]


@mock_aws
def test_paths_are_root_relative_sorted_and_unique() -> None:
    distribution = _distribution()
    cdn = Cdn(distribution, client=boto3.client("cloudfront"))
    assert cdn.invalidate(["sitemap.xml", "robots.txt", "sitemap.xml"]) is True
    assert _invalidated(distribution) == [["/robots.txt", "/sitemap.xml"]]


def test_a_failed_invalidation_is_counted_not_raised() -> None:
    client = boto3.client("cloudfront")
    with Stubber(client) as stub:
        stub.add_client_error("create_invalidation", "TooManyInvalidationsInProgress")
        assert Cdn("E123", client=client).invalidate(["sitemap.xml"]) is False
    assert _metric_values(Metric.INVALIDATIONS_FAILED) == [1.0]


def _pipeline(make_pipeline: PipelineFactory, distribution: str) -> Any:
    return make_pipeline(INVALIDATE_PATHS=True, DISTRIBUTION_ID=distribution)


def test_pipeline_invalidates_each_written_or_deleted_object(
    make_pipeline: PipelineFactory, clock: FakeClock
) -> None:
    distribution = _distribution()
    pipeline = _pipeline(make_pipeline, distribution)
    pipeline.send_events([publish("/a", 1), publish("/b", 1)])
    pipeline.drain()
    batches = _invalidated(distribution)
    assert ["/sitemap-pages-00001.xml.gz"] in batches
    assert ["/robots.txt", "/sitemap.xml"] in batches
    assert len(batches) == 2

    pipeline.send_events([publish("/a", 1)])  # a duplicate writes nothing, invalidates nothing
    pipeline.drain()
    assert len(_invalidated(distribution)) == 2

    clock.advance(60)  # the shard's new lastmod changes the index too; robots.txt stays
    pipeline.send_events([unpublish("/a", 2)])
    pipeline.drain()
    later = _invalidated(distribution)[2:]
    assert sorted(later) == [["/sitemap-pages-00001.xml.gz"], ["/sitemap.xml"]]


def test_updates_go_on_when_invalidation_fails(
    make_pipeline: PipelineFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = _pipeline(make_pipeline, "EDOESNOTEXIST")  # every invalidation fails
    pipeline.send_events([publish("/a", 1), publish("/b", 1)])
    pipeline.drain()
    assert {"sitemap.xml", "robots.txt", "sitemap-pages-00001.xml.gz"} <= set(pipeline.objects())
    assert pipeline.function_errors == 0
    assert '"InvalidationsFailed":[1.0]' in capsys.readouterr().err  # the handlers' EMF lines


def test_invalidation_is_off_by_default(pipeline: Any) -> None:
    assert pipeline.app.cdn is None
    assert pipeline.app.rebuild_shard.cdn is None
    assert pipeline.app.publish_index.cdn is None
