"""IndexNow through the pipeline on moto, against an endpoint on 127.0.0.1 that records
every request: exactly the applied URLs are submitted, in requests of at most 10,000, with
retries; the key file is served from the bucket root; and a broken endpoint or queue never
holds up or fails the sitemaps."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from sitemap_updater.cli import main
from sitemap_updater.local.poller import drain
from sitemap_updater.local.server import SiteServer
from sitemap_updater.local.stack import register_stack
from tests.conftest import SITE
from tests.indexnow_endpoint import RecordingEndpoint
from tests.integration.conftest import (
    STACK,
    FaultInjector,
    PipelineFactory,
    Recorder,
    publish,
    site_entries,
    unpublish,
)
from tests.pipeline import Pipeline

KEY = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"


@pytest.fixture
def endpoint() -> Iterator[RecordingEndpoint]:
    recording = RecordingEndpoint()
    yield recording
    recording.stop()


class Sleeps(list[float]):
    """Stands in for time.sleep in the IndexNow client: records the backoff, never waits."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def pipeline(
    make_pipeline: PipelineFactory, endpoint: RecordingEndpoint, sleeps: Sleeps
) -> Pipeline:
    built = make_pipeline(INDEXNOW_KEY=KEY, INDEXNOW_ENDPOINT=endpoint.url)
    built.app.submit_indexnow.client.sleep = sleeps
    return built


def url(path: str) -> str:
    return f"{SITE}{path}"


def drain_sitemaps(pipeline: Pipeline) -> None:
    """Drive only the ingest, rebuild and index functions, as if IndexNow's did not exist."""
    mappings = [m for name, m in pipeline.mappings.items() if name != "indexnow"]
    drain(pipeline.sqs, mappings, timeout_seconds=60)


def indexnow_letters(pipeline: Pipeline) -> list[dict[str, Any]]:
    return [m for m in pipeline.dead_letters() if m["queue"] == "indexnow"]


def test_exactly_the_applied_urls_are_submitted(
    pipeline: Pipeline, endpoint: RecordingEndpoint
) -> None:
    pipeline.send_events([publish("/a", 1), publish("/b", 1), publish("/c", 2)])
    pipeline.drain()
    assert sorted(endpoint.submitted()) == [url("/a"), url("/b"), url("/c")]
    (request,) = endpoint.requests
    assert request.path == "/indexnow"
    assert request.headers["Content-Type"] == "application/json; charset=utf-8"
    assert request.body == {
        "host": "www.example.com",
        "key": KEY,
        "keyLocation": f"{SITE}/{KEY}.txt",
        "urlList": request.urls,
    }

    endpoint.requests.clear()
    pipeline.send(
        [
            json.dumps(publish("/a", 1)),  # a duplicate
            json.dumps(publish("/c", 1)),  # stale: version 2 is applied
            json.dumps({"type": "publish", "url": "https://evil.example/x", "version": 1}),
            "{not json",
            json.dumps(unpublish("/b", 2)),  # applied: crawlers should see its 404
            json.dumps(publish("/d", 1, priority=0.3)),  # applied
        ]
    )
    pipeline.drain()
    assert Counter(endpoint.submitted()) == Counter([url("/b"), url("/d")])
    assert indexnow_letters(pipeline) == []


def test_the_key_file_is_served_from_the_bucket_root(pipeline: Pipeline) -> None:
    recorder = Recorder(pipeline)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    assert recorder.puts.count(f"{KEY}.txt") == 1
    server = SiteServer(pipeline.s3, pipeline.app.settings.bucket_name).start()
    try:
        with urllib.request.urlopen(f"{server.url}/{KEY}.txt", timeout=10) as response:
            assert response.status == 200
            assert response.read() == KEY.encode()
            assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    finally:
        server.stop()
    pipeline.send_events([publish("/b", 1)])
    pipeline.drain()
    assert recorder.puts.count(f"{KEY}.txt") == 1  # written once, not per index run


def test_requests_hold_at_most_10000_urls_each_url_once(
    pipeline: Pipeline, endpoint: RecordingEndpoint
) -> None:
    urls = [url(f"/page-{n}") for n in range(10_100)]
    # Few, large messages (moto's SQS slows down with many): 5,000 URLs are ~190 KB.
    chunks = [urls[:5000], urls[5000:10_000], urls[10_000:], urls[:50]]  # the last: again
    queue = pipeline.stack.queues["indexnow"].url
    for chunk in chunks:
        pipeline.sqs.send_message(QueueUrl=queue, MessageBody=json.dumps({"urls": chunk}))
    drain(pipeline.sqs, [pipeline.mappings["indexnow"]], timeout_seconds=60)
    assert [len(request.urls) for request in endpoint.requests] == [10_000, 100]
    assert endpoint.submitted() == urls


def test_503_is_retried_with_backoff_then_succeeds(
    pipeline: Pipeline, endpoint: RecordingEndpoint, sleeps: Sleeps
) -> None:
    endpoint.answer(503, 503)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    assert [request.urls for request in endpoint.requests] == [[url("/a")]] * 3
    assert len(sleeps) == 2
    assert 0.5 <= sleeps[0] < 1.0 <= sleeps[1] < 2.0  # exponential, with jitter
    assert indexnow_letters(pipeline) == []


def test_a_403_is_retried_by_sqs_later(pipeline: Pipeline, endpoint: RecordingEndpoint) -> None:
    """Right after IndexNow is turned on the engine may not have fetched the key file yet."""
    endpoint.answer(403)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    assert len(endpoint.requests) == 2  # no immediate retry; SQS delivered it again
    assert pipeline.mappings["indexnow"].invocations == 2
    assert indexnow_letters(pipeline) == []


