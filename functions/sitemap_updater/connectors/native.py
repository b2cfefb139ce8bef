"""The native connector: our own event contract (docs/EVENTS.md), for any CMS that can shape
its payload (Directus flows, Payload hooks, DatoCMS custom payloads, Drupal, the WordPress
must-use plugin in ``wordpress/``).

Signature, ours::

    X-Sitemap-Signature: t=<Unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>

within ``tolerance_seconds`` (five minutes) of the receiver's clock, either way.

The body is one event, a JSON array of events, or JSON Lines. Each event is passed on as it
is: the ingest validates it and dead-letters it with its reason if it breaks the contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sitemap_updater.connectors.common import (
    MALFORMED_JSON,
    MALFORMED_SIGNATURE,
    MISSING_SIGNATURE,
    Mapped,
    Refusal,
    Request,
    Verdict,
    check,
    digits,
    fresh,
    hmac_sha256,
    ignored,
    loads,
    mapped,
    parameters,
)
from sitemap_updater.connectors.config import Connector

HEADER = "x-sitemap-signature"
NOT_AN_OBJECT = "not_an_object"  # the contract's own code


def signature_header(body: bytes, secret: str, t: int) -> str:
    """The header a sender puts on ``body``, signed at Unix time ``t``."""
    return f"t={t},v1={hmac_sha256(secret, f'{t}.'.encode(), body).hex()}"


def verify(request: Request, secrets: Sequence[str], connector: Connector) -> Verdict:
    header = request.headers.get(HEADER)
    if header is None:
        return Verdict(MISSING_SIGNATURE)
    given = parameters(header)
    signed_at, signature = digits(given.get("t")), given.get("v1")
    if signed_at is None or signature is None:
        return Verdict(MALFORMED_SIGNATURE)
    stamp = f"{given['t']}.".encode("ascii")
    verdict = check(signature, secrets, lambda s: hmac_sha256(s, stamp, request.body).hex())
    if not verdict.accepted:
        return verdict
    return fresh(signed_at, request.now, connector.tolerance_seconds)


def map_request(request: Request, connector: Connector) -> Mapped:
    items = list(_documents(request.body))
    if not items:
        return ignored("no events in the body")
    return mapped(_event(item) for item in items)


def _documents(body: bytes) -> list[Any]:
    """One JSON value (an array gives its elements), else JSON Lines, a bad line refused alone."""
    try:
        document = loads(body)
    except ValueError as whole:
        lines = [(number, line) for number, line in enumerate(body.splitlines(), 1) if line.strip()]
        items = [_line(line, number) for number, line in lines]
        if len(items) < 2 or not any(isinstance(item, dict) for item in items):
            return [Refusal(MALFORMED_JSON, f"the body is not JSON: {whole}")]  # not JSON Lines
        return items
    return list(document) if isinstance(document, list) else [document]


def _line(line: bytes, number: int) -> Any:
    try:
        return loads(line)
    except ValueError as exc:
        return Refusal(MALFORMED_JSON, f"line {number} is not JSON: {exc}")


def _event(item: Any) -> dict[str, Any] | Refusal:
    if isinstance(item, Refusal | dict):
        return item
    return Refusal(NOT_AN_OBJECT, f"an event must be a JSON object, not {type(item).__name__}")
