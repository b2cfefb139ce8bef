"""How the commands fail: one clear line and a non-zero exit, never a traceback for a mistake."""

from __future__ import annotations

import sys

from sitemap_updater.domain.errors import RetryableError


class UserError(Exception):
    """A mistake in the command line or its inputs: reported in one line, exit status 2."""


def aws_error_message(exc: BaseException) -> str | None:
    """One line for an AWS or SDK error a person can act on; None if ``exc`` is not one."""
    try:
        from botocore.exceptions import (  # noqa: PLC0415 - only the AWS commands need botocore
            BotoCoreError,
            ClientError,
            EndpointConnectionError,
            NoCredentialsError,
            NoRegionError,
        )
    except ImportError:  # pragma: no cover - boto3 is a dependency
        return None
    if isinstance(exc, RetryableError):  # an adapter's throttled or failed-for-now call
        return f"{exc}: AWS is throttling or failing for now; run the same command again"
    if isinstance(exc, NoCredentialsError):
        return (
            "no AWS credentials found: set AWS_PROFILE or pass --profile "
            "(a local stack on 127.0.0.1 needs none)"
        )
    if isinstance(exc, NoRegionError):
        return "no AWS region: pass --region or set AWS_REGION"
    if isinstance(exc, EndpointConnectionError):
        return f"cannot reach {exc.kwargs.get('endpoint_url')}: is the endpoint right and up?"
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        operation = getattr(exc, "operation_name", "an AWS call")
        return f"{operation} failed: {error.get('Code', '?')}: {error.get('Message', '')}".rstrip()
    if isinstance(exc, BotoCoreError):
        return str(exc)
    return None


class CurrentStderr:
    """Whatever sys.stderr is at the time of writing, for a log handler's stream: a command
    run twice in one process (tests replace sys.stderr) never writes to a closed one."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
