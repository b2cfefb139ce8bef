"""Connectors, verification: each CMS's signature scheme, checked against values its own code
produces, then over every sample in events/cms/: good, forged, stale, replayed, rotated secrets,
and hostile input that must be refused, never raised.

The other connector tests import the samples and the signers from here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_updater import connectors
from sitemap_updater.connectors import Connector, Request, cms, common

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "events" / "cms"
SECRET = "sitemap-updater-test-secret-not-for-production-0123456789abcdefg"
OLD_SECRET = "sitemap-updater-old-secret-not-for-production-0123456789abcdefgh"
OTHER_SECRET = "someone-else-s-secret-0123456789abcdefghijklmnopqrstuvwxyz012345"
NOW = 1_774_000_000.0  # 2026-03-20T09:46:40Z: the receiver's clock in these tests
CONNECTORS = {c.name: c for c in connectors.parse(connectors.read(SAMPLES / "connectors.toml"))}
HTTP_FOLDERS = ("native", "wordpress", "wp-webhooks", "ghost", "strapi", "contentful", "sanity")
REASONS = {
    common.MISSING_SIGNATURE,
    common.MALFORMED_SIGNATURE,
    common.WRONG_SIGNATURE,
    common.STALE_TIMESTAMP,
    common.UNKNOWN_KEY,
    common.WRONG_SOURCE,
}


def read_sample(path: Path) -> Request:
    """An ``.http`` sample: request line, headers, a blank line, the body (to the end of the
    file, without its last newline)."""
    head, _, body = path.read_bytes().partition(b"\n\n")
    request_line, *lines = head.decode("utf-8").split("\n")
    method, target, _ = request_line.split(" ")
    headers = [line.split(": ", 1) for line in lines]
    return connectors.request(method, target, [(k, v) for k, v in headers], body[:-1], NOW)


def sample(folder: str, name: str) -> Request:
    return read_sample(SAMPLES / folder / f"{name}.http")


def event_sample(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((SAMPLES / "shopify" / f"{name}.eventbridge").read_text())
    return document


def http_samples() -> list[tuple[str, str]]:
    return [
        (folder, path.stem)
        for folder in HTTP_FOLDERS
        for path in sorted((SAMPLES / folder).glob("*.http"))
    ]


def with_headers(request: Request, **extra: str) -> Request:
    headers = {**request.headers, **{k.replace("_", "-").lower(): v for k, v in extra.items()}}
    return Request(request.method, request.path, headers, request.body, request.now)


def sign(connector: Connector, request: Request, secret: str = SECRET, at: float = NOW) -> Request:
    """The request as the CMS sends it, signed with ``secret`` at Unix time ``at``. Written
    from each CMS's documentation, apart from the code under test."""
    ms = int(at * 1000)
    body, cms = request.body, connector.cms
    if cms == "native":
        mac = hmac.new(secret.encode(), f"{int(at)}.".encode() + body, hashlib.sha256)
        return with_headers(request, x_sitemap_signature=f"t={int(at)},v1={mac.hexdigest()}")
    if cms == "ghost":
        mac = hmac.new(secret.encode(), body + str(ms).encode(), hashlib.sha256)
        return with_headers(request, x_ghost_signature=f"sha256={mac.hexdigest()}, t={ms}")
    if cms == "sanity":
        mac = hmac.new(secret.encode(), f"{ms}.".encode() + body, hashlib.sha256).digest()
        v1 = base64.urlsafe_b64encode(mac).decode().rstrip("=")
        return with_headers(request, sanity_webhook_signature=f"t={ms},v1={v1}")
    if cms == "wp-webhooks":
        mac = hmac.new(secret.encode(), body, hashlib.sha256).digest()
        return with_headers(request, x_wp_webhook_signature=base64.b64encode(mac).decode())
    if cms == "strapi":
        return with_headers(request, authorization=f"Bearer {secret}")
    assert cms == "contentful"
    return sign_contentful(request, secret, ms)


def sign_contentful(request: Request, secret: str, ms: int) -> Request:
    """As node-apps-toolkit's signRequest: every header given is signed."""
    headers = {**request.headers, "x-contentful-timestamp": str(ms)}
    names = sorted({*headers, "x-contentful-signed-headers"})
    headers["x-contentful-signed-headers"] = ",".join(names)
    lines = ";".join(f"{name}:{headers[name].strip()}" for name in names)
    path = cms.encoded_path(request.path)
    canonical = f"{request.method}\n{path}\n{lines}\n".encode() + request.body
    headers["x-contentful-signature"] = hmac.new(
        secret.encode(), canonical, hashlib.sha256
    ).hexdigest()
    return Request(request.method, request.path, headers, request.body, request.now)


