"""docs/SECURITY.md's claims about the deployment, asserted on the synthesized template (with
every default, and with every option set). Exact IAM grants per function are in
``test_permissions.py``; these are the rest: nothing is reachable except through CloudFront,
over TLS, and nothing logs the Lambda event."""

from __future__ import annotations

from typing import Any

from tests.infra.conftest import Synthesized
from tests.infra.test_stack import ref

POLICIES = ("AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy")


def statements(synth: Synthesized) -> list[tuple[str, dict[str, Any]]]:
    """(resource kind, statement) for every resource policy in the template."""
    return [
        (kind, statement)
        for kind in POLICIES
        for policy in synth.resources(kind).values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_no_resource_policy_lets_anyone_in(synthesized: Synthesized) -> None:
    """A wildcard principal appears only to deny (plain HTTP, old TLS); every allow names
    one AWS service and is tied to this account's resource by a source condition."""
    for kind, statement in statements(synthesized):
        principal = statement["Principal"]
        if statement["Effect"] == "Deny":
            continue
        assert set(principal) == {"Service"}, (kind, statement)
        assert principal["Service"] in {
            "cloudfront.amazonaws.com",  # reads the site bucket
            "logging.s3.amazonaws.com",  # writes access logs
            "events.amazonaws.com",  # the news sweep's schedule sends to the index queue
        }
        conditions = {key for test in statement["Condition"].values() for key in test}
        assert conditions & {"AWS:SourceArn", "aws:SourceArn"}, (kind, statement)
    denies = [s for _, s in statements(synthesized) if s["Effect"] == "Deny"]
    assert all(s["Principal"] == {"AWS": "*"} for s in denies)


def test_the_site_bucket_is_read_only_by_this_distribution(synthesized: Synthesized) -> None:
    storage = synthesized.stack.updater.storage
    bucket_id = synthesized.logical_id(storage.bucket)
    bucket = synthesized.resources("AWS::S3::Bucket")[bucket_id]["Properties"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert not {"WebsiteConfiguration", "AccessControl", "CorsConfiguration"} & set(bucket)
    (policy,) = [
        p
        for p in synthesized.resources("AWS::S3::BucketPolicy").values()
        if ref(p["Properties"]["Bucket"]) == bucket_id
    ]
    allows = [
        s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"
    ]
    (read,) = allows
    assert (read["Principal"], read["Action"]) == (
        {"Service": "cloudfront.amazonaws.com"},
        "s3:GetObject",
    )
    (source,) = read["Condition"]["StringEquals"].values()
    distribution = synthesized.logical_id(synthesized.stack.updater.distribution)
    assert {"Ref": distribution} in source["Fn::Join"][1]


def test_crawlers_reach_the_bucket_only_through_cloudfront_over_https(
    synthesized: Synthesized,
) -> None:
    (distribution,) = synthesized.resources("AWS::CloudFront::Distribution").values()
    config = distribution["Properties"]["DistributionConfig"]
    (origin,) = config["Origins"]
    assert "OriginAccessControlId" in origin
    assert origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}  # no legacy OAI
    behaviors = [config["DefaultCacheBehavior"], *config.get("CacheBehaviors", [])]
    assert {b["ViewerProtocolPolicy"] for b in behaviors} == {"redirect-to-https"}
    assert {tuple(b["AllowedMethods"]) for b in behaviors} == {("GET", "HEAD")}


def test_the_functions_never_log_the_lambda_event(synthesized: Synthesized) -> None:
    for function in synthesized.resources("AWS::Lambda::Function").values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables.get("POWERTOOLS_LOGGER_LOG_EVENT", "false") == "false"
        assert variables["POWERTOOLS_LOG_LEVEL"] == "INFO"
