"""The reusable construct in another team's app: it attaches robots.txt and the sitemap paths
to the distribution that app already owns, so sitemaps are served from the site's host."""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from sitemap_infra.cdn import PATH_PATTERNS
from sitemap_infra.config import ConfigError
from sitemap_infra.nag import acknowledge
from sitemap_infra.updater import SitemapUpdater
from tests.infra.conftest import SITE, app_context


class SiteStack(Stack):
    """Someone else's stack: a site on its own origin behind its own distribution."""

    def __init__(self, scope: App, construct_id: str, **settings: Any) -> None:
        super().__init__(scope, construct_id)
        self.site = cloudfront.Distribution(
            self,
            "Site",
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.HttpOrigin("origin.example.com")
            ),
        )
        for rule in ("CFR1", "CFR2", "CFR3", "CFR4", "CFR5"):
            acknowledge(self.site, f"AwsSolutions-{rule}", "The site team's own distribution.")
        self.sitemaps = SitemapUpdater(
            self, "Sitemaps", site_url=SITE, settings=settings, distribution=self.site
        )


@pytest.fixture(scope="module")
def attached() -> tuple[SiteStack, dict[str, Any]]:
    app = App(context=app_context())
    stack = SiteStack(app, "Site", invalidate_paths=True)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stack, Template.from_stack(stack).to_json()


def test_sitemap_paths_become_behaviours_of_the_sites_distribution(
    attached: tuple[SiteStack, dict[str, Any]],
) -> None:
    _, template = attached
    distributions = [
        r for r in template["Resources"].values() if r["Type"] == "AWS::CloudFront::Distribution"
    ]
    assert len(distributions) == 1  # no distribution of our own
    config = distributions[0]["Properties"]["DistributionConfig"]
    bucket_origin = next(o for o in config["Origins"] if "S3OriginConfig" in o)
    assert "OriginAccessControlId" in bucket_origin
    behaviors = {b["PathPattern"]: b for b in config["CacheBehaviors"]}
    assert set(behaviors) == set(PATH_PATTERNS)
    for behavior in behaviors.values():
        assert behavior["TargetOriginId"] == bucket_origin["Id"]
        assert behavior["ViewerProtocolPolicy"] == "redirect-to-https"
        assert behavior["AllowedMethods"] == ["GET", "HEAD"]
    assert "S3OriginConfig" not in next(
        o for o in config["Origins"] if o["Id"] == config["DefaultCacheBehavior"]["TargetOriginId"]
    )  # the site itself still goes to its own origin


def test_no_hsts_for_someone_elses_host(attached: tuple[SiteStack, dict[str, Any]]) -> None:
    _, template = attached
    (policy,) = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::CloudFront::ResponseHeadersPolicy"
    ]
    headers = policy["Properties"]["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    assert "StrictTransportSecurity" not in headers


def test_the_functions_know_the_sites_distribution(
    attached: tuple[SiteStack, dict[str, Any]],
) -> None:
    stack, template = attached
    site = stack.get_logical_id(stack.site.node.default_child)  # type: ignore[arg-type]
    functions = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    ]
    assert len(functions) == 4  # the reconciler's too
    for function in functions:
        assert function["Environment"]["Variables"]["DISTRIBUTION_ID"] == {"Ref": site}
        assert function["Environment"]["Variables"]["INVALIDATE_PATHS"] == "true"


@pytest.mark.parametrize(
    "pattern",
    ["/robots.txt", "/sitemap.xml", "/sitemap-index-2.xml", "/sitemap-pages-00001.xml.gz",
     "/sitemap-pages-00001.xml"],
)  # fmt: skip
def test_patterns_cover_every_object_the_updater_writes(pattern: str) -> None:
    assert any(fnmatch.fnmatchcase(pattern, p) for p in PATH_PATTERNS)


@pytest.mark.parametrize("path", ["/sitemap", "/sitemap/", "/sitemaps/about", "/robots.txt.bak"])
def test_patterns_leave_the_sites_own_pages_alone(path: str) -> None:
    assert not any(fnmatch.fnmatchcase(path, p) for p in PATH_PATTERNS)


def test_bad_settings_fail_at_construction() -> None:
    app = App(context=app_context())
    with pytest.raises(ConfigError, match="max_urls_per_shard"):
        SitemapUpdater(
            Stack(app, "S"), "Sitemaps", site_url=SITE, settings={"max_urls_per_shard": 0}
        )


def test_attaching_needs_the_distributions_stack() -> None:
    app = App(context=app_context())
    site = SiteStack(app, "Site")
    with pytest.raises(ConfigError, match="same stack"):
        SitemapUpdater(Stack(app, "Other"), "Sitemaps", site_url=SITE, distribution=site.site)