def verdict(
    connector: Connector, request: Request, secrets: tuple[str, ...] = (SECRET,)
) -> str | None:
    return connectors.verify(connector, request, secrets).reason


# --- the CMSes' own code -----------------------------------------------------------------------
# Each value below was produced by the CMS's own code, for the body BODY, with the secret
# "test-secret-0123456789" (Contentful: padded with "x" to the 64 characters it requires) at
# 1767225600123 ms:
#   Contentful  signRequest() of @contentful/node-apps-toolkit 3.16.1 (verifyRequest() agreed)
#   Sanity      encodeSignatureHeader() of @sanity/webhook 4.0.4 (isValidSignature() agreed)
#   Ghost       the expression in ghost/core/.../webhooks/webhook-trigger.js, run on Node 20
#   WP Webhooks generate_trigger_signature()'s expression, run on PHP 8.2
#   native      hash_hmac('sha256', "$t.$body", $secret) on PHP 8.2, as the WordPress plugin

VECTOR_SECRET = "test-secret-0123456789"
BODY = '{"sys":{"id":"5KsDBWseXY6QegucYAoacS","type":"Entry"},"fields":{"slug":{"en-US":"café"}}}'
VECTORS = {
    "contentful": {
        "x-contentful-signature": (
            "dcb8a049d02e8345d2b04a024c9f07f3fee33abbcbb8539d4d9f5dd330e2a860"
        ),
        "x-contentful-signed-headers": (
            "content-type,x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic"
        ),
        "x-contentful-timestamp": "1767225600123",
        "x-contentful-topic": "ContentManagement.Entry.publish",
        "content-type": "application/vnd.contentful.management.v1+json",
    },
    "sanity": {
        "sanity-webhook-signature": "t=1767225600123,v1=m7TtzSOGSjRnThtf6tvk90elbjC_LYtjSSQTjm6R-y4"
    },
    "ghost": {
        "x-ghost-signature": (
            "sha256=bd158f82acea96bd595b680caa8d1e0cea58534b126a11caad8cf29822c29ab0,"
            " t=1767225600123"
        )
    },
    "wp-webhooks": {"x-wp-webhook-signature": "44mHv15gZEzGJdJufqeMeF+IDUvRbOF5b7rN3rC6ObA="},
    "native": {
        "x-sitemap-signature": (
            "t=1767225600,v1=5179a16b82888e0674acefdb667ea052c40b28edde5f2c1e1a8081479f3887c3"
        )
    },
}


@pytest.mark.parametrize("cms", sorted(VECTORS))
def test_a_signature_made_by_the_cms_s_own_code_is_accepted(cms: str) -> None:
    secret = VECTOR_SECRET.ljust(64, "x") if cms == "contentful" else VECTOR_SECRET
    path = "/hooks/contentful?a=b c&d=%41&e=ü"  # escaped by the toolkit's own rules
    request = connectors.request("POST", path, VECTORS[cms], BODY.encode(), 1767225600.5)
    connector = Connector(name=cms, cms=cms)

    assert connectors.verify(connector, request, [secret]).accepted
    assert verdict(connector, request, (VECTOR_SECRET + "!",)) == common.WRONG_SIGNATURE


def test_wp_webhooks_4_signs_the_trigger_url_not_the_body() -> None:
    """4.x: base64 HMAC of json_encode(date_created, webhook_name, webhook_url_name): a value
    fixed per trigger URL (PHP 8.2 gave this one), used as the connector's secret."""
    token = "Ady8FAFfAbED87ROFdyMXYPpXnMn+DFswWKof70RSoY="
    data = json.dumps(
        {
            "date_created": "2024-05-01 10:00:00",
            "webhook_name": "post_update",
            "webhook_url_name": "sitemap",
        },
        separators=(",", ":"),
    )
    mac = hmac.new(VECTOR_SECRET.encode(), data.encode(), hashlib.sha256).digest()
    assert base64.b64encode(mac).decode() == token
    connector = Connector(name="wp", cms="wp-webhooks", signature="static")
    request = with_headers(sample("wp-webhooks", "post-update"), x_wp_webhook_signature=token)

    assert verdict(connector, request, (token,)) is None
    assert verdict(connector, request, (VECTOR_SECRET,)) == common.WRONG_SIGNATURE


