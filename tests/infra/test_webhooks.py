"""The webhook endpoint in the stack: absent without a connectors file; with one, a function
behind a function URL that reads exactly the connectors' secrets (never in clear), routes
partner event sources, and alarms on a burst of 401s. cdk-nag runs on every synth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cfnlint.api import ManualArgs, lint

from sitemap_infra.config import ConfigError
from sitemap_infra.webhooks import HANDLER, REFUSED_BURST
from sitemap_updater.observability import Metric
from tests.infra.conftest import SITE, Synthesized, synthesize

LOCAL_SECRET = "for-the-local-runtime-only-never-deployed"
GHOST_ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sitemap/ghost-AbCdEf"
STRAPI_ARN = "arn:aws:ssm:eu-west-1:123456789012:parameter/sitemap/strapi"
SHOPIFY_SOURCE = "aws.partner/shopify.com/12345/sitemap"
CONNECTORS = f"""
[[connector]]
name = "ghost"
cms = "ghost"
secret_arn = "{GHOST_ARN}"
secrets = ["{LOCAL_SECRET}"]

[[connector]]
name = "strapi"
cms = "strapi"
secret_arn = "{STRAPI_ARN}"

[connector.content_types.article]
url_template = "https://www.example.com/blog/{{slug}}"

[[connector]]
name = "shop"
cms = "shopify"
event_source = "{SHOPIFY_SOURCE}"

[connector.content_types.product]
url_template = "https://www.example.com/products/{{slug}}"
"""


@pytest.fixture(scope="module")
def with_connectors(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    path = tmp_path_factory.mktemp("connectors") / "connectors.toml"
    path.write_text(CONNECTORS)
    return synthesize(site_url=SITE, connectors=str(path))


def webhook_function(synthesized: Synthesized) -> tuple[str, dict]:  # type: ignore[type-arg]
    functions = synthesized.resources("AWS::Lambda::Function")
    found = [(k, v) for k, v in functions.items() if v["Properties"]["Handler"] == HANDLER]
    assert len(found) == 1
    return found[0]


def test_off_by_default(default: Synthesized) -> None:
    handlers = {
        v["Properties"]["Handler"] for v in default.resources("AWS::Lambda::Function").values()
    }
    assert HANDLER not in handlers
    assert default.resources("AWS::Lambda::Url") == {}
    assert "WebhookUrl" not in default.json["Outputs"]


def test_a_function_url_without_iam_auth_answers_for_the_function(
    with_connectors: Synthesized,
) -> None:
    logical_id, _ = webhook_function(with_connectors)
    (url,) = with_connectors.resources("AWS::Lambda::Url").values()
    assert url["Properties"]["AuthType"] == "NONE"  # the CMS's signature is the auth
    assert url["Properties"]["TargetFunctionArn"] == {"Fn::GetAtt": [logical_id, "Arn"]}
    assert "WebhookUrl" in with_connectors.json["Outputs"]


def test_the_secrets_are_arns_never_values(with_connectors: Synthesized) -> None:
    _, function = webhook_function(with_connectors)
    variables = function["Properties"]["Environment"]["Variables"]
    deployed = json.loads(variables["CONNECTORS"])
    assert [c.get("secret_arn") for c in deployed["connector"]] == [GHOST_ARN, STRAPI_ARN, None]
    assert LOCAL_SECRET not in json.dumps(with_connectors.json)


def test_the_function_reads_exactly_its_secrets_and_sends_to_the_ingest_queues(
    with_connectors: Synthesized,
) -> None:
    policies = with_connectors.resources("AWS::IAM::Policy")
    (policy,) = [p for k, p in policies.items() if "Webhooks" in k]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    by_action = {json.dumps(s["Action"]): s["Resource"] for s in statements}
    assert by_action['"secretsmanager:GetSecretValue"'] == GHOST_ARN
    assert by_action['"ssm:GetParameter"'] == STRAPI_ARN
    sends = by_action['"sqs:SendMessage"']
    assert [ref["Fn::GetAtt"][0] for ref in sends] == [
        with_connectors.stack.get_logical_id(q.node.default_child)  # type: ignore[arg-type]
        for q in (
            with_connectors.stack.updater.ingest_queue,
            with_connectors.stack.updater.queues["ingest"].dead_letter,
        )
    ]


def test_a_partner_event_source_is_routed_to_the_function(with_connectors: Synthesized) -> None:
    rules = [
        r["Properties"]
        for r in with_connectors.resources("AWS::Events::Rule").values()
        if r["Properties"].get("EventBusName") == SHOPIFY_SOURCE
    ]
    assert [r["EventPattern"] for r in rules] == [{"source": [SHOPIFY_SOURCE]}]


def test_a_burst_of_401s_alarms(with_connectors: Synthesized) -> None:
    alarms = with_connectors.resources("AWS::CloudWatch::Alarm").values()
    (alarm,) = [a for a in alarms if a["Properties"].get("MetricName") == Metric.WEBHOOKS_REFUSED]
    assert alarm["Properties"]["Threshold"] == REFUSED_BURST
    assert alarm["Properties"]["Statistic"] == "Sum"


def test_a_connector_without_an_arn_is_refused_at_synth(tmp_path: Path) -> None:
    path = tmp_path / "connectors.toml"
    path.write_text('[[connector]]\nname = "n"\ncms = "native"\nsecrets = ["local-only"]\n')
    with pytest.raises(ConfigError, match="'n' needs secret_arn"):
        synthesize(site_url=SITE, connectors=str(path))


def test_cfn_lint_finds_nothing_with_the_endpoint(with_connectors: Synthesized) -> None:
    matches = lint(json.dumps(with_connectors.json), config=ManualArgs(regions=["us-east-1"]))
    assert [str(match) for match in matches] == []


def test_a_partner_event_that_fails_is_kept_and_alarms(with_connectors: Synthesized) -> None:
    """Invoked asynchronously, a failure would be dropped after Lambda's two retries (and an
    undelivered event after EventBridge's): both go to the FailedEvents queue, which alarms."""
    webhooks = with_connectors.stack.updater.webhooks
    assert webhooks is not None
    assert webhooks.failed is not None
    failed = with_connectors.logical_id(webhooks.failed)
    (config,) = [
        c["Properties"]
        for c in with_connectors.resources("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": with_connectors.logical_id(webhooks.function)}
    ]
    destination = config["DestinationConfig"]["OnFailure"]["Destination"]
    assert destination == {"Fn::GetAtt": [failed, "Arn"]}
    (rule,) = [
        r["Properties"]
        for r in with_connectors.resources("AWS::Events::Rule").values()
        if r["Properties"].get("EventBusName") == SHOPIFY_SOURCE
    ]
    assert rule["Targets"][0]["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [failed, "Arn"]}}
    alarms = with_connectors.resources("AWS::CloudWatch::Alarm").values()
    watched = [
        a
        for a in alarms
        if {"Name": "QueueName", "Value": {"Fn::GetAtt": [failed, "QueueName"]}}
        in a["Properties"].get("Dimensions", [])
    ]
    assert [a["Properties"]["Threshold"] for a in watched] == [1]
