"""The webhook endpoint's use case and handler, over every CMS sample: the answer (401, 2xx,
never 410), what reaches the ingest queue and what its dead-letter queue."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from sitemap_updater import connectors
from sitemap_updater.connectors import Connector, Request
from sitemap_updater.domain.errors import InvalidEvent, RetryableError
from sitemap_updater.domain.events import parse_body
from sitemap_updater.domain.urls import Site
from sitemap_updater.handlers import webhook as handler_module
from sitemap_updater.observability import Metric
from sitemap_updater.usecases import webhook
from sitemap_updater.usecases.webhook import ReceiveWebhook
from tests.unit.test_connectors_signing import (
    CONNECTORS,
    NOW,
    OTHER_SECRET,
    SECRET,
    event_sample,
    http_samples,
    sample,
    sign,
)

CONNECTOR_OF = {"wordpress": "wordpress"}  # a folder's connector, where it is not its cms
# Samples that hold no page change the connector handles: 200, nothing sent.
IGNORED = {
    ("ghost", "tag-added"),
    ("ghost", "post-added-draft"),
    ("wp-webhooks", "login-user"),
    ("wp-webhooks", "attachment-update"),
    ("strapi", "media-create"),
    ("contentful", "asset-publish"),
    ("contentful", "entry-auto-save"),
    ("strapi", "v5-entry-update-draft"),
    ("sanity", "update-author"),
    ("sanity", "update-draft"),
    ("native", "empty"),
}


@dataclass
class Inbox:
    sent: list[str] = field(default_factory=list)
    dead: list[tuple[str, str]] = field(default_factory=list)
    fail: bool = False

    def send(self, bodies: Sequence[str]) -> None:
        if self.fail:
            raise RetryableError("throttled")
        self.sent.extend(bodies)

    def dead_letter(self, body: str, code: str, reason: str, source_message_id: str) -> None:
        self.dead.append((code, source_message_id))


class Secrets:
    def values(self, connector: Connector) -> tuple[str, ...]:
        return connector.secrets


@pytest.fixture
def inbox() -> Inbox:
    return Inbox()


@pytest.fixture
def receive(inbox: Inbox) -> ReceiveWebhook:
    return ReceiveWebhook(CONNECTORS, Secrets(), inbox, max_body_bytes=262_144)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    monkeypatch.setattr(
        webhook.metrics, "add_metric", lambda name, unit, value: names.extend([name] * value)
    )
    return names


def signed(folder: str, name: str, secret: str = SECRET, at: float = NOW) -> Request:
    connector = CONNECTORS[CONNECTOR_OF.get(folder, folder)]
    request = sample(folder, name)
    return sign(
        connector, Request("POST", request.path, request.headers, request.body, NOW), secret, at
    )


@pytest.mark.parametrize(("folder", "name"), http_samples())
def test_a_signed_sample_is_answered_2xx_and_its_events_queued(
    folder: str, name: str, receive: ReceiveWebhook, inbox: Inbox
) -> None:
    answer = receive(signed(folder, name), "r1")
    if (folder, name) in IGNORED:
        assert (answer.status, inbox.sent, inbox.dead) == (200, [], [])
        return
    assert answer.status == 202
    assert len(inbox.sent) + len(inbox.dead) >= 1
    assert answer.body == {"events": len(inbox.sent), "dead_lettered": len(inbox.dead)}
    for body in inbox.sent:
        assert json.loads(body)["type"] in ("publish", "unpublish")


@pytest.mark.parametrize(("folder", "name"), http_samples())
def test_a_forged_sample_is_401_counted_and_sends_nothing(
    folder: str, name: str, receive: ReceiveWebhook, inbox: Inbox, counted: list[str]
) -> None:
    answer = receive(signed(folder, name, secret=OTHER_SECRET), "r1")
    assert answer.status == 401
    assert (inbox.sent, inbox.dead) == ([], [])
    assert counted == [Metric.WEBHOOKS_REFUSED]


@pytest.mark.parametrize("folder", ["native", "ghost", "sanity", "contentful"])
def test_a_stale_signature_is_401(folder: str, receive: ReceiveWebhook, inbox: Inbox) -> None:
    """The CMSes whose signatures carry a time; an hour old is outside every window."""
    first = next(name for f, name in http_samples() if f == folder)
    assert receive(signed(folder, first, at=NOW - 3600), "r1").status == 401
    assert inbox.sent == []


def test_a_replayed_request_sends_the_same_events_again(
    receive: ReceiveWebhook, inbox: Inbox
) -> None:
    """No nonce store: the replay's events carry the first one's versions, duplicates the
    ingest ignores (tests/integration/test_webhooks.py)."""
    request = signed("ghost", "post-published")
    receive(request, "r1")
    receive(request, "r2")
    assert len(inbox.sent) == 2
    assert inbox.sent[0] == inbox.sent[1]


def test_an_unmappable_payload_is_2xx_with_its_reason_dead_lettered(
    receive: ReceiveWebhook, inbox: Inbox
) -> None:
    answer = receive(signed("sanity", "update-no-slug"), "r9")
    assert answer.status == 202
    assert inbox.sent == []
    assert inbox.dead == [("missing_slug", "sanity:r9")]


def test_events_that_cannot_be_queued_are_503_so_the_cms_retries(
    receive: ReceiveWebhook, inbox: Inbox
) -> None:
    inbox.fail = True
    assert receive(signed("ghost", "post-published"), "r1").status == 503


def test_paths_methods_and_sizes(receive: ReceiveWebhook, inbox: Inbox) -> None:
    request = signed("native", "publish")
    elsewhere = Request("POST", "/hooks/nobody", request.headers, request.body, NOW)
    assert receive(elsewhere, "r").status == 404
    assert (
        receive(Request("POST", "/other/native", request.headers, request.body, NOW), "r").status
        == 404
    )
    assert receive(Request("GET", request.path, request.headers, b"", NOW), "r").status == 405
    large = Request("POST", request.path, request.headers, b" " * 262_145, NOW)
    assert receive(large, "r").status == 413
    assert inbox.sent == []


def test_a_large_cms_body_is_read_at_the_default_limit(inbox: Inbox) -> None:
    # WP Webhooks sends a post twice (post, post_before) and its meta twice: a page built
    # with Elementor carries its layout there, hundreds of KB over one event's 256 KiB.
    request = sample("wp-webhooks", "post-update")
    document = json.loads(request.body)
    layout = json.dumps(
        [{"elType": "section", "settings": {"html": "<p>caf\u00e9</p>" * 40}}] * 400
    )
    document["post_meta"]["_elementor_data"] = [layout]
    document["post_meta_before"] = document["post_meta"]
    body = json.dumps(document).encode()
    assert len(body) > 2 * 262_144
    large = Request("POST", request.path, request.headers, body, NOW)
    receive = ReceiveWebhook(CONNECTORS, Secrets(), inbox)

    answer = receive(sign(CONNECTORS["wp-webhooks"], large), "r")

    assert (answer.status, answer.body) == (202, {"events": 1, "dead_lettered": 0})
    assert json.loads(inbox.sent[0])["url"] == "https://www.example.com/2026/03/spring-menu/"
    too_large = Request("POST", request.path, request.headers, b" " * 6_291_457, NOW)
    assert receive(too_large, "r").status == 413


def native(body: bytes) -> Request:
    request = sample("native", "publish")
    return sign(CONNECTORS["native"], Request("POST", request.path, request.headers, body, NOW))


def test_an_event_no_sqs_message_holds_is_dead_lettered_not_retried(inbox: Inbox) -> None:
    receive = ReceiveWebhook(CONNECTORS, Secrets(), inbox)
    event = json.loads(sample("native", "publish").body)
    huge = {**event, "url": event["url"] + "2", "title": "x" * 1_100_000}

    answer = receive(native(json.dumps([event, huge]).encode()), "r")

    assert (answer.status, answer.body) == (202, {"events": 1, "dead_lettered": 1})
    assert [json.loads(sent)["url"] for sent in inbox.sent] == [event["url"]]
    assert inbox.dead == [("body_too_large", "native:r")]


def test_a_request_of_more_events_than_one_invocation_queues_is_refused_whole(
    inbox: Inbox,
) -> None:
    receive = ReceiveWebhook(CONNECTORS, Secrets(), inbox)
    event = json.loads(sample("native", "publish").body)
    lines = [json.dumps({**event, "url": f"{event['url']}/{n}"}) for n in range(1001)]

    assert receive(native("\n".join(lines).encode()), "r").status == 413
    assert receive(native("\n".join(lines[:1000]).encode()), "r").status == 202
    assert len(inbox.sent) == 1000


def test_refusals_of_one_kind_are_one_dead_letter(inbox: Inbox) -> None:
    receive = ReceiveWebhook(CONNECTORS, Secrets(), inbox)
    event = json.loads(sample("native", "publish").body)
    lines = [json.dumps(event)] + ["[1]"] * 5000 + ["{"] * 3

    answer = receive(native("\n".join(lines).encode()), "r")

    assert (answer.status, answer.body) == (202, {"events": 1, "dead_lettered": 5003})
    assert inbox.dead == [("not_an_object", "native:r"), ("malformed_json", "native:r")]


def test_characters_no_sqs_message_holds_reach_the_ingest_escaped(inbox: Inbox) -> None:
    receive = ReceiveWebhook(CONNECTORS, Secrets(), inbox)
    event = json.loads(sample("native", "publish").body)
    body = json.dumps([{**event, "title": "a\ud800b"}, {**event, "title": "\ufffe"}]).encode()

    assert receive(native(body), "r").status == 202

    assert len(inbox.sent) == 2
    assert all("\ufffe" not in sent for sent in inbox.sent)
    for sent in inbox.sent:
        sent.encode()  # no lone surrogate left
        with pytest.raises(InvalidEvent) as refused:
            parse_body(sent, Site.parse("https://www.example.com"), 262_144)
        assert refused.value.code == "invalid_title"


def test_a_refusal_never_quotes_the_payload_whole() -> None:
    key = "k" * 200_000
    body = f'{{"{key}": 1, "{key}": 2}}'.encode()

    (refusal,) = connectors.map_request(CONNECTORS["native"], native(body)).refusals

    assert refusal.code == "malformed_json"
    assert len(refusal.reason) < 400
    assert refusal.reason.endswith("more characters)")


def test_a_shopify_event_from_its_partner_source_is_queued(
    receive: ReceiveWebhook, inbox: Inbox
) -> None:
    receive.from_eventbridge(event_sample("products-update-handle"), "e1")
    (event,) = map(json.loads, inbox.sent)
    assert event["type"] == "publish"
    assert event["url"] == "https://www.example.com/products/stoneware-plate-24"


# --- the handler: a function URL's event ------------------------------------------------------


@dataclass
class Context:
    aws_request_id: str = "req-1"
    function_name: str = "webhook"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:webhook"


@dataclass
class FakeApp:
    receive_webhook: ReceiveWebhook


def url_event(request: Request, base64_body: bool = False, **headers: str) -> dict[str, Any]:
    body = base64.b64encode(request.body).decode() if base64_body else request.body.decode()
    return {
        "rawPath": request.path,
        "rawQueryString": "",
        "headers": {**request.headers, **headers},
        "body": body,
        "isBase64Encoded": base64_body,
        "requestContext": {"http": {"method": "POST"}, "timeEpoch": int(NOW * 1000)},
    }


@pytest.mark.parametrize("base64_body", [False, True])
def test_the_handler_answers_a_function_url_event(
    base64_body: bool, receive: ReceiveWebhook, inbox: Inbox
) -> None:
    event = url_event(signed("native", "publish"), base64_body)
    answer = handler_module.handler(event, Context(), FakeApp(receive))  # type: ignore[arg-type]
    assert answer["statusCode"] == 202
    assert json.loads(answer["body"]) == {"events": 1, "dead_lettered": 0}
    assert len(inbox.sent) == 1


def test_the_handler_refuses_a_large_body_by_its_declared_length(
    receive: ReceiveWebhook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handler_module.base64, "b64decode", lambda _: pytest.fail("decoded"))
    event = url_event(signed("native", "publish"), True, **{"content-length": "9999999"})
    answer = handler_module.handler(event, Context(), FakeApp(receive))  # type: ignore[arg-type]
    assert answer["statusCode"] == 413


def test_a_secret_that_cannot_be_read_is_503_not_401(inbox: Inbox, counted: list[str]) -> None:
    class Unreadable:
        def values(self, connector: Connector) -> tuple[str, ...]:
            raise RetryableError("Secrets Manager throttled")

    receive = ReceiveWebhook(CONNECTORS, Unreadable(), inbox, max_body_bytes=262_144)
    assert receive(signed("ghost", "post-published"), "r1").status == 503
    assert (inbox.sent, counted) == ([], [])


# --- the local runtime's server: POST /hooks/<name> -------------------------------------------


def test_the_local_server_serves_the_hooks(receive: ReceiveWebhook, inbox: Inbox) -> None:
    import http.client
    import time

    from sitemap_updater.local.server import SiteServer

    server = SiteServer(None, "bucket", webhook=receive).start()  # type: ignore[arg-type]
    host, port = server.url.removeprefix("http://").split(":")
    try:
        request = signed("native", "publish", at=time.time())
        headers = {"X-Sitemap-Signature": request.headers["x-sitemap-signature"]}
        answers = []
        for body, extra in (
            (request.body, {}),
            (b" " * 262_145, {}),
            (b"{}", {"Transfer-Encoding": "chunked"}),
            (b"{}", {"Content-Length": "\u00b2"}),  # a digit to str.isdigit(), not to int()
        ):
            connection = http.client.HTTPConnection(host, int(port), timeout=10)
            if extra:
                connection.putrequest("POST", "/hooks/native")
                for name, value in {**headers, **extra}.items():
                    connection.putheader(name, value)
                connection.endheaders()
            else:
                connection.request("POST", "/hooks/native", body, headers)
            answers.append(connection.getresponse().status)
            connection.close()
        for method in ("GET", "PUT", "DELETE"):  # as the function URL answers them
            connection = http.client.HTTPConnection(host, int(port), timeout=10)
            connection.request(method, "/hooks/native")
            answers.append(connection.getresponse().status)
            connection.close()
    finally:
        server.stop()
    assert answers == [202, 413, 411, 411, 405, 405, 405]
    assert len(inbox.sent) == 1
