"""How the commands fail: one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.ops.progress import print_lines


class UserError(Exception):
    """A mistake in the command line or its inputs: one line, exit status 2."""


def warn(message: str) -> None:
    """A warning: the run goes on (stdout keeps the summary alone)."""
    print_lines([f"sitemap-updater: warning: {message}"], sys.stderr)


def utf8_text(path: Path, data: bytes) -> str:
    """A file's text without its byte order mark; one not UTF-8 (Excel's plain CSV is
    Windows-1252) is refused whole, not row by row, as every row would be."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserError(
            f"{path} is not UTF-8 (line {line}: byte 0x{data[exc.start]:02X}): save it as UTF-8 "
            "(in Excel: CSV UTF-8)"
        ) from exc


def error_code(exc: BaseException) -> tuple[str, str]:
    """An AWS error's code and message: a ClientError's own, else its type and one line."""
    if not hasattr(exc, "response"):
        return type(exc).__name__, aws_error_message(exc) or str(exc)
    error = exc.response.get("Error", {})
    return error.get("Code", "?"), error.get("Message", "")


def refused_entries(response: Any) -> list[tuple[int, str, str]]:
    """(entry id, code, message) of each entry a batch call's response lists as failed."""
    return [
        (int(item["Id"]), item.get("Code", "?"), item.get("Message", ""))
        for item in response.get("Failed", [])
    ]


def call_batch(
    call: Callable[..., Any], queue_url: str, entries: list[Any]
) -> tuple[list[Any], list[tuple[int, str, str]]]:
    """A batch call's successful items and the entries refused (all when SQS refuses it whole)."""
    from botocore.exceptions import ClientError  # noqa: PLC0415 - only the AWS commands need it

    try:
        response = call(QueueUrl=queue_url, Entries=entries)
    except ClientError as exc:
        code, message = error_code(exc)
        return [], [(int(entry["Id"]), code, message) for entry in entries]
    return response.get("Successful", []), refused_entries(response)


def aws_error_message(exc: BaseException, endpoint_url: str | None = None) -> str | None:
    """One line for an AWS or SDK error a person can act on; None if ``exc`` is not one."""
    from botocore.exceptions import (  # noqa: PLC0415 - only the AWS commands need botocore
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
    )
    from botocore.parsers import ResponseParserError  # noqa: PLC0415

    if isinstance(exc, ValueError) and str(exc).startswith("Invalid endpoint: "):  # botocore's
        url = str(exc).removeprefix("Invalid endpoint: ")
        return f"endpoint {url!r} is not a URL: give its scheme too, e.g. http://{url}"
    if isinstance(exc, ResponseParserError):  # a web page or a server error, not an AWS answer
        return (
            f"{endpoint_url or 'the endpoint'} did not answer as AWS does: check --endpoint-url "
            "(against `local --serve`, the moto port it prints, not the site's) and --region"
        )
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
        code, message = error_code(exc)
        operation = getattr(exc, "operation_name", "an AWS call")
        return f"{operation} failed: {code}: {message}".rstrip()
    if isinstance(exc, BotoCoreError):
        return str(exc)
    return None


@contextmanager
def interruptible(report: Any) -> Iterator[None]:
    """Ctrl-C ends the block and sets ``report.interrupted``: the command still reports."""
    try:
        yield
    except KeyboardInterrupt:
        report.interrupted = True


def exit_status(*, interrupted: bool = False, failed: bool = False) -> int:
    """130 after Ctrl-C (as the shell gives it), else 1 if anything failed."""
    return 130 if interrupted else int(failed)


class _CurrentStderr:
    """sys.stderr when written to: a command run twice in one process (tests replace
    sys.stderr) never writes to a closed one."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def log_to_stderr(level: str) -> None:
    """The use cases' log on stderr from ``level`` up. Powertools reads its environment as
    the logger is created, so it is set before ``observability`` is first imported."""
    from sitemap_updater.resources import METRICS_NAMESPACE, SERVICE_NAME  # noqa: PLC0415

    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", SERVICE_NAME)
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", METRICS_NAMESPACE)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    from sitemap_updater.observability import logger  # noqa: PLC0415

    logger.setLevel(level)
    if hasattr(logger.registered_handler, "setStream"):
        logger.registered_handler.setStream(_CurrentStderr())
