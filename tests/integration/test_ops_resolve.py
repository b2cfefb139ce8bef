"""Resolving a deployment from its stack's outputs, flags, or both."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from sitemap_updater.cli import main
from sitemap_updater.local.stack import LOCAL_STACK_NAME, stack_outputs
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.flags import add_deployment_arguments
from sitemap_updater.ops.resolve import resolve, session_for
from sitemap_updater.resources import EXTRA_OUTPUTS, output_key
from sitemap_updater.settings import Settings
from tests.pipeline import Pipeline


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_deployment_arguments(parser)
    return parser.parse_args(argv)


def test_the_local_stack_has_an_output_per_setting_and_the_operator_queues(
    deployed: Pipeline,
) -> None:
    outputs = stack_outputs(deployed.stack)
    assert {output_key(name) for name in Settings.env_names()} <= set(outputs)
    assert {"IngestQueueUrl", "RebuildDeadLetterQueueUrl", "IndexDeadLetterQueueUrl"} <= set(
        outputs
    )
    assert {"IngestQueueUrl", "RebuildDeadLetterQueueUrl", "IndexDeadLetterQueueUrl"} <= set(
        EXTRA_OUTPUTS
    )


def test_a_stack_resolves_to_the_settings_the_functions_run_with(deployed: Pipeline) -> None:
    deployment = resolve(parse("--stack", LOCAL_STACK_NAME))
    assert deployment.settings == deployed.app.settings
    assert deployment.value("IngestQueueUrl") == deployed.stack.queues["ingest"].url
    names = list(deployment.queues())
    assert names == ["ingest", "rebuild", "index"]
    assert all(url and dlq_url for url, dlq_url in deployment.queues().values())


def test_flags_override_the_stack_and_settings_can_be_set_by_name(deployed: Pipeline) -> None:
    deployment = resolve(
        parse(
            "--stack",
            LOCAL_STACK_NAME,
            "--bucket",
            "another-bucket",
            "--setting",
            "MAX_URLS_PER_SHARD=7",
        )
    )
    assert deployment.settings.bucket_name == "another-bucket"
    assert deployment.settings.max_urls_per_shard == 7
    assert deployment.settings.table_name == deployed.app.settings.table_name


def test_flags_alone_describe_a_deployment_and_name_what_is_missing(deployed: Pipeline) -> None:
    settings = deployed.app.settings
    deployment = resolve(parse("--site-url", settings.site_url, "--table", settings.table_name))
    with pytest.raises(UserError) as caught:
        _ = deployment.settings
    message = str(caught.value)
    assert "BucketName (--bucket): missing" in message
    assert "RebuildQueueUrl (--rebuild-queue-url): missing" in message
    with pytest.raises(UserError, match=r"IngestQueueUrl is unknown .*give --ingest-queue-url"):
        deployment.value("IngestQueueUrl")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "no deployment given"),
        (("--setting", "NOPE=1", "--table", "t"), "expected NAME=VALUE with NAME one of"),
        (("--stack", "no-such-stack"), "stack 'no-such-stack' not found in us-east-1"),
    ],
)
def test_resolution_mistakes_are_user_errors(
    deployed: Pipeline, argv: tuple[str, ...], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        resolve(parse(*argv))


def test_an_unknown_stack_is_one_line_and_exit_2(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text('{"type": "publish", "url": "https://www.example.com/a", "version": 1}\n')
    assert main(["send", str(events), "--stack", "nope"]) == 2
    assert capsys.readouterr().err == (
        "sitemap-updater: error: stack 'nope' not found in us-east-1\n"
    )


def test_a_local_endpoint_needs_no_credentials_or_region(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    session = session_for(None, None, "http://127.0.0.1:5000")
    credentials = session.get_credentials()
    assert credentials is not None
    assert credentials.access_key == "local"
    assert session.region_name == "us-east-1"
    assert session_for(None, None, "https://sqs.eu-west-1.amazonaws.com").region_name is None


def test_aws_endpoint_url_names_the_local_stack_as_the_flag_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5077")
    assert parse("--stack", "sitemap-updater-local").endpoint_url == "http://127.0.0.1:5077"
    assert parse("--endpoint-url", "http://127.0.0.1:6000").endpoint_url == (
        "http://127.0.0.1:6000"
    )
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    assert parse("--stack", "x").endpoint_url is None


def test_a_limit_that_is_not_a_number_is_a_user_error(deployed: Pipeline) -> None:
    deployment = resolve(parse("--stack", LOCAL_STACK_NAME, "--setting", "MAX_URLS_PER_SHARD=5k"))
    with pytest.raises(UserError, match="MAX_URLS_PER_SHARD: not a whole number: '5k'"):
        _ = deployment.limits


def test_a_rule_across_settings_is_reported_as_its_own_message(deployed: Pipeline) -> None:
    deployment = resolve(
        parse("--stack", LOCAL_STACK_NAME, "--setting", "INDEXNOW_KEY=abcdef123456")
    )
    with pytest.raises(UserError) as failed:
        _ = deployment.settings
    assert str(failed.value) == (
        "cannot describe the deployment: INDEXNOW_KEY is set but INDEXNOW_QUEUE_URL or "
        "INDEXNOW_DLQ_URL is empty"
    )