# --- every sample ------------------------------------------------------------------------------

HAS_TIMESTAMP = {"native", "ghost", "sanity", "contentful"}


@pytest.mark.parametrize(("folder", "name"), http_samples())
def test_a_sample_signed_by_its_cms_is_accepted(folder: str, name: str) -> None:
    connector = CONNECTORS[folder]
    assert verdict(connector, sign(connector, sample(folder, name))) is None


@pytest.mark.parametrize(("folder", "name"), http_samples())
def test_a_forged_sample_is_refused(folder: str, name: str) -> None:
    connector = CONNECTORS[folder]
    request = sample(folder, name)

    assert verdict(connector, sign(connector, request, OTHER_SECRET)) == common.WRONG_SIGNATURE
    if connector.cms != "strapi":  # Strapi's token does not cover the body
        signed = sign(connector, request)
        forged = Request(signed.method, signed.path, signed.headers, signed.body + b" ", NOW)
        assert verdict(connector, forged) == common.WRONG_SIGNATURE


@pytest.mark.parametrize(("folder", "name"), http_samples())
def test_a_sample_signed_with_either_active_secret_is_accepted(folder: str, name: str) -> None:
    connector, request = CONNECTORS[folder], sample(folder, name)
    rotating = (SECRET, OLD_SECRET)

    assert verdict(connector, sign(connector, request, OLD_SECRET), rotating) is None
    assert verdict(connector, sign(connector, request, SECRET), rotating) is None
    assert verdict(connector, sign(connector, request, OLD_SECRET)) == common.WRONG_SIGNATURE


@pytest.mark.parametrize(("folder", "name"), http_samples())
def test_no_signature_or_no_secret_is_refused(folder: str, name: str) -> None:
    connector, request = CONNECTORS[folder], sample(folder, name)

    assert verdict(connector, request) == common.MISSING_SIGNATURE
    assert verdict(connector, sign(connector, request), ()) == common.UNKNOWN_KEY


@pytest.mark.parametrize("folder", sorted(HAS_TIMESTAMP))
def test_a_timestamp_out_of_the_window_is_refused(folder: str) -> None:
    """A request replayed after the five minutes, or signed by a clock far ahead or behind."""
    connector = CONNECTORS[folder]
    request = next(sample(f, n) for f, n in http_samples() if f == folder)

    for offset in (-301, 301, -86_400 * 365, 86_400):
        signed = sign(connector, request, at=NOW + offset)
        assert verdict(connector, signed) == common.STALE_TIMESTAMP, offset
    for offset in (-299, 0, 299):
        assert verdict(connector, sign(connector, request, at=NOW + offset)) is None, offset


@pytest.mark.parametrize(("folder", "name"), http_samples())
def test_a_replay_in_the_window_is_accepted_and_maps_to_the_same_events(
    folder: str, name: str
) -> None:
    """No nonce store: a replay maps to events of the same versions, duplicates downstream."""
    connector = CONNECTORS[folder]
    signed = sign(connector, sample(folder, name), at=NOW - 60)

    assert verdict(connector, signed) is None
    replayed = Request(signed.method, signed.path, signed.headers, signed.body, NOW + 200)
    assert verdict(connector, replayed) is None
    assert connectors.map_request(connector, replayed) == connectors.map_request(connector, signed)


def test_the_window_is_the_connectors() -> None:
    connector = Connector(name="n", cms="native", tolerance_seconds=30)
    request = sample("native", "publish")

    assert verdict(connector, sign(connector, request, at=NOW - 31)) == common.STALE_TIMESTAMP
    assert verdict(connector, sign(connector, request, at=NOW - 29)) is None


def test_contentful_signs_the_method_path_and_signed_headers_too() -> None:
    connector = CONNECTORS["contentful"]
    signed = sign(connector, sample("contentful", "entry-publish"))
    moved = Request(signed.method, "/hooks/other", signed.headers, signed.body, NOW)
    other_topic = with_headers(signed, x_contentful_topic="ContentManagement.Entry.unpublish")
    put = Request("PUT", signed.path, signed.headers, signed.body, NOW)

    for forged in (moved, other_topic, put):
        assert verdict(connector, forged) == common.WRONG_SIGNATURE
    # A header that is not among the signed ones may change.
    assert verdict(connector, with_headers(signed, x_forwarded_for="10.0.0.1")) is None


