"""Invariant 9 against the bad-input corpus (``tests/corpus/bad-input/``, see its README).

Every case must be rejected with its own reason code by ``parse_body``; then the whole corpus,
mixed into batches of good events, goes through the pipeline on moto: the good events are
listed, each bad one lands in the ingest DLQ once with its reason and its body unchanged, no
function errors, every object is valid at every write and none holds anything hostile.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import parse_body
from sitemap_updater.domain.urls import Site
from tests.conftest import SITE
from tests.integration.conftest import Recorder, document, site_entries, unpublish
from tests.pipeline import Pipeline

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bad-input"
MAX_EVENT_BYTES = 262_144  # the MAX_EVENT_BYTES default the pipeline runs with
PAD = "%PAD%"
CASE_NAME = re.compile(r"^\d{3}-[a-z0-9]+(?:-[a-z0-9]+)*\.json$")
CASE_KEYS = {"expect", "why", "body", "event", "pad_to_bytes", "pad_char"}
# README "The event contract", plus invalid_url (a url that is not a string at all).
REASON_CODES = frozenset(
    [
        "malformed_json",
        "not_an_object",
        "unknown_type",
        "missing_field",
        "unknown_field",
        "invalid_url",
        "invalid_version",
        "invalid_lastmod",
        "invalid_changefreq",
        "invalid_priority",
        "invalid_image",
        "invalid_video",
        "invalid_news",
        "invalid_hreflang",
        "invalid_alternate",
        "invalid_sitemap",
        "invalid_title",
        "cluster_too_large",
        "image_not_http",
        "image_forbidden_character",
        "video_not_http",
        "alternate_foreign_host",
        "body_too_large",
        "entry_too_large",
        "url_not_absolute",
        "url_not_http",
        "url_wrong_scheme",
        "url_foreign_host",
        "url_foreign_port",
        "url_too_long",
        "url_whitespace",
        "url_control_character",
        "url_forbidden_character",
        "url_xml_illegal_character",
        "url_bidi_control",
        "url_fragment",
        "url_userinfo",
        "url_bad_percent_encoding",
        "url_dot_segment",
        "url_malformed",
    ]
)
# What SQS accepts in a message body and in a String message attribute.
NOT_SQS_TEXT = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
SQS_BATCH_BYTES = 1_048_576
WAVE = 2  # batches sent and ingested at a time
BADS_PER_BATCH = 9  # at most; good events fill each batch up to ten
# None of this may reach the bucket, in any object, in any case.
HOSTILE = [
    b"script",
    b"]]>",
    b"evil",
    b"entity",
    b"doctype",
    b"passwd",
    b"\x00",
    "\u202e".encode(),
    "\ufffd".encode(),
]
OBJECT_KEY = re.compile(r"^(robots\.txt|sitemap\.xml|sitemap-[a-z0-9-]+\.xml(\.gz)?)$")


@dataclass(frozen=True)
class Case:
    name: str
    expect: str
    why: str
    body: str
    raw: dict[str, Any]


def _body(raw: dict[str, Any]) -> str:
    if "event" in raw:
        return json.dumps(raw["event"])
    body: str = raw["body"]
    target = raw.get("pad_to_bytes")
    if target is None:
        return body
    char = raw.get("pad_char", " ")
    rest = len(body.replace(PAD, "").encode("utf-8"))
    count, remainder = divmod(target - rest, len(char.encode("utf-8")))
    return body.replace(PAD, char * count + " " * remainder)


def _load(path: Path) -> Case:
    raw = json.loads(path.read_bytes().decode("utf-8"))
    return Case(
        name=path.stem,
        expect=raw.get("expect", ""),
        why=raw.get("why", ""),
        body=_body(raw),
        raw=raw,
    )


CASES = [_load(path) for path in sorted(CORPUS.glob("*.json"))]
SITE_RULES = Site.parse(SITE)


def _sqs_text_problem(text: str) -> str | None:
    found = NOT_SQS_TEXT.search(text)
    return None if found is None else f"U+{ord(found.group()):04X} at {found.start()}"


# --- the corpus itself ------------------------------------------------------------------------


def test_the_corpus_is_well_formed() -> None:
    files = sorted(CORPUS.iterdir())
    assert len(CASES) >= 60
    assert [p.name for p in files if p.suffix == ".json"] == [f"{c.name}.json" for c in CASES]
    problems: list[str] = []
    for path in files:
        if not CASE_NAME.match(path.name):
            problems.append(f"{path.name}: not NNN-short-name.json")
        if not path.read_bytes().isascii():
            problems.append(f"{path.name}: not ASCII (escape hostile characters as \\uXXXX)")
    numbers = Counter(case.name[:3] for case in CASES)
    problems += [f"number {n} is used {k} times" for n, k in numbers.items() if k > 1]
    bodies = Counter(case.body for case in CASES)
    problems += [f"{c.name}: same body as another case" for c in CASES if bodies[c.body] > 1]
    for case in CASES:
        raw = case.raw
        if set(raw) - CASE_KEYS:
            problems.append(f"{case.name}: unknown keys {sorted(set(raw) - CASE_KEYS)}")
        if ("body" in raw) == ("event" in raw):
            problems.append(f"{case.name}: needs exactly one of 'body' and 'event'")
        if case.expect not in REASON_CODES:
            problems.append(f"{case.name}: {case.expect!r} is not a reason code")
        if not (case.why.endswith(".") and len(case.why) > 20):
            problems.append(f"{case.name}: 'why' must be a sentence")
        if "pad_to_bytes" in raw and (
            raw.get("body", "").count(PAD) != 1
            or len(case.body.encode("utf-8")) != raw["pad_to_bytes"]
        ):
            problems.append(f"{case.name}: pad_to_bytes needs one {PAD} in 'body'")
        if "pad_to_bytes" not in raw and ("pad_char" in raw or PAD in raw.get("body", "")):
            problems.append(f"{case.name}: {PAD}/pad_char without pad_to_bytes")
        # A body SQS would refuse can never reach the handler: hostile characters travel as
        # JSON escapes (\u0000, \ud800, \ufffe), the way a JSON encoder writes them.
        if problem := _sqs_text_problem(case.body):
            problems.append(f"{case.name}: SQS cannot carry this body ({problem})")
        if len(case.body.encode("utf-8")) > SQS_BATCH_BYTES // 2:
            problems.append(f"{case.name}: keep bodies under 512 KiB (two fit an SQS batch)")
    assert problems == []


def test_the_corpus_covers_every_category() -> None:
    expected = Counter(case.expect for case in CASES)
    envelopes = [c for c in CASES if c.body.startswith(('{"Type": "Notification"', '{"version"'))]
    # entry_too_large and cluster_too_large need the registry: tested in the ingest tests.
    registry_only = {"entry_too_large", "cluster_too_large"}
    assert {code for code in REASON_CODES if code not in registry_only} <= set(expected), (
        "every reason code an event can earn has a case"
    )
    assert len(envelopes) >= 10
    assert sum("sitemap" in json.dumps(c.raw.get("event", {})) for c in CASES) >= 6
    assert sum("pad_to_bytes" in c.raw for c in CASES) >= 3


# --- 1: parse_body rejects each case with its reason ----------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_parse_body_rejects_the_case_with_its_reason(case: Case) -> None:
    with pytest.raises(InvalidEvent) as caught:
        parse_body(case.body, SITE_RULES, MAX_EVENT_BYTES)
    rejected = caught.value
    assert rejected.code == case.expect, f"{case.why}\ngot {rejected.reason!a}"
    # The reason travels as an SQS message attribute: it must be text SQS accepts.
    assert _sqs_text_problem(rejected.reason[:1024]) is None, ascii(rejected.reason)


# --- 2: the whole corpus, mixed into good batches, through the pipeline ----------------------


def _good_events(count: int) -> tuple[list[str], dict[str, dict[str, str | None]]]:
    """``count`` good bodies (varied fields, envelopes, URLs at the edge of the rules), and the
    entries the site must end up with."""
    edge_urls = [  # (as sent, as listed)
        (f"{SITE}/good/caf\u00e9/\u00fcber", f"{SITE}/good/caf%C3%A9/%C3%BCber"),
        ("HTTPS://WWW.EXAMPLE.COM:443/good/Upper", f"{SITE}/good/Upper"),
        (f"{SITE}/good/search?q=a&page=2", f"{SITE}/good/search?q=a&page=2"),
        (f"{SITE}/good/%e2%82%ac", f"{SITE}/good/%E2%82%AC"),
        (f"{SITE}/good/emoji-\U0001f600", f"{SITE}/good/emoji-%F0%9F%98%80"),
        (f"{SITE}/good/a]b[c", f"{SITE}/good/a%5Db%5Bc"),
    ]
    longest = f"{SITE}/good/" + "x" * (2048 - len(f"{SITE}/good/"))  # exactly 2,048
    edge_urls.append((longest, longest))
    lastmods = [(None, None), ("2026-11-20", "2026-11-20")]
    lastmods.append(("2026-11-20T10:30:00+01:00", "2026-11-20T09:30:00Z"))
    priorities = [(None, None), (0, "0.0"), (0.5, "0.5"), (1, "1.0")]
    changefreqs = [None, "daily", "never"]
    bodies: list[str] = []
    expected: dict[str, dict[str, str | None]] = {}
    for n in range(count):
        if n % 13 == 7:  # an unpublish that succeeds: acknowledged, listed nowhere
            bodies.append(json.dumps(unpublish(f"/good/gone-{n}", 1)))
            continue
        sent, listed = edge_urls[n] if n < len(edge_urls) else (f"{SITE}/good/{n}", None)
        lastmod, lastmod_out = lastmods[n % len(lastmods)]
        priority, priority_out = priorities[n % len(priorities)]
        changefreq = changefreqs[n % len(changefreqs)]
        fields = {"lastmod": lastmod, "changefreq": changefreq, "priority": priority}
        event = {"type": "publish", "url": sent, "version": 1 + n % 5}
        event |= {name: value for name, value in fields.items() if value is not None}
        if n % 5 == 3:
            event = {"version": "0", "detail-type": "Page", "source": "cms", "detail": event}
        elif n % 5 == 4:
            event = {"Type": "Notification", "TopicArn": "arn", "Message": json.dumps(event)}
        bodies.append(json.dumps(event))
        expected[listed or sent] = {
            "lastmod": lastmod_out,
            "changefreq": changefreq,
            "priority": priority_out,
        }
    return bodies, expected


def _batches(bads: list[str], goods: list[str]) -> list[list[str]]:
    """Batches of exactly ten: eight or nine bad bodies around one or two good ones. The largest
    bad bodies are dealt to different batches first, so no SendMessageBatch exceeds 1 MiB."""
    dealt: list[list[str]] = [[] for _ in range(math.ceil(len(bads) / BADS_PER_BATCH))]
    for n, body in enumerate(sorted(bads, key=lambda b: -len(b.encode("utf-8")))):
        dealt[n % len(dealt)].append(body)
    spare = iter(goods)
    batches = [[*bad[:4], *(next(spare) for _ in range(10 - len(bad))), *bad[4:]] for bad in dealt]
    assert next(spare, None) is None
    for batch in batches:
        assert sum(len(body.encode("utf-8")) for body in batch) < SQS_BATCH_BYTES
    return batches


def _take_dead_letters(pipeline: Pipeline) -> list[dict[str, Any]]:
    """Read every dead letter, then delete the ingest DLQ's (as an operator would after
    looking): moto's receive costs grow with the queue's length."""
    letters = pipeline.dead_letters()
    dlq = pipeline.stack.queues["ingest"].dlq_url
    handles = [m["ReceiptHandle"] for m in letters if m["queue"] == "ingest"]
    for start in range(0, len(handles), 10):
        pipeline.sqs.delete_message_batch(
            QueueUrl=dlq,
            Entries=[
                {"Id": str(n), "ReceiptHandle": handle}
                for n, handle in enumerate(handles[start : start + 10])
            ],
        )
    return letters


def test_the_corpus_mixed_into_good_batches_fails_alone(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    bads = {case.body: case for case in CASES}
    goods, expected = _good_events(10 * math.ceil(len(bads) / BADS_PER_BATCH) - len(bads))
    batches = _batches(list(bads), goods)
    delivered: list[list[str]] = []
    ingest = pipeline.mappings["ingest"]
    invoke = ingest.handler

    def spy(event: dict[str, Any], context: Any) -> dict[str, Any]:
        delivered.append([record["body"] for record in event["Records"]])
        return invoke(event, context)

    ingest.handler = spy
    letters: list[dict[str, Any]] = []
    # In waves of a few batches, each ingested before the rebuilds run (Lambda's pollers are
    # independent; this order only keeps moto quick: its SQS scans the whole queue per message).
    for start in range(0, len(batches), WAVE):
        pipeline.send([body for batch in batches[start : start + WAVE] for body in batch])
        while ingest.poll_once():
            pass
        letters += _take_dead_letters(pipeline)
    pipeline.drain()
    letters += _take_dead_letters(pipeline)

    # Every batch mixed good and bad, and nothing was delivered twice: a bad record failed
    # alone, at once, and took no good record (or its own retry) with it.
    assert all(set(b) & set(bads) and set(b) - set(bads) for b in delivered)
    assert Counter(body for b in delivered for body in b) == Counter(goods + list(bads))
    assert pipeline.function_errors == 0

    objects = pipeline.objects()
    assert site_entries(objects) == expected

    assert Counter(letter["queue"] for letter in letters) == {"ingest": len(CASES)}
    by_body = Counter(letter["Body"] for letter in letters)
    problems = [f"{case.name}: not in the DLQ" for case in CASES if case.body not in by_body]
    for letter in letters:
        case = bads.get(letter["Body"])
        if case is None:
            problems.append(f"a dead letter with an unknown (changed?) body: {letter['Body']!a}")
            continue
        attributes = letter.get("MessageAttributes", {})
        code = attributes.get("reason_code", {}).get("StringValue")
        reason = attributes.get("reason", {}).get("StringValue", "")
        if code != case.expect or not reason.startswith(f"{case.expect}: "):
            problems.append(f"{case.name}: dead-lettered as {code!r} ({reason!a})")
        if by_body[letter["Body"]] != 1:
            problems.append(f"{case.name}: in the DLQ {by_body[letter['Body']]} times")
    assert problems == []

    assert recorder.violations == []
    assert all(OBJECT_KEY.match(key) for key in objects), sorted(objects)
    for key, body in objects.items():
        text = document(body).lower()
        assert [needle for needle in HOSTILE if needle in text] == [], key
