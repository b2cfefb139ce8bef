"""Connectors: a CMS's own webhooks made into events of our contract.

Pure: the endpoint (and the local runtime) reads the request, calls :func:`verify`, then
:func:`map_request`, and sends what comes out. Shopify arrives through EventBridge:
:func:`verify_event` and :func:`map_event`. docs/CONNECTORS.md says what each CMS sends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from sitemap_updater.connectors import cms
from sitemap_updater.connectors.common import (
    WRONG_SOURCE,
    Mapped,
    Refusal,
    Request,
    Verdict,
    ignored,
    request,
)
from sitemap_updater.connectors.config import (
    ConfigError,
    Connector,
    ContentType,
    parse,
    parse_secret_string,
    read,
)

__all__ = [
    "ConfigError",
    "Connector",
    "ContentType",
    "Mapped",
    "Refusal",
    "Request",
    "Verdict",
    "parse",
    "parse_secret_string",
    "read",
    "request",
]

_ENCODER = msgspec.json.Encoder(decimal_format="number")
_UNSENDABLE = re.compile("[\ud800-\udfff\ufffe\uffff]")  # outside SQS's characters


def verify(connector: Connector, request: Request, secrets: Sequence[str]) -> Verdict:
    """Is this request the CMS's, signed with one of ``secrets`` (up to ``MAX_SECRETS``)?"""
    scheme = cms.HTTP.get(connector.cms)  # None: Shopify, which comes through EventBridge
    return scheme[0](request, secrets, connector) if scheme else Verdict(WRONG_SOURCE)


def map_request(connector: Connector, request: Request) -> Mapped:
    """The events a verified request stands for (call :func:`verify` first)."""
    scheme = cms.HTTP.get(connector.cms)
    if scheme is None:
        return ignored(f"cms {connector.cms!r} does not come over HTTP")
    return scheme[1](request, connector)


def verify_event(connector: Connector, event: Mapping[str, Any]) -> Verdict:
    """Is this EventBridge event from the connector's partner event source?"""
    if connector.cms != "shopify":
        return Verdict(WRONG_SOURCE)
    return cms.verify_shopify(event, connector)


def map_event(connector: Connector, event: Mapping[str, Any]) -> Mapped:
    if connector.cms != "shopify":
        return ignored(f"cms {connector.cms!r} does not come through EventBridge")
    return cms.shopify(event, connector)


def encode_event(event: Mapping[str, Any]) -> str:
    """An event as an SQS message body, its numbers exactly as decoded (the native connector
    keeps them as Decimal: a version of 38 digits stays 38 digits). A string SQS cannot carry
    as it is (a lone surrogate, U+FFFE, U+FFFF) goes as its JSON escapes, for the ingest to
    refuse with its own reason; ValueError for such a field name."""
    return _ENCODER.encode(_sendable(event)).decode("utf-8")


def _sendable(value: Any) -> Any:
    if isinstance(value, str):
        return msgspec.Raw(json.dumps(value).encode()) if _UNSENDABLE.search(value) else value
    if isinstance(value, dict):
        if any(_UNSENDABLE.search(key) for key in value):
            raise ValueError("a field name holds a character no SQS message can")
        return {key: _sendable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_sendable(item) for item in value]
    return value