def test_strapi_takes_the_token_with_or_without_bearer_in_its_configured_header() -> None:
    request = sample("strapi", "v5-entry-publish")
    default = CONNECTORS["strapi"]
    custom = Connector(name="s", cms="strapi", auth_header="x-webhook-token")

    assert verdict(default, with_headers(request, authorization=SECRET)) is None
    assert verdict(default, with_headers(request, authorization=f"bearer  {SECRET} ")) is None
    assert verdict(custom, with_headers(request, x_webhook_token=SECRET)) is None
    assert verdict(custom, with_headers(request, authorization=SECRET)) == common.MISSING_SIGNATURE


@pytest.mark.parametrize(
    ("folder", "header", "value", "reason"),
    [
        ("native", "x-sitemap-signature", "v1=abc", common.MALFORMED_SIGNATURE),
        ("native", "x-sitemap-signature", "t=\uff11\uff12,v1=ab", common.MALFORMED_SIGNATURE),
        ("native", "x-sitemap-signature", "t=1774000000,v1=é", common.WRONG_SIGNATURE),
        ("ghost", "x-ghost-signature", "sha512=00, t=1774000000000", common.MALFORMED_SIGNATURE),
        ("ghost", "x-ghost-signature", "", common.MALFORMED_SIGNATURE),
        ("sanity", "sanity-webhook-signature", "t=1774000000000,v2=abc", common.UNKNOWN_KEY),
        ("sanity", "sanity-webhook-signature", "v1=abc", common.MALFORMED_SIGNATURE),
        ("contentful", "x-contentful-signature", "00", common.MALFORMED_SIGNATURE),
        ("wp-webhooks", "x-wp-webhook-signature", "\x00\udcff", common.WRONG_SIGNATURE),
    ],
)
def test_a_malformed_signature_is_refused_with_its_reason(
    folder: str, header: str, value: str, reason: str
) -> None:
    request = with_headers(sample(folder, next(n for f, n in http_samples() if f == folder)))
    hostile = Request(request.method, request.path, {**request.headers, header: value}, b"{}", NOW)

    assert verdict(CONNECTORS[folder], hostile) == reason


def test_contentful_with_a_path_encodeuri_cannot_encode_is_refused() -> None:
    connector = CONNECTORS["contentful"]
    signed = sign(connector, sample("contentful", "entry-publish"))
    lone = Request(signed.method, "/hooks/\udc80", signed.headers, signed.body, NOW)

    assert verdict(connector, lone) == common.MALFORMED_SIGNATURE


def test_shopify_comes_only_from_its_partner_event_source() -> None:
    connector = CONNECTORS["shopify"]
    event = event_sample("products-update")

    assert connectors.verify_event(connector, event).accepted
    for forged in (
        {**event, "source": "aws.partner/shopify.com/999/someone-else"},
        {**event, "source": "my.app"},
        {**event, "detail-type": "orderCreated"},
        {"detail": event["detail"]},
    ):
        assert connectors.verify_event(connector, forged).reason == common.WRONG_SOURCE
    anywhere = Connector(name="s", cms="shopify")
    other = {**event, "source": "aws.partner/shopify.com/999/another-app"}
    assert connectors.verify_event(anywhere, other).accepted
    assert verdict(connector, sample("native", "publish")) == common.WRONG_SOURCE
    assert connectors.verify_event(CONNECTORS["ghost"], event).reason == common.WRONG_SOURCE


# Any code point, lone surrogates included, and the pieces signature headers are made of.
_TEXT = st.text(
    st.characters(exclude_categories=()) | st.sampled_from("=,. tv1sha256"), max_size=80
)


@settings(max_examples=300, deadline=None)
@given(
    folder=st.sampled_from(HTTP_FOLDERS),
    value=_TEXT,
    body=st.binary(max_size=200),
    path=_TEXT,
    method=_TEXT,
)
def test_hostile_input_is_refused_never_raised(
    folder: str, value: str, body: bytes, path: str, method: str
) -> None:
    connector = CONNECTORS[folder]
    headers = dict.fromkeys(
        (
            "x-sitemap-signature",
            "x-ghost-signature",
            "sanity-webhook-signature",
            "x-wp-webhook-signature",
            "authorization",
            "x-contentful-signature",
            "x-contentful-signed-headers",
            "x-contentful-timestamp",
        ),
        value,
    )
    request = Request(method, path, headers, body, NOW)

    assert connectors.verify(connector, request, (SECRET,)).reason in REASONS
    assert isinstance(connectors.map_request(connector, request), connectors.Mapped)