def test_a_rejected_request_is_dead_lettered_at_once_with_its_reason(
    pipeline: Pipeline, endpoint: RecordingEndpoint
) -> None:
    endpoint.answer(default=422)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    assert len(endpoint.requests) == 1
    (letter,) = indexnow_letters(pipeline)
    assert json.loads(letter["Body"]) == {"urls": [url("/a")]}
    attributes = letter["MessageAttributes"]
    assert attributes["reason_code"]["StringValue"] == "indexnow_rejected"
    assert "HTTP 422" in attributes["reason"]["StringValue"]


def test_a_broken_endpoint_never_holds_up_the_sitemaps(
    pipeline: Pipeline, endpoint: RecordingEndpoint, sleeps: Sleeps
) -> None:
    endpoint.answer(default=503)
    queue = pipeline.stack.queues["indexnow"]
    # Failed messages come back at once rather than after a visibility timeout.
    pipeline.sqs.set_queue_attributes(QueueUrl=queue.url, Attributes={"VisibilityTimeout": "0"})
    events = [publish("/a", 1), publish("/b", 1), unpublish("/b", 2), publish("/c", 1)]
    pipeline.send_events(events)
    drain_sitemaps(pipeline)  # the sitemaps converge without the indexnow function at all
    assert set(site_entries(pipeline.objects())) == {url("/a"), url("/c")}
    assert endpoint.requests == []
    assert pipeline.function_errors == 0

    pipeline.drain()  # now the indexnow function: it fails, SQS retries, then dead-letters
    assert set(site_entries(pipeline.objects())) == {url("/a"), url("/c")}
    (letter,) = indexnow_letters(pipeline)
    assert sorted(json.loads(letter["Body"])["urls"]) == [url("/a"), url("/b"), url("/c")]
    receives = pipeline.mappings["indexnow"].invocations
    assert receives == queue.spec.max_receive_count
    assert len(endpoint.requests) == receives * pipeline.app.submit_indexnow.client.max_attempts
    assert pipeline.function_errors == 0  # partial failures, not function errors
    assert [m for m in pipeline.dead_letters() if m["queue"] != "indexnow"] == []


def test_a_broken_indexnow_queue_never_fails_the_ingest(
    pipeline: Pipeline, endpoint: RecordingEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    assert pipeline.app.indexnow_queue is not None

    def unavailable(**_: Any) -> None:
        raise ConnectionError("the indexnow queue is unreachable")

    pipeline.app.indexnow_queue.client.meta.events.register(
        "before-call.sqs.SendMessage", unavailable
    )
    pipeline.send_events([publish("/a", 1), publish("/b", 1)])
    pipeline.drain()
    assert set(site_entries(pipeline.objects())) == {url("/a"), url("/b")}
    assert pipeline.function_errors == 0
    assert pipeline.dead_letters() == []
    assert endpoint.requests == []
    lost = [r for r in caplog.records if r.getMessage() == "IndexNow URLs not queued"]
    assert [sorted(record.urls) for record in lost] == [[url("/a"), url("/b")]]  # logged
    assert lost[0].levelname == "ERROR"


def test_off_by_default_there_is_no_fourth_function(make_pipeline: PipelineFactory) -> None:
    plain = make_pipeline()
    assert set(plain.mappings) == {"ingest", "rebuild", "index"}
    assert plain.app.indexnow_queue is None
    plain.send_events([publish("/a", 1)])
    plain.drain()
    assert not any(key.endswith(".txt") and key != "robots.txt" for key in plain.objects())


def test_a_url_whose_queueing_failed_in_a_retried_batch_is_queued_by_the_retry(
    pipeline: Pipeline, endpoint: RecordingEndpoint
) -> None:
    """The batch fails after its commits (here: the rebuild request) and the IndexNow queue
    is down at that moment too; SQS delivers the events again, now duplicates, and because
    they are redelivered their URLs are queued then. Nothing is lost."""
    faults = FaultInjector(pipeline)
    faults.fail("SendMessageBatch")  # the rebuild request, once
    assert pipeline.app.indexnow_queue is not None
    failures = [ConnectionError("the indexnow queue is unreachable")]

    def once(**_: Any) -> None:
        if failures:
            raise failures.pop()

    pipeline.app.indexnow_queue.client.meta.events.register("before-call.sqs.SendMessage", once)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    assert faults.pending() == 0
    assert failures == []
    assert pipeline.function_errors == 1  # the first batch failed whole
    assert endpoint.submitted() == [url("/a")]
    assert set(site_entries(pipeline.objects())) == {url("/a")}


def test_after_a_fix_redrive_submits_the_refused_urls_again(
    pipeline: Pipeline, endpoint: RecordingEndpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    register_stack(pipeline.stack)
    endpoint.answer(default=422)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    assert len(indexnow_letters(pipeline)) == 1
    assert main(["status", *STACK]) == 1  # a dead letter: status says so, and names the queue
    assert "indexnow DLQ" in capsys.readouterr().out

    endpoint.answer(default=200)  # the configuration is fixed
    assert main(["redrive", "--queue", "indexnow", *STACK]) == 0
    pipeline.drain()
    assert endpoint.submitted() == [url("/a"), url("/a")]
    assert indexnow_letters(pipeline) == []


def test_redrive_of_indexnow_without_it_is_a_usage_error(
    make_pipeline: PipelineFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    register_stack(make_pipeline().stack)
    assert main(["redrive", "--queue", "indexnow", *STACK]) == 2
    assert "no IndexNow queue" in capsys.readouterr().err
