"""Webhook Lambda, behind its function URL: ``POST /hooks/<name>`` from a CMS, or a partner
event source's event (Shopify) from EventBridge. Parse, call the one use case, answer."""

from __future__ import annotations

import base64
import json
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

import sitemap_updater.usecases.webhook  # noqa: F401 - loaded at init (bootstrap.py)
from sitemap_updater.bootstrap import App, app
from sitemap_updater.connectors import request
from sitemap_updater.observability import logged
from sitemap_updater.usecases.webhook import Answer, ReceiveWebhook


@logged
def handler(event: dict[str, Any], context: LambdaContext, app_: App | None = None) -> Any:
    receive = (app_ or app()).receive_webhook
    if "detail-type" in event:
        receive.from_eventbridge(event, str(event.get("id")))
        return None
    answer = _answer(receive, event, context.aws_request_id)
    return {
        "statusCode": answer.status,
        "headers": {"content-type": "application/json"},
        "body": json.dumps(answer.body),
    }


def _answer(receive: ReceiveWebhook, event: dict[str, Any], request_id: str) -> Answer:
    headers = event.get("headers") or {}
    raw = event.get("body") or ""
    encoded = bool(event.get("isBase64Encoded"))
    # Refused on the declared length, then on the bytes the text can hold, before decoding.
    declared = int(headers["content-length"]) if headers.get("content-length", "").isdigit() else 0
    refused = receive.too_large(max(declared, len(raw) * 3 // 4 if encoded else len(raw)))
    if refused is not None:
        return refused
    body = base64.b64decode(raw) if encoded else raw.encode("utf-8", "surrogatepass")
    context = event["requestContext"]
    query = event.get("rawQueryString")
    path = event["rawPath"] + (f"?{query}" if query else "")
    received = request(context["http"]["method"], path, headers, body, context["timeEpoch"] / 1000)
    return receive(received, request_id)
