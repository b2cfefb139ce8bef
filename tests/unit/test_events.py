"""The event contract: parsing, envelopes, normalisation and every rejection (invariant 9)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import msgspec
import pytest

from sitemap_updater.domain.dates import normalise_w3c
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import (
    CHANGEFREQS,
    PageChange,
    Publish,
    Unpublish,
    decode,
    event_json_schema,
    parse_body,
    parse_event,
)
from sitemap_updater.domain.urls import Site

SITE = Site.parse("https://www.example.com")
URL = "https://www.example.com/news/2026/launch"
MAX_BYTES = 256 * 1024


def publish(**fields: Any) -> dict[str, Any]:
    return {"type": "publish", "url": URL, "version": 7, **fields}


def unpublish(**fields: Any) -> dict[str, Any]:
    return {"type": "unpublish", "url": URL, "version": 8, **fields}


def body(document: Any) -> str:
    return json.dumps(document)


def parsed(document: Any) -> PageChange:
    return parse_body(body(document), SITE, MAX_BYTES)


def rejection(text: str, max_bytes: int = MAX_BYTES) -> InvalidEvent:
    with pytest.raises(InvalidEvent) as caught:
        parse_body(text, SITE, max_bytes)
    return caught.value


# --- the happy paths --------------------------------------------------------------------------


def test_publish_with_every_field() -> None:
    change = parse_body(
        '{"type":"publish","url":"https://www.example.com/news/2026/launch","version":7,'
        '"lastmod":"2026-11-20T09:30:00Z","changefreq":"weekly","priority":0.6}',
        SITE,
        MAX_BYTES,
    )
    assert change == PageChange(
        url=URL,
        version=Decimal(7),
        entry=SitemapEntry(
            url=URL, lastmod="2026-11-20T09:30:00Z", changefreq="weekly", priority="0.6"
        ),
    )
    assert change.live


def test_publish_with_only_the_required_fields() -> None:
    change = parsed(publish())
    assert change.entry == SitemapEntry(url=URL)
    assert change.live


def test_optional_fields_may_be_null() -> None:
    change = parsed(publish(lastmod=None, changefreq=None, priority=None))
    assert change.entry == SitemapEntry(url=URL)


def test_unpublish() -> None:
    change = parse_body(
        '{"type":"unpublish","url":"https://www.example.com/news/2026/launch","version":8}',
        SITE,
        MAX_BYTES,
    )
    assert change == PageChange(url=URL, version=Decimal(8), entry=None)
    assert not change.live


def test_url_is_normalised() -> None:
    change = parsed(publish(url="HTTPS://WWW.EXAMPLE.COM:443/café?q=a&b=ü"))
    expected = "https://www.example.com/caf%C3%A9?q=a&b=%C3%BC"
    assert change.url == expected
    assert change.entry is not None
    assert change.entry.url == expected


def test_field_order_and_whitespace_do_not_matter() -> None:
    text = (
        '\n { "version" : 7 ,\t"url" : "https://www.example.com/news/2026/launch",'
        ' "type":"publish" }\n'
    )
    assert parse_body(text, SITE, MAX_BYTES) == parsed(publish())


# --- envelopes --------------------------------------------------------------------------------


def eventbridge(detail: Any) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
        "detail-type": "Page Published",
        "source": "cms",
        "account": "111122223333",
        "time": "2026-11-20T09:30:00Z",
        "region": "eu-west-1",
        "resources": [],
        "detail": detail,
    }


def sns(message: str) -> dict[str, Any]:
    return {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": "arn:aws:sns:eu-west-1:111122223333:cms",
        "Message": message,
        "Timestamp": "2026-11-20T09:30:00.000Z",
        "SignatureVersion": "1",
    }


@pytest.mark.parametrize(
    "wrap",
    [
        pytest.param(lambda event: event, id="bare"),
        pytest.param(eventbridge, id="eventbridge"),
        pytest.param(lambda event: sns(json.dumps(event)), id="sns"),
        pytest.param(lambda event: sns(json.dumps(eventbridge(event))), id="sns-eventbridge"),
    ],
)
@pytest.mark.parametrize("event", [publish(priority=0.6), unpublish()], ids=["publish", "unpub"])
def test_every_envelope_gives_the_same_change(wrap: Any, event: dict[str, Any]) -> None:
    assert parsed(wrap(event)) == parsed(event)


@pytest.mark.parametrize(
    ("document", "code"),
    [
        pytest.param(sns("not json"), "malformed_json", id="sns-message-not-json"),
        pytest.param(sns('{"type": NaN}'), "malformed_json", id="sns-message-nan"),
        pytest.param(sns("[1, 2]"), "not_an_object", id="sns-message-array"),
        pytest.param(sns('"text"'), "not_an_object", id="sns-message-string"),
        pytest.param(
            sns(json.dumps(publish(url="https://evil.example.net/"))),
            "url_foreign_host",
            id="sns-bad-event",
        ),
        pytest.param(eventbridge([publish()]), "not_an_object", id="eventbridge-detail-array"),
        pytest.param(eventbridge(None), "not_an_object", id="eventbridge-detail-null"),
        pytest.param(
            eventbridge(publish(version=-1)), "invalid_version", id="eventbridge-bad-event"
        ),
        # half an envelope is no envelope: its keys are unknown fields of an event
        pytest.param({**publish(), "detail": {}}, "unknown_field", id="detail-without-type"),
        pytest.param(
            {"Type": "Notification", "Message": publish()}, "missing_field", id="sns-message-object"
        ),
    ],
)
def test_envelope_faults(document: Any, code: str) -> None:
    assert rejection(body(document)).code == code


# --- the rejection matrix ---------------------------------------------------------------------

P = "https://www.example.com/page"


def case(name: str, text: str, code: str) -> Any:
    return pytest.param(text, code, id=name)


def event_case(name: str, document: Any, code: str) -> Any:
    return pytest.param(body(document), code, id=name)


REJECTIONS = [
    # malformed JSON
    case("empty", "", "malformed_json"),
    case("not-json", "publish https://www.example.com/", "malformed_json"),
    case("truncated", '{"type":"publish","url":"' + P + '"', "malformed_json"),
    case("trailing-garbage", body(publish()) + "x", "malformed_json"),
    case("single-quotes", "{'type':'publish'}", "malformed_json"),
    case("nan-version", '{"type":"publish","url":"' + P + '","version":NaN}', "malformed_json"),
    case("infinity", '{"type":"publish","url":"' + P + '","version":Infinity}', "malformed_json"),
    case(
        "minus-infinity",
        '{"type":"publish","url":"' + P + '","version":-Infinity}',
        "malformed_json",
    ),
    case("nan-priority", body(publish())[:-1] + ',"priority":NaN}', "malformed_json"),
    case("deep-nesting", "[" * 100_000 + "]" * 100_000, "malformed_json"),
    # Valid JSON, too long for Python's int: refused by the field's rule.
    case(
        "huge-integer",
        '{"type":"publish","url":"' + P + '","version":' + "9" * 5000 + "}",
        "invalid_version",
    ),
    case(
        "huge-priority",
        body(publish())[:-1] + ',"priority":' + "9" * 5000 + "}",
        "invalid_priority",
    ),
    # not an object
    case("array", "[]", "not_an_object"),
    case("array-of-event", body([publish()]), "not_an_object"),
    case("string", '"publish"', "not_an_object"),
    case("number", "7", "not_an_object"),
    case("null", "null", "not_an_object"),
    case("boolean", "true", "not_an_object"),
    # type
    event_case("type-missing", {"url": P, "version": 1}, "missing_field"),
    event_case("empty-object", {}, "missing_field"),
    event_case("type-unknown", publish(type="delete"), "unknown_type"),
    event_case("type-capitalised", publish(type="Publish"), "unknown_type"),
    event_case("type-number", publish(type=1), "unknown_type"),
    event_case("type-null", publish(type=None), "unknown_type"),
    # url
    event_case("url-missing", {"type": "publish", "version": 1}, "missing_field"),
    event_case("unpublish-url-missing", {"type": "unpublish", "version": 1}, "missing_field"),
    event_case("url-empty", publish(url=""), "invalid_url"),
    event_case("url-number", publish(url=42), "invalid_url"),
    event_case("url-null", publish(url=None), "invalid_url"),
    event_case("url-object", publish(url={"href": P}), "invalid_url"),
    event_case("url-relative", publish(url="/page"), "url_not_absolute"),
    event_case("url-ftp", publish(url="ftp://www.example.com/page"), "url_not_http"),
    event_case("url-http", publish(url="http://www.example.com/page"), "url_wrong_scheme"),
    event_case("url-host", publish(url="https://evil.example.net/page"), "url_foreign_host"),
    event_case("url-port", publish(url="https://www.example.com:8443/"), "url_foreign_port"),
    event_case("url-raw-too-long", publish(url=P + "a" * 2048), "url_too_long"),
    event_case("url-encoded-too-long", publish(url=P + "/" + "ü" * 400), "url_too_long"),
    event_case("url-space", publish(url=P + " x"), "url_whitespace"),
    event_case("url-nbsp", publish(url=P + "\u00a0"), "url_whitespace"),
    event_case("url-tab", publish(url=P + "\t"), "url_whitespace"),
    event_case("url-newline", publish(url=P + "\n"), "url_whitespace"),
    event_case("url-nul", publish(url=P + "\x00"), "url_control_character"),
    event_case("url-u0085", publish(url=P + "\x85"), "url_control_character"),
    event_case("url-lt", publish(url=P + "<x"), "url_forbidden_character"),
    event_case("url-gt", publish(url=P + ">x"), "url_forbidden_character"),
    event_case("url-double-quote", publish(url=P + '"x'), "url_forbidden_character"),
    event_case("url-backslash", publish(url=P + "\\x"), "url_forbidden_character"),
    event_case("url-lone-surrogate", publish(url=P + "\ud800"), "url_xml_illegal_character"),
    event_case("url-ufffe", publish(url=P + "\ufffe"), "url_xml_illegal_character"),
    event_case("url-u202e", publish(url=P + "\u202e"), "url_bidi_control"),
    event_case("url-u2066", publish(url=P + "\u2066"), "url_bidi_control"),
    event_case("url-fragment", publish(url=P + "#section"), "url_fragment"),
    event_case("url-userinfo", publish(url="https://a:b@www.example.com/"), "url_userinfo"),
    event_case("url-percent", publish(url=P + "%g0"), "url_bad_percent_encoding"),
    event_case("url-dot-segment", publish(url=P + "/../admin"), "url_dot_segment"),
    event_case(
        "unpublish-url-fault", unpublish(url="https://evil.example.net/"), "url_foreign_host"
    ),
    # version
    event_case("version-missing", {"type": "publish", "url": P}, "missing_field"),
    event_case("unpublish-version-missing", {"type": "unpublish", "url": P}, "missing_field"),
    event_case("version-string", publish(version="7"), "invalid_version"),
    event_case("version-true", publish(version=True), "invalid_version"),
    event_case("version-false", publish(version=False), "invalid_version"),
    event_case("version-null", publish(version=None), "invalid_version"),
    event_case("version-array", publish(version=[7]), "invalid_version"),
    event_case("version-negative", publish(version=-1), "invalid_version"),
    event_case("version-negative-fraction", publish(version=-0.5), "invalid_version"),
    event_case("version-39-digits", publish(version=10**38), "invalid_version"),
    case(
        "version-39-digit-fraction", body(publish())[:-2] + "1." + "0" * 38 + "}", "invalid_version"
    ),
    case("version-too-big-for-dynamodb", body(publish())[:-2] + "1e400}", "invalid_version"),
    case("version-too-small-for-dynamodb", body(publish())[:-2] + "1e-400}", "invalid_version"),
    event_case("unpublish-version-negative", unpublish(version=-8), "invalid_version"),
    # lastmod
    event_case("lastmod-year", publish(lastmod="2026"), "invalid_lastmod"),
    event_case("lastmod-year-month", publish(lastmod="2026-11"), "invalid_lastmod"),
    event_case("lastmod-no-zone", publish(lastmod="2026-11-20T09:30:00"), "invalid_lastmod"),
    event_case("lastmod-feb-30", publish(lastmod="2026-02-30"), "invalid_lastmod"),
    event_case("lastmod-hour-24", publish(lastmod="2026-11-20T24:00:00Z"), "invalid_lastmod"),
    event_case("lastmod-garbage", publish(lastmod="yesterday"), "invalid_lastmod"),
    event_case("lastmod-number", publish(lastmod=1_763_631_000), "invalid_lastmod"),
    event_case("lastmod-empty", publish(lastmod=""), "invalid_lastmod"),
    # priority
    event_case("priority-above-1", publish(priority=1.1), "invalid_priority"),
    event_case("priority-just-above-1", publish(priority=1.0000001), "invalid_priority"),
    event_case("priority-negative", publish(priority=-0.1), "invalid_priority"),
    event_case("priority-2", publish(priority=2), "invalid_priority"),
    event_case("priority-string", publish(priority="0.5"), "invalid_priority"),
    event_case("priority-bool", publish(priority=True), "invalid_priority"),
    case(
        "priority-too-precise", body(publish())[:-1] + ',"priority":1e-100000}', "invalid_priority"
    ),
    # changefreq
    event_case("changefreq-capitalised", publish(changefreq="Weekly"), "invalid_changefreq"),
    event_case("changefreq-upper", publish(changefreq="WEEKLY"), "invalid_changefreq"),
    event_case("changefreq-unknown", publish(changefreq="fortnightly"), "invalid_changefreq"),
    event_case("changefreq-padded", publish(changefreq=" weekly"), "invalid_changefreq"),
    event_case("changefreq-empty", publish(changefreq=""), "invalid_changefreq"),
    event_case("changefreq-number", publish(changefreq=7), "invalid_changefreq"),
    # unknown fields
    event_case("extra-field", publish(headline="Launch"), "unknown_field"),
    event_case("title-not-text", publish(title=7), "invalid_title"),
    event_case("title-too-long", publish(title="t" * 257), "invalid_title"),
    event_case("field-wrong-case", publish(Priority=0.5), "unknown_field"),
    event_case("unpublish-lastmod", unpublish(lastmod="2026-11-20"), "unknown_field"),
    event_case("unpublish-priority", unpublish(priority=0.5), "unknown_field"),
    event_case("id-c1-control", publish(id="a\u0085b"), "invalid_id"),
    # A number with a fraction is no text, whichever decoder reads it.
    case("title-fraction", body(publish())[:-1] + ',"title":1.5}', "invalid_title"),
    case("id-fraction", body(publish())[:-1] + ',"id":1.5,"lastmod":null}', "invalid_id"),
    event_case(
        "host-two-trailing-dots", publish(url="https://www.example.com../a"), "url_malformed"
    ),
]


@pytest.mark.parametrize(("text", "code"), REJECTIONS)
def test_parse_body_rejects_with_a_specific_code(text: str, code: str) -> None:
    error = rejection(text)
    assert error.code == code
    assert error.detail


def test_each_rejection_says_what_was_wrong() -> None:
    assert "version" in rejection(body(publish(version="7"))).detail
    assert "headline" in rejection(body(publish(headline="x"))).detail
    assert "url" in rejection(body({"type": "publish", "version": 1})).detail
    assert "type" in rejection(body({"url": P, "version": 1})).detail


# --- body size ----------------------------------------------------------------------------------


def test_body_size_limit_is_inclusive() -> None:
    text = body(publish())
    assert parse_body(text, SITE, len(text)).url == URL
    assert rejection(text, max_bytes=len(text) - 1).code == "body_too_large"


def test_body_size_is_counted_in_utf8_bytes_not_characters() -> None:
    text = json.dumps(publish(url=P + "/" + "日本" * 100), ensure_ascii=False)
    size = len(text.encode("utf-8"))
    assert size == len(text) + 400  # 200 characters of three bytes each
    assert rejection(text, max_bytes=len(text)).code == "body_too_large"
    assert rejection(text, max_bytes=size - 1).code == "body_too_large"
    assert parse_body(text, SITE, size).url.startswith(P + "/%E6%97%A5%E6%9C%AC")


def test_body_size_is_checked_before_parsing() -> None:
    assert rejection("x" * 1001, max_bytes=1000).code == "body_too_large"


def test_body_with_a_lone_surrogate_is_measured_not_crashed_on() -> None:
    text = '{"type":"publish","url":"' + P + '\ud800","version":1}'
    assert rejection(text).code == "url_xml_illegal_character"
    assert rejection(text, max_bytes=10).code == "body_too_large"


# --- version ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "version"),
    [
        ("0", Decimal(0)),
        ("7", Decimal(7)),
        ("1.5", Decimal("1.5")),
        ("1763631000123", Decimal(1763631000123)),
        ("9" * 38, Decimal("9" * 38)),
        (
            "12345678901234567890123456789012345678",
            Decimal("12345678901234567890123456789012345678"),
        ),
        (
            "0.12345678901234567890123456789012345678",
            Decimal("0.12345678901234567890123456789012345678"),
        ),
        ("9.9e125", Decimal("9.9e125")),
        ("1e-130", Decimal("1e-130")),
    ],
)
def test_version_keeps_its_exact_value(literal: str, version: Decimal) -> None:
    change = parse_body(body(publish())[:-2] + literal + "}", SITE, MAX_BYTES)
    assert change.version == version
    assert str(change.version) == str(version)


def test_a_number_that_is_not_an_object_is_called_a_number() -> None:
    for text in ("1.5", "7", "1e3"):
        assert rejection(text).detail == "event must be a JSON object, got a number"


def test_versions_compare_numerically() -> None:
    older = parsed(publish(version=9)).version
    newer = parsed(publish(version=10)).version
    assert older < newer
    assert parsed(publish(version=7)).version == parsed(publish(version=7.0)).version


# --- lastmod ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("2026-11-20", "2026-11-20"),
        ("2024-02-29", "2024-02-29"),
        ("0001-01-01", "0001-01-01"),
        ("2026-11-20T09:30:00Z", "2026-11-20T09:30:00Z"),
        ("2026-11-20T09:30Z", "2026-11-20T09:30:00Z"),
        ("2026-11-20T09:30:15.123456789Z", "2026-11-20T09:30:15Z"),
        ("2026-11-20T09:30:15.9Z", "2026-11-20T09:30:15Z"),
        ("2026-11-20T10:30:00+01:00", "2026-11-20T09:30:00Z"),
        ("2026-11-20T09:30:00+00:00", "2026-11-20T09:30:00Z"),
        ("2026-11-20T09:30:00-00:00", "2026-11-20T09:30:00Z"),
        ("2026-11-20T22:00-05:00", "2026-11-21T03:00:00Z"),
        ("2026-01-01T00:30:00+05:30", "2025-12-31T19:00:00Z"),
        ("0999-06-01T12:00:00Z", "0999-06-01T12:00:00Z"),
    ],
)
def test_normalise_lastmod(raw: str, normal: str) -> None:
    assert normalise_w3c(raw) == normal
    assert normalise_w3c(normal) == normal
    assert parsed(publish(lastmod=raw)).entry == SitemapEntry(url=URL, lastmod=normal)


@pytest.mark.parametrize(
    "raw",
    [
        "2026",
        "2026-11",
        "2026-11-20T09:30:00",
        "2026-11-20T09:30",
        "2026-11-20T09Z",
        "2026-02-30",
        "2025-02-29",
        "2026-13-01",
        "2026-00-10",
        "0000-01-01",
        "2026-11-20T24:00:00Z",
        "2026-11-20T24:00Z",
        "2026-11-20T09:60:00Z",
        "2026-11-20T09:30:60Z",
        "2026-11-20T09:30:00+24:00",
        "2026-11-20T09:30:00+0100",
        "2026-11-20T09:30:00.Z",
        "2026-11-20t09:30:00z",
        "2026-11-20 09:30:00Z",
        "20261120",
        "26-11-20",
        "2026-11-20\n",
        " 2026-11-20",
        "\u0662\u0660\u0662\u0666-\u0661\u0661-\u0662\u0660",  # Arabic-Indic digits
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC
        "9999-12-31T23:00:00-01:00",  # after year 9999 in UTC
        "garbage",
        "",
    ],
)
def test_normalise_lastmod_rejects(raw: str) -> None:
    with pytest.raises(ValueError, match="lastmod"):
        normalise_w3c(raw)
    assert rejection(body(publish(lastmod=raw))).code == "invalid_lastmod"


@pytest.mark.parametrize("value", [None, 20261120, 2026.11, ["2026-11-20"]])
def test_normalise_lastmod_wants_a_string(value: Any) -> None:
    with pytest.raises(ValueError, match="string"):
        normalise_w3c(value)


# --- priority and changefreq --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "text"),
    [
        ("1", "1.0"),
        ("1.0", "1.0"),
        ("1.00", "1.0"),
        ("0", "0.0"),
        ("0.0", "0.0"),
        ("-0.0", "0.0"),
        ("0.50", "0.5"),
        ("0.5", "0.5"),
        ("5e-1", "0.5"),
        ("0.123", "0.123"),
        ("0.3333333333333333", "0.3333333333333333"),
        ("1e-17", "0.00000000000000001"),
    ],
)
def test_priority_is_a_canonical_decimal(literal: str, text: str) -> None:
    change = parse_body(body(publish())[:-1] + f',"priority":{literal}}}', SITE, MAX_BYTES)
    assert change.entry is not None
    assert change.entry.priority == text


def test_priority_from_python_floats() -> None:
    change = parse_event(publish(priority=0.1), SITE)
    assert change.entry is not None
    assert change.entry.priority == "0.1"


@pytest.mark.parametrize("changefreq", CHANGEFREQS)
def test_every_changefreq_is_accepted(changefreq: str) -> None:
    change = parsed(publish(changefreq=changefreq))
    assert change.entry == SitemapEntry(url=URL, changefreq=changefreq)


def test_changefreqs_are_the_protocols() -> None:
    assert CHANGEFREQS == ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")


# --- parse_event ----------------------------------------------------------------------------


@pytest.mark.parametrize("document", [[], "x", 1, 1.5, None, True, b"{}"])
def test_parse_event_wants_a_dict(document: Any) -> None:
    with pytest.raises(InvalidEvent) as caught:
        parse_event(document, SITE)
    assert caught.value.code == "not_an_object"


def test_parse_event_checks_python_numbers_too() -> None:
    for bad in (float("nan"), float("inf"), -1.0, Decimal("NaN"), Decimal("-Infinity")):
        with pytest.raises(InvalidEvent) as caught:
            parse_event(publish(version=bad), SITE)
        assert caught.value.code == "invalid_version"
        with pytest.raises(InvalidEvent) as caught:
            parse_event(publish(priority=bad), SITE)
        assert caught.value.code == "invalid_priority"
    assert parse_event(publish(version=Decimal("7.25")), SITE).version == Decimal("7.25")


def test_models_are_frozen_and_forbid_extras() -> None:
    event = msgspec.convert(publish(), Publish)
    assert event.version == 7
    with pytest.raises(AttributeError):
        event.url = "https://www.example.com/other"  # type: ignore[misc]
    assert Publish.__struct_config__.forbid_unknown_fields
    assert Unpublish.__struct_config__.forbid_unknown_fields


def test_invalid_event_carries_code_and_detail() -> None:
    error = InvalidEvent("url_fragment", "url has a #fragment")
    assert error.code == "url_fragment"
    assert error.detail == "url has a #fragment"
    assert error.reason == str(error) == "url_fragment: url has a #fragment"


# --- the JSON Schema of the contract --------------------------------------------------------

_SCHEMA_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    assert ref.startswith("#/$defs/")
    return schema["$defs"][ref.removeprefix("#/$defs/")]


def _branch(schema: dict[str, Any], event_type: str) -> dict[str, Any]:
    branches = [_resolve(schema, node) for node in schema["oneOf"]]
    matching = [b for b in branches if b["properties"]["type"].get("const") == event_type]
    assert len(matching) == 1
    return matching[0]


def test_event_json_schema_is_a_2020_12_schema() -> None:
    schema = event_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("/events/schema.json")
    assert schema["title"]
    assert json.loads(json.dumps(schema)) == schema  # plain JSON all the way down
    for node in _walk(schema):
        if "type" in node and not isinstance(node["type"], dict):  # "type" may be a property
            types = node["type"] if isinstance(node["type"], list) else [node["type"]]
            assert set(types) <= _SCHEMA_TYPES, node
        if "$ref" in node:
            assert _resolve(schema, node)
        if "pattern" in node:
            re.compile(node["pattern"])
        for key in ("required", "enum", "oneOf", "anyOf", "examples"):
            if key in node:
                assert isinstance(node[key], list), key
        for key in ("minimum", "maximum", "minLength", "maxLength"):
            if key in node:
                assert isinstance(node[key], int | float), key


def test_event_json_schema_discriminates_on_type() -> None:
    schema = event_json_schema()
    assert len(schema["oneOf"]) == 2
    discriminator = schema["discriminator"]
    assert discriminator["propertyName"] == "type"
    assert set(discriminator["mapping"]) == {"publish", "unpublish"}
    for event_type, ref in discriminator["mapping"].items():
        assert _resolve(schema, {"$ref": ref})["properties"]["type"]["const"] == event_type


def test_event_json_schema_describes_publish() -> None:
    branch = _branch(event_json_schema(), "publish")
    assert branch["type"] == "object"
    assert branch["additionalProperties"] is False
    assert set(branch["required"]) == {"type", "url", "version"}
    properties = branch["properties"]
    assert set(properties) == {
        *("type", "url", "version", "lastmod", "changefreq", "priority"),
        *("images", "videos", "news", "hreflang", "alternates", "sitemap", "title", "id"),
    }
    assert properties["url"]["type"] == "string"
    assert properties["url"]["maxLength"] == 2048
    number, time = properties["version"]["anyOf"]
    assert number == {"type": "number", "minimum": 0}
    assert time["format"] == "date-time"
    lastmod, _null = properties["lastmod"]["anyOf"]
    for example in lastmod["examples"]:
        assert re.search(lastmod["pattern"], example)
        normalise_w3c(example)
    assert not re.search(lastmod["pattern"], "2026-11")
    changefreq, _null = properties["changefreq"]["anyOf"]
    assert changefreq["enum"] == list(CHANGEFREQS)
    priority, _null = properties["priority"]["anyOf"]
    assert (priority["type"], priority["minimum"], priority["maximum"]) == ("number", 0, 1)


def test_event_json_schema_describes_unpublish() -> None:
    branch = _branch(event_json_schema(), "unpublish")
    assert branch["additionalProperties"] is False
    assert set(branch["required"]) == {"type", "version"}
    assert branch["anyOf"] == [{"required": ["url"]}, {"required": ["id"]}]
    assert set(branch["properties"]) == {"type", "url", "version", "id"}


@pytest.mark.parametrize(
    "document", [publish(), publish(lastmod="2026-11-20", priority=0.6), unpublish()]
)
def test_valid_events_fit_their_schema_branch(document: dict[str, Any]) -> None:
    branch = _branch(event_json_schema(), document["type"])
    assert set(branch["required"]) <= set(document) <= set(branch["properties"])
    parsed(document)


# --- what an outside probe found ----------------------------------------------------------


def test_an_apostrophe_in_a_url_is_kept_and_escaped_in_the_xml() -> None:
    from sitemap_updater.domain.render import render_entry

    change = parsed(publish(url="https://www.example.com/wiki/Ender's_Game"))
    assert change.url == "https://www.example.com/wiki/Ender's_Game"
    assert change.entry is not None
    assert "<loc>https://www.example.com/wiki/Ender&apos;s_Game</loc>" in render_entry(change.entry)


def test_one_language_given_two_hrefs_is_refused_with_a_reason() -> None:
    alternates = [
        {"hreflang": "de", "href": "https://www.example.com/de/a"},
        {"hreflang": "DE", "href": "https://www.example.com/de/b"},
    ]
    error = rejection(body(publish(alternates=alternates)))
    assert error.code == "invalid_alternate"
    assert "de is given two hrefs" in error.detail
    same_twice = [alternates[0], {"hreflang": "de", "href": "https://WWW.example.com/de/a"}]
    assert parsed(publish(alternates=same_twice)).alternates == (
        ("de", "https://www.example.com/de/a"),
    )


VIDEO = {
    "thumbnail_loc": "https://cdn.example.net/t.jpg",
    "title": "A video",
    "description": "About it",
    "content_loc": "https://cdn.example.net/v.mp4",
}


@pytest.mark.parametrize(("value", "expected"), [(60, 60), (60.0, 60), (Decimal("6E+1"), 60)])
def test_a_whole_duration_is_accepted_however_it_is_written(value: Any, expected: int) -> None:
    text = body(publish(videos=[{**VIDEO, "duration": 0}])).replace(
        '"duration": 0', f'"duration": {value}'
    )
    change = parse_body(text, SITE, MAX_BYTES)
    assert change.entry is not None
    assert change.entry.videos[0].duration == expected


@pytest.mark.parametrize("value", [60.5, 0, 28_801, "60", True])
def test_a_duration_that_is_not_a_whole_number_of_seconds_in_range_is_refused(value: Any) -> None:
    assert rejection(body(publish(videos=[{**VIDEO, "duration": value}]))).code == "invalid_video"


def _news(language: str) -> dict[str, Any]:
    return {
        "publication": {"name": "The Times", "language": language},
        "publication_date": "2026-11-20T09:30:00Z",
        "title": "Launch",
    }


@pytest.mark.parametrize(("given", "written"), [("EN", "en"), ("zh-CN", "zh-cn"), ("de", "de")])
def test_a_news_language_is_normalised_for_case_as_hreflang_is(given: str, written: str) -> None:
    change = parsed(publish(news=_news(given)))
    assert change.entry is not None
    assert change.entry.news is not None
    assert change.entry.news.publication_language == written


@pytest.mark.parametrize("language", ["english", "zh-HK", "e"])
def test_a_news_language_google_does_not_know_is_refused(language: str) -> None:
    assert rejection(body(publish(news=_news(language)))).code == "invalid_news"


@pytest.mark.parametrize("control", ["\u202e", "\u202a", "\u2066", "\u2069", "\x80", "\x9b"])
def test_text_that_a_bidi_or_c1_control_would_garble_is_refused(control: str) -> None:
    video = {**VIDEO, "title": f"harmless{control}txt.exe"}
    assert rejection(body(publish(videos=[video]))).code == "invalid_video"
    news = {**_news("en"), "title": f"Launch{control}"}
    assert rejection(body(publish(news=news))).code == "invalid_news"


def test_right_to_left_text_with_its_direction_marks_is_kept() -> None:
    title = "\u05e9\u05dc\u05d5\u05dd \u200fworld\u200e"
    change = parsed(publish(videos=[{**VIDEO, "title": title}]))
    assert change.entry is not None
    assert change.entry.videos[0].title == title


@pytest.mark.parametrize(
    "spelling",
    [
        '{"type":"publish","url":"https://www.example.com/caf\\u00e9","version":7}',
        '{"version":7,"url":"https://www.example.com/café","type":"publish"}',
        '{ "url" : "https://www.example.com/caf\\u00e9" , "type" : "publish", "version" : 7.0 }',
    ],
)
def test_every_spelling_of_one_event_is_the_same_change(spelling: str) -> None:
    assert parse_body(spelling, SITE, MAX_BYTES) == parsed(
        publish(url="https://www.example.com/caf%C3%A9")
    )


def test_a_key_given_twice_is_refused_whichever_decoder_reads_it() -> None:
    for text in (
        '{"type":"publish","url":"' + P + '","version":7,"version":8}',
        '{"type":"publish","url":"' + P + '","version" :7,"version":8}',
        '{"type":"publish","url":"' + P + '\\u00e9","version":7,"lastmod":null,"version":8}',
    ):
        error = rejection(text)
        assert (error.code, error.detail) == ("malformed_json", "not JSON: duplicate key 'version'")


@pytest.mark.parametrize("record", [False, True])
def test_a_second_type_does_not_hide_a_key_given_twice(record: bool) -> None:
    """``type`` is left out of the key count: a text holding it twice is read exactly."""
    for text, key in (
        ('{"type":"publish","type":"publish","url":"' + P + '","version":7}', "type"),
        ('{"type":"unpublish","type":"unpublish","url":"' + P + '","version":7}', "type"),
        ('{"type":"publish","url":"' + P + '","version":7,"title":"type","title":"T"}', "title"),
    ):
        (refused,) = decode([text.encode()], record=record)
        assert isinstance(refused, InvalidEvent)
        assert (refused.code, refused.detail) == (
            "malformed_json",
            f"not JSON: duplicate key '{key}'",
        )
    untyped = '{"url":"' + P + '","title":"type","title":"T"}'  # a record's type is optional
    (refused,) = decode([untyped.encode()], record=True)
    assert isinstance(refused, InvalidEvent)
    assert refused.detail == "not JSON: duplicate key 'title'"
    titled = '{"type":"publish","url":"' + P + '","version":7,"title":"type"}'
    assert parse_body(titled, SITE, MAX_BYTES).title == "type"


def test_the_table_of_nested_models_is_the_models() -> None:
    """Every model field that holds models is in NESTED (the key count and the field order
    of reasons walk it), with its model."""
    import msgspec.inspect as mi

    from sitemap_updater.domain.events import NESTED

    def held(info: Any) -> type | None:
        if isinstance(info, mi.StructType):
            return info.cls  # type: ignore[no-any-return]
        if isinstance(info, mi.Metadata):
            return held(info.type)
        inner = [held(t) for t in getattr(info, "types", ())]
        inner.append(held(info.item_type) if hasattr(info, "item_type") else None)
        return next((cls for cls in inner if cls is not None), None)

    found: dict[type, dict[str, type]] = {}
    pending = [Publish]
    while pending:
        model = pending.pop()
        for field in mi.type_info(model).fields:
            inner = held(field.type)
            if inner is not None:
                found.setdefault(model, {})[field.name] = inner
                pending.append(inner)
    assert found == NESTED
