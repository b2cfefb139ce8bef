"""AWS errors become one line a person can act on; everything else is left alone."""

from __future__ import annotations

import pytest
from botocore.exceptions import (
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
)

from sitemap_updater.cli import main
from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.ops.errors import aws_error_message


def test_each_kind_of_aws_error_has_its_line() -> None:
    assert "no AWS credentials found" in str(aws_error_message(NoCredentialsError()))
    assert aws_error_message(NoRegionError()) == "no AWS region: pass --region or set AWS_REGION"
    unreachable = EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    assert aws_error_message(unreachable) == (
        "cannot reach http://127.0.0.1:1: is the endpoint right and up?"
    )
    denied = ClientError(
        {"Error": {"Code": "AccessDenied", "Message": "not you"}}, "DescribeStacks"
    )
    assert aws_error_message(denied) == "DescribeStacks failed: AccessDenied: not you"
    assert aws_error_message(ValueError("a bug")) is None
    throttled = RetryableError("Query throttled: ProvisionedThroughputExceededException")
    assert aws_error_message(throttled) == (
        "Query throttled: ProvisionedThroughputExceededException: AWS is throttling or "
        "failing for now; run the same command again"
    )


def test_missing_credentials_are_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["status", "--stack", "prod"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sitemap-updater: error: no AWS credentials found")
    assert err.count("\n") == 1
