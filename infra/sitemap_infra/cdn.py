"""CloudFront in front of the bucket, through origin access control: a distribution of its
own (``distribution=None``), or ``/robots.txt`` and the sitemap paths added as behaviours to
the site's own distribution, since sitemaps must be served from the site's host.

Only those paths reach the bucket, and the origin access may list it, so a missing object is
404 to a crawler, not 403; a distribution of our own answers every other path 404 at the edge,
so none asks for the listing itself (docs/SECURITY.md, section 6).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Annotations, Duration, Names, Stack
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_s3 as s3
from constructs import Construct

from sitemap_infra.nag import acknowledge
from sitemap_infra.storage import Storage
from sitemap_updater.bootstrap import site_file_keys
from sitemap_updater.settings import Settings

# CloudFront path patterns match the whole path, ``*`` any run of characters: these are the
# robots.txt, the first index file, further index files (sitemap-index-<n>.xml) and shards
# (sitemap-<group>-<NNNNN>.xml, .xml.gz or .txt), and nothing else of the site's (not /sitemap/).
PATH_PATTERNS = (
    "/robots.txt",
    "/sitemap.xml",
    "/sitemap-*.xml",
    "/sitemap-*.xml.gz",
    "/sitemap-*.txt",
)
MAX_TTL_SECONDS = 300
HSTS_MAX_AGE = Duration.days(730)
NOT_FOUND = (
    "function handler(event) { return { statusCode: 404, statusDescription: 'Not Found' }; }"
)
# cdk-nag findings a distribution of our own accepts, with why.
PUBLIC_DISTRIBUTION = {
    "AwsSolutions-CFR1": "Sitemaps and robots.txt are public and must reach crawlers in every "
    "country.",
    "AwsSolutions-CFR2": "Static, public, read-only objects (GET/HEAD) with no dynamic origin; "
    "a WAF web ACL would cost more than anything it could protect here.",
}
NO_CUSTOM_DOMAIN = {
    "AwsSolutions-CFR4": "Without a custom domain CloudFront uses its default *.cloudfront.net "
    "certificate, whose TLS policy cannot be set; with domain_name and certificate_arn the "
    "distribution requires TLSv1.2_2025.",
}


class SitemapCdn(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        storage: Storage,
        settings: Settings,
        distribution: cloudfront.Distribution | None,
        domain_name: str | None,
        certificate: acm.ICertificate | None,
    ) -> None:
        super().__init__(scope, construct_id)
        access = cloudfront.S3OriginAccessControl(
            self, "OriginAccess", origin_access_control_name=self._global_name("oac", 64)
        )
        self.origin = origins.S3BucketOrigin.with_origin_access_control(
            storage.bucket,
            origin_access_control=access,
            # LIST: S3 answers a missing key 404 only to a reader that may list the bucket.
            origin_access_levels=[cloudfront.AccessLevel.READ, cloudfront.AccessLevel.LIST],
        )
        self.cache_policy = self._cache_policy(settings.cache_max_age_seconds)
        # HSTS speaks for the whole host: only on a distribution of our own.
        self.response_headers_policy = self._headers_policy(hsts=distribution is None)
        if distribution is None:
            distribution = self._distribution(
                settings.site_url, domain_name, certificate, storage.logs
            )
        # And the files served at the site root (the human view's stylesheet, IndexNow's key).
        extra_paths = [f"/{key}" for key in site_file_keys(settings)]
        for pattern in (*PATH_PATTERNS, *extra_paths):
            distribution.add_behavior(pattern, self.origin, **self._behavior())
        self.distribution = distribution

    def _global_name(self, what: str, limit: int) -> str:
        """A CloudFront name: global to the account, so the region is in it (as CDK does for the
        cache policy), or the same stack in a second region fails on "already exists"."""
        prefix = Names.unique_resource_name(self, max_length=limit - len(what) - 20)
        return f"{prefix}-{what}-{Stack.of(self).region}"

    def _cache_policy(self, cache_max_age_seconds: int) -> cloudfront.CachePolicy:
        return cloudfront.CachePolicy(
            self,
            "Cache",
            comment="sitemap-updater: short TTLs, the objects say max-age",
            # The objects carry Cache-Control: public, max-age=<cache_max_age_seconds>;
            # CloudFront keeps them at most MAX_TTL_SECONDS whatever they say.
            default_ttl=Duration.seconds(cache_max_age_seconds),
            min_ttl=Duration.seconds(0),
            max_ttl=Duration.seconds(max(MAX_TTL_SECONDS, cache_max_age_seconds)),
            query_string_behavior=cloudfront.CacheQueryStringBehavior.none(),
            header_behavior=cloudfront.CacheHeaderBehavior.none(),
            cookie_behavior=cloudfront.CacheCookieBehavior.none(),
            enable_accept_encoding_gzip=True,
            enable_accept_encoding_brotli=True,
        )

    def _headers_policy(self, *, hsts: bool) -> cloudfront.ResponseHeadersPolicy:
        return cloudfront.ResponseHeadersPolicy(
            self,
            "Headers",
            response_headers_policy_name=self._global_name("headers", 128),
            comment="sitemap-updater: security headers",
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                frame_options=cloudfront.ResponseHeadersFrameOptions(
                    frame_option=cloudfront.HeadersFrameOption.DENY, override=True
                ),
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                    referrer_policy=cloudfront.HeadersReferrerPolicy.STRICT_ORIGIN_WHEN_CROSS_ORIGIN,
                    override=True,
                ),
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=HSTS_MAX_AGE, include_subdomains=False, override=True
                )
                if hsts
                else None,
            ),
        )

    def _behavior(self) -> dict[str, Any]:
        """The options of every behaviour serving the bucket, ours or added to the site's."""
        return {
            "viewer_protocol_policy": cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
            "allowed_methods": cloudfront.AllowedMethods.ALLOW_GET_HEAD,
            "cached_methods": cloudfront.CachedMethods.CACHE_GET_HEAD,
            "cache_policy": self.cache_policy,
            "response_headers_policy": self.response_headers_policy,
            "compress": True,
        }

    def _distribution(
        self,
        site_url: str,
        domain_name: str | None,
        certificate: acm.ICertificate | None,
        log_bucket: s3.IBucket,
    ) -> cloudfront.Distribution:
        not_found = cloudfront.Function(
            self,
            "NotFound",
            function_name=self._global_name("notfound", 64),
            comment="sitemap-updater: 404 for every path that is not a sitemap's",
            code=cloudfront.FunctionCode.from_inline(NOT_FOUND),
            runtime=cloudfront.FunctionRuntime.JS_2_0,
        )
        distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment=f"sitemap-updater: sitemaps of {site_url}"[:128],
            default_behavior=cloudfront.BehaviorOptions(
                origin=self.origin,
                function_associations=[
                    cloudfront.FunctionAssociation(
                        function=not_found, event_type=cloudfront.FunctionEventType.VIEWER_REQUEST
                    )
                ],
                **self._behavior(),
            ),
            domain_names=[domain_name] if domain_name else None,
            certificate=certificate,
            minimum_protocol_version=(
                cloudfront.SecurityPolicyProtocol.TLS_V1_2_2025 if certificate else None
            ),
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            enable_ipv6=True,
            enable_logging=True,
            log_bucket=log_bucket,
            log_file_prefix="cloudfront/",
        )
        Annotations.of(distribution.node.find_child("Origin1")).acknowledge_warning(
            "@aws-cdk/aws-cloudfront-origins:listBucketSecurityRisk",
            "the default behaviour never reaches the bucket: its function answers 404",
        )
        findings = PUBLIC_DISTRIBUTION | ({} if certificate else NO_CUSTOM_DOMAIN)
        for finding, reason in findings.items():
            acknowledge(distribution, finding, reason)
        return distribution
