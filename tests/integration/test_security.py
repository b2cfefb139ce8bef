"""docs/SECURITY.md's claims about the functions at run time, on moto.

* Logs carry URLs and reasons, never a whole event body: the ingest function is given the
  whole bad-input corpus, hostile bodies made for this test and good events (one of them
  failing on a fault, as a throttled call would), and every log line it writes is read,
  from DEBUG up (the batch utility's own lines too).
* A rebuild request naming anything but a shard id reaches no S3 key.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from sitemap_updater.domain.errors import MAX_DETAIL_CHARS
from sitemap_updater.handlers import ingest, rebuild
from sitemap_updater.local.poller import FakeLambdaContext
from tests.conftest import SITE
from tests.integration.conftest import FaultInjector, Recorder, publish, unpublish
from tests.integration.test_bad_input_corpus import CASES
from tests.pipeline import Pipeline

MAX_LINE = 4096  # a URL (at most 2,048 characters) and a reason fit, with room to spare


class Logs:
    """The JSON lines the package's logger writes, and the batch utility's records."""

    def __init__(self) -> None:
        self.stream = io.StringIO()
        self.library: list[str] = []

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines()]

    def texts(self) -> list[str]:
        """Every string in every log record, and every line of the batch utility."""
        found: list[str] = list(self.library)

        def walk(value: Any) -> None:
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, dict):
                for key, item in value.items():
                    found.append(str(key))
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        for record in self.records():
            walk(record)
        return found


@pytest.fixture
def logs() -> Iterator[Logs]:
    from sitemap_updater.observability import logger

    captured = Logs()
    handler = logging.StreamHandler(captured.stream)
    handler.setFormatter(logger.registered_formatter)
    logger.addHandler(handler)
    previous = logger.log_level
    logger.setLevel("DEBUG")

    class Library(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            captured.library.append(record.getMessage())

    library_logger = logging.getLogger("aws_lambda_powertools")
    library_handler, library_level = Library(), library_logger.level
    library_logger.addHandler(library_handler)
    library_logger.setLevel(logging.DEBUG)
    yield captured
    library_logger.removeHandler(library_handler)
    library_logger.setLevel(library_level)
    logger._logger.removeHandler(handler)
    logger.setLevel(previous)


def sqs_event(bodies: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": message_id,
                "receiptHandle": f"handle-{message_id}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:ingest",
                "awsRegion": "us-east-1",
            }
            for message_id, body in bodies
        ]
    }


HOSTILE_BODIES = [  # made to be echoed: a reason quoting them must cut them short
    json.dumps({"type": "publish", "url": f"{SITE}/h1", "version": 1, "<script>" * 9000: 1}),
    '{"type": "publish", "' + "k" * 50_000 + '": 1, "' + "k" * 50_000 + '": 2}',
    json.dumps({"type": "publish", "url": "https://" + "evil" * 400 + ".com/", "version": 1}),
]


def test_logs_carry_urls_and_reasons_but_never_an_event_body(
    pipeline: Pipeline, logs: Logs
) -> None:
    good = [publish(f"/good/{n}", 1, lastmod="2026-11-20") for n in range(6)]
    good += [publish("/good/" + "x" * (2048 - len(f"{SITE}/good/")), 1), unpublish("/gone", 1)]
    flaky = publish("/flaky", 1)  # fails once on a fault: the failure is logged too
    faults = FaultInjector(pipeline)
    # Twice: the batch's one transaction (the batch then goes one by one), then its own.
    faults.fail("TransactWriteItems", when=lambda params: "/flaky" in json.dumps(params), times=2)
    bad = [(f"bad-{case.name}", case.body) for case in CASES]
    bad += [(f"hostile-{n}", body) for n, body in enumerate(HOSTILE_BODIES)]
    messages = [(f"good-{n}", json.dumps(event)) for n, event in enumerate([*good, flaky])]
    messages += bad
    failed: list[str] = []
    for start in range(0, len(messages), 10):
        response = ingest.handler(
            sqs_event(messages[start : start + 10]),
            FakeLambdaContext("sitemap-updater-ingest"),
            app_=pipeline.app,
        )
        failed += [item["itemIdentifier"] for item in response["batchItemFailures"]]
    assert failed == [f"good-{len(good)}"]  # the fault: retried by SQS, not dead-lettered
    assert faults.fired

    texts = logs.texts()
    echoed = [mid for mid, body in messages if len(body) >= 20 and any(body in t for t in texts)]
    assert echoed == []
    lines = logs.stream.getvalue().splitlines()
    assert max(len(line) for line in lines) <= MAX_LINE
    records = logs.records()
    assert all("event" not in record for record in records)  # the Lambda event is never logged
    # Each line names its invocation; not what its function's log group already names.
    assert all({"function_request_id", "cold_start"} <= set(record) for record in records)
    repeated = {"function_name", "function_arn", "function_memory_size", "location"}
    assert not repeated & {key for record in records for key in record}

    rejected = {r["message_id"]: r for r in records if r["message"] == "event rejected"}
    assert set(rejected) == {mid for mid, _ in bad}
    expected = {f"bad-{case.name}": case.expect for case in CASES}
    for message_id, record in rejected.items():
        assert record["level"] == "WARNING"
        assert record["reason"].startswith(f"{record['reason_code']}: ")
        assert len(record["reason"]) <= len(record["reason_code"]) + MAX_DETAIL_CHARS + 40
        if message_id in expected:
            assert record["reason_code"] == expected[message_id]
    assert {rejected[f"hostile-{n}"]["reason_code"] for n in range(3)} == {
        "unknown_field",
        "malformed_json",
        "url_malformed",  # a 1,600-character label: no DNS name
    }

    ingested = {r["url"]: r["outcome"] for r in records if r["message"] == "event ingested"}
    assert ingested == {event["url"]: "applied" for event in good}
    failures = [text for text in logs.library if "Record processing exception" in text]
    assert len(failures) == 1
    assert "injected fault in TransactWriteItems" in failures[0]


SAFE_KEY = re.compile(r"(robots\.txt|sitemap\.xml|sitemap-pages-[0-9]{5}\.xml\.gz)")


def test_a_rebuild_request_for_anything_but_a_shard_id_reaches_no_s3_key(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    pipeline.send_events([publish("/p", 1)])
    pipeline.drain()
    recorder.reset()
    shards = ["../../robots", "pages-00001/../../x", "/pages-00001", "pages-00001\n", "PAGES-1"]
    records = [
        {
            "messageId": f"m{n}",
            "receiptHandle": f"r{n}",
            "body": json.dumps({"shard": shard}),
            "attributes": {"MessageGroupId": f"g{n}", "ApproximateReceiveCount": "1"},
            "messageAttributes": {},
            "md5OfBody": "",
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:rebuild.fifo",
            "awsRegion": "us-east-1",
        }
        for n, shard in enumerate(shards)
    ]
    rebuild.handler({"Records": records}, FakeLambdaContext("rebuild"), app_=pipeline.app)
    keys = [params["Key"] for _name, params in recorder.calls if "Key" in params]
    s3_keys = [key for key in keys if isinstance(key, str)]
    assert [key for key in s3_keys if not SAFE_KEY.fullmatch(key)] == []
    assert recorder.puts == []
