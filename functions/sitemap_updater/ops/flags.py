"""The deployment flags every AWS command takes (argparse only: cheap to import)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from sitemap_updater.ops.errors import UserError

# Flag -> the stack output it stands for, and what that is.
RESOURCE_FLAGS = {
    "--site-url": ("SiteUrl", "the site's origin"),
    "--table": ("TableName", "the registry table"),
    "--bucket": ("BucketName", "the site bucket"),
    "--ingest-queue-url": ("IngestQueueUrl", "the ingest queue"),
    "--rebuild-queue-url": ("RebuildQueueUrl", "the rebuild queue"),
    "--index-queue-url": ("IndexQueueUrl", "the index queue"),
    "--ingest-dlq-url": ("IngestDlqUrl", "the ingest dead-letter queue"),
    "--rebuild-dlq-url": ("RebuildDeadLetterQueueUrl", "the rebuild dead-letter queue"),
    "--index-dlq-url": ("IndexDeadLetterQueueUrl", "the index dead-letter queue"),
}
SETTING_OPTIONS: dict[str, Any] = {"action": "append", "default": [], "metavar": "NAME=VALUE"}


def add_deployment_arguments(parser: argparse.ArgumentParser) -> None:
    """``--stack``, the connection flags and the resource flags, in their own help group."""
    where = parser.add_argument_group(
        "deployment",
        "Resolved from the stack's outputs (--stack) and/or these flags; flags win. Against "
        "`sitemap-updater local --serve`: --stack sitemap-updater-local --endpoint-url "
        "http://127.0.0.1:PORT (the port it prints).",
    )
    where.add_argument("--stack", default=None, help="CloudFormation stack name to read outputs")
    where.add_argument(
        "--endpoint-url",
        default=os.environ.get("AWS_ENDPOINT_URL") or None,
        help="send every AWS call here (default: $AWS_ENDPOINT_URL)",
    )
    where.add_argument("--region", default=None, help="AWS region (default: your AWS config)")
    where.add_argument("--profile", default=None, help="AWS profile (default: your AWS config)")
    for flag, (output, what) in RESOURCE_FLAGS.items():
        where.add_argument(flag, default=None, help=f"{what} (stack output {output})")
    where.add_argument(
        "--setting",
        help="any other settings variable, e.g. MAX_URLS_PER_SHARD=5000 (repeatable)",
        **SETTING_OPTIONS,
    )


def setting_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """``--setting NAME=VALUE`` pairs by name; the settings model validates the values."""
    from sitemap_updater.settings import Settings  # noqa: PLC0415 - pydantic: not for --help

    known = Settings.env_names()
    settings = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or name not in known:
            names = ", ".join(sorted(known))
            raise UserError(f"--setting {pair!r}: expected NAME=VALUE with NAME one of {names}")
        settings[name] = value
    return settings
