"""docs/SECURITY.md's claims about the deployment, asserted on the synthesized template (with
every default, and with every option set). Exact IAM grants per function are in
``test_permissions.py``; these are the rest: nothing is reachable except through CloudFront,
over TLS, and nothing logs the Lambda event."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from typing import Any

from sitemap_infra.cdn import PATH_PATTERNS
from sitemap_updater.bootstrap import site_file_keys
from tests.infra.conftest import SITE, Synthesized, synthesize
from tests.infra.test_stack import ref

POLICIES = ("AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy")


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
            "cloudwatch.amazonaws.com",  # alarms publish to the alarm topic
        }
        conditions = {key for test in statement["Condition"].values() for key in test}
        assert conditions & {"AWS:SourceArn", "aws:SourceArn"}, (kind, statement)
    denies = [s for _, s in statements(synthesized) if s["Effect"] == "Deny"]
    assert all(s["Principal"] in ({"AWS": "*"}, "*") for s in denies)


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
    # ListBucket: a missing key answers 404 (test_a_missing_object_is_404_and_nothing_lists_it)
    assert (read["Principal"], read["Action"]) == (
        {"Service": "cloudfront.amazonaws.com"},
        ["s3:GetObject", "s3:ListBucket"],
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


def test_the_alarm_topic_is_encrypted_and_only_cloudwatch_publishes(default: Synthesized) -> None:
    (topic_id, topic), *_ = default.resources("AWS::SNS::Topic").items()
    key_id = topic["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
    key = default.resources("AWS::KMS::Key")[key_id]["Properties"]
    assert key["EnableKeyRotation"] is True
    (cloudwatch_use,) = [
        s
        for s in key["KeyPolicy"]["Statement"]
        if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    ]
    # SNS's AWS-managed key would not let CloudWatch publish: a key of our own that it may use.
    assert set(cloudwatch_use["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    (policy,) = default.resources("AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": topic_id}]
    publish = policy["Properties"]["PolicyDocument"]["Statement"]
    (allow,) = [s for s in publish if s["Effect"] == "Allow"]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert ":alarm:*" in str(allow["Condition"]["ArnLike"]["aws:SourceArn"])
    conditions = [s["Condition"] for s in publish if s["Effect"] == "Deny"]
    assert {"Bool": {"aws:PrincipalIsAWSService": "false"}} in conditions  # no user, no role
    assert {"Bool": {"aws:SecureTransport": "false"}} in conditions


def test_an_alarm_email_subscribes_to_the_topic() -> None:
    synth = synthesize(site_url=SITE, alarm_email="oncall@example.com")
    (subscription,) = synth.resources("AWS::SNS::Subscription").values()
    (topic_id,) = synth.resources("AWS::SNS::Topic")
    assert subscription["Properties"] == {
        "Endpoint": "oncall@example.com",
        "Protocol": "email",
        "TopicArn": {"Ref": topic_id},
    }


def test_a_missing_object_is_404_and_nothing_lists_the_bucket(synthesized: Synthesized) -> None:
    """S3 answers a missing key 404 (not 403) only to a reader that may list the bucket: the
    distribution may (test_the_site_bucket_is_read_only_by_this_distribution). A listing is
    a GET of the bucket's root: no behaviour that reaches the bucket matches "/", and the
    default one answers every other path 404 at the edge."""
    (distribution,) = synthesized.resources("AWS::CloudFront::Distribution").values()
    config = distribution["Properties"]["DistributionConfig"]
    patterns = [b["PathPattern"] for b in config["CacheBehaviors"]]
    served = site_file_keys(synthesized.stack.updater.settings)  # the feed, when it is on
    assert set(patterns) == {*PATH_PATTERNS, *(f"/{key}" for key in served)}
    assert all(re.match(r"/[a-z]", pattern) for pattern in patterns)  # never "/" itself
    (association,) = config["DefaultCacheBehavior"]["FunctionAssociations"]
    assert association["EventType"] == "viewer-request"
    function_id = association["FunctionARN"]["Fn::GetAtt"][0]
    code = synthesized.resources("AWS::CloudFront::Function")[function_id]["Properties"]
    node = shutil.which("node")
    assert node is not None, "node (the CDK's runtime) runs the function's code"
    script = f"{code['FunctionCode']}\nconsole.log(JSON.stringify(handler({{}})))"
    answer = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True)
    assert json.loads(answer.stdout) == {"statusCode": 404, "statusDescription": "Not Found"}
