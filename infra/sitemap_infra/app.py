"""The app: context -> validated configuration -> the stack, with cdk-nag on every synth."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from aws_cdk import App, Environment, Validations
from cdk_nag import AwsSolutionsChecks

from sitemap_infra.config import ConfigError, read_context
from sitemap_infra.stack import SitemapUpdaterStack


def create_app(context: Mapping[str, Any] | None = None) -> tuple[App, SitemapUpdaterStack]:
    app = App(context=dict(context) if context is not None else None)
    config = read_context(app.node.get_all_context())
    stack = SitemapUpdaterStack(
        app,
        config.stack_name,
        config=config,
        # Environment-agnostic unless the CLI knows the account (no lookups: synth is offline).
        env=Environment(
            account=os.environ.get("CDK_DEFAULT_ACCOUNT"),
            region=os.environ.get("CDK_DEFAULT_REGION"),
        ),
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


def main() -> None:
    try:
        app, _ = create_app()
    except ConfigError as exc:
        sys.exit(f"sitemap-updater: {exc}")
    app.synth()
