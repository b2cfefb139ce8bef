"""Synthesize the app the way ``cdk synth`` does (cdk.json's feature flags, cdk-nag on), but
without bundling the function asset, which one test does for real."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App
from aws_cdk.assertions import Template
from constructs import IConstruct

from sitemap_infra.app import create_app
from sitemap_infra.stack import SitemapUpdaterStack

INFRA = Path(__file__).resolve().parents[2] / "infra"
SITE = "https://www.example.com"
CERTIFICATE_ARN = (
    "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
)
TOPIC_ARN = "arn:aws:sns:eu-west-1:123456789012:on-call"
NO_BUNDLING = {"aws:cdk:bundling-stacks": []}


def cdk_json_context() -> dict[str, Any]:
    return dict(json.loads((INFRA / "cdk.json").read_text())["context"])


def app_context(**context: Any) -> dict[str, Any]:
    return {**cdk_json_context(), **NO_BUNDLING, **context}


@dataclass
class Synthesized:
    app: App
    stack: SitemapUpdaterStack
    template: Template

    @property
    def json(self) -> dict[str, Any]:
        return self.template.to_json()

    def logical_id(self, construct: IConstruct) -> str:
        child = construct.node.default_child
        return self.stack.get_logical_id(child)  # type: ignore[arg-type]

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return self.template.find_resources(kind)


def synthesize(**context: Any) -> Synthesized:
    """The app for ``-c key=value ...``. Template.from_stack runs cdk-nag: a finding raises."""
    app, stack = create_app(app_context(**context))
    return Synthesized(app, stack, Template.from_stack(stack))


@pytest.fixture(scope="session")
def default() -> Synthesized:
    """``cdk synth -c site_url=https://www.example.com``: every default."""
    return synthesize(site_url=SITE)


@pytest.fixture(scope="session")
def configured() -> Synthesized:
    """Every option set: invalidation, a custom domain, an alarm topic, tuned settings."""
    return synthesize(
        site_url=SITE,
        max_urls_per_shard="5000",
        compress_shards="false",
        cache_max_age_seconds="120",
        invalidate_paths="true",
        domain_name="www.example.com",
        certificate_arn=CERTIFICATE_ARN,
        alarm_topic_arn=TOPIC_ARN,
        stack_name="Sitemaps-Prod",
        feed_entries="20",
        sitemap_format="txt",
        extra_sitemaps=f"{SITE}/shop/sitemap.xml",
    )


@pytest.fixture(params=["default", "configured"])
def synthesized(request: pytest.FixtureRequest) -> Synthesized:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]
