"""IndexNow without the network: the client's request, retries and verdicts against a fake
opener; batching and de-duplication in the use case; which ingest outcomes are submitted,
and that queueing them never fails the ingest."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from email.message import Message as Headers
from typing import Any

import pytest

from sitemap_updater.adapters.indexnow import IndexNowClient
from sitemap_updater.adapters.queues import URLS_PER_MESSAGE, IndexNowQueue, requested_urls
from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.domain.indexnow import MAX_URLS_PER_REQUEST, Submission, Verdict
from sitemap_updater.domain.sharding import Limits
from sitemap_updater.domain.urls import Site
from sitemap_updater.observability import Metric, metrics
from sitemap_updater.settings import DEFAULT_INDEXNOW_ENDPOINT, Settings, SettingsError
from sitemap_updater.usecases.indexnow import SubmitChanges
from sitemap_updater.usecases.ingest import ApplyChange, Ingest
from sitemap_updater.usecases.ports import Message
from tests.conftest import FakeClock
from tests.fakes import MemoryRegistry
from tests.unit.test_settings import env

SITE = Site.parse("https://www.example.com")
ENDPOINT = "https://api.indexnow.org/indexnow"
KEY = "0123456789abcdef-KEY"


# --- a fake opener -----------------------------------------------------------------------------


class FakeResponse(io.BytesIO):
    def __init__(self, status: int, body: bytes = b""):
        super().__init__(body)
        self.status = status


@dataclass
class FakeOpener:
    """Answers each POST with the next scripted answer: a status, or an exception."""

    answers: list[int | BaseException]
    requests: list[urllib.request.Request] = field(default_factory=list)
    timeouts: list[float] = field(default_factory=list)

    def open(self, fullurl: urllib.request.Request, data: None = None, timeout: float = 0) -> Any:
        self.requests.append(fullurl)
        self.timeouts.append(timeout)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        if answer >= 300:
            raise http_error(answer)
        return FakeResponse(answer, b"OK")

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.data) for request in self.requests]  # type: ignore[arg-type]


def http_error(status: int, body: bytes = b"", **headers: str) -> urllib.error.HTTPError:
    message = Headers()
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    return urllib.error.HTTPError(ENDPOINT, status, "", message, io.BytesIO(body))


@dataclass
class Sleeps:
    delays: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def client(opener: FakeOpener, sleeps: Sleeps | None = None, **options: Any) -> IndexNowClient:
    location = f"https://www.example.com/{KEY}.txt"
    return IndexNowClient(
        ENDPOINT, KEY, "www.example.com", location, opener, sleep=sleeps or Sleeps(), **options
    )


URLS = [f"https://www.example.com/{n}" for n in range(3)]


# --- the client ----------------------------------------------------------------------------------


def test_one_post_of_json_with_host_key_key_location_and_the_urls() -> None:
    opener = FakeOpener([200])
    outcome = client(opener, timeout_seconds=7).submit(URLS)
    assert outcome == Submission(Verdict.ACCEPTED, 200, "HTTP 200 OK: OK", 1)
    (request,) = opener.requests
    assert request.full_url == ENDPOINT
    assert request.get_method() == "POST"
    assert request.get_header("Content-type") == "application/json; charset=utf-8"
    assert opener.bodies() == [
        {
            "host": "www.example.com",
            "key": KEY,
            "keyLocation": f"https://www.example.com/{KEY}.txt",
            "urlList": URLS,
        }
    ]
    assert opener.timeouts == [7]


def test_202_is_accepted_too() -> None:
    assert client(FakeOpener([202])).submit(URLS).verdict is Verdict.ACCEPTED


@pytest.mark.parametrize("status", [400, 422])
def test_a_request_that_can_never_succeed_is_rejected_at_once(status: int) -> None:
    opener = FakeOpener([http_error(status, b"URLs do not belong to the host")])
    sleeps = Sleeps()
    outcome = client(opener, sleeps).submit(URLS)
    assert outcome.verdict is Verdict.REJECTED
    assert outcome.status == status
    assert "URLs do not belong to the host" in outcome.reason
    assert (outcome.attempts, len(opener.requests), sleeps.delays) == (1, 1, [])


# SQS (SendMessage, MessageAttributeValue): a String attribute has the message body's
# restrictions, only these characters; any other is refused with InvalidParameterValue.
def sqs_accepts(text: str) -> bool:
    return all(
        char in "\t\n\r"
        or 0x20 <= ord(char) <= 0xD7FF
        or 0xE000 <= ord(char) <= 0xFFFD
        or ord(char) >= 0x10000
        for char in text
    )


def test_a_refusal_whose_answer_holds_characters_sqs_refuses_is_still_dead_lettered() -> None:
    # The endpoint's answer is a third party's bytes: NUL, an escape sequence, U+FFFE are
    # valid UTF-8 but not SQS text. Its reason must still reach the dead-letter queue, or
    # the send fails, the message is retried (resubmitting a request that can never
    # succeed) and lands there after five receives without its reason.
    body = b"bad\x00request \x1b[31mno\x1b[0m \xef\xbf\xbe end"
    submitter = client(FakeOpener([http_error(422, body)]))
    sent: list[dict[str, Any]] = []

    class Sqs:
        def send_message(self, **params: Any) -> dict[str, Any]:
            attributes = params.get("MessageAttributes", {}).values()
            if not all(sqs_accepts(value["StringValue"]) for value in attributes):
                raise RetryableError("InvalidParameterValue: invalid characters")
            sent.append(params)
            return {}

    parked = IndexNowQueue("q", "dlq", client=Sqs())  # type: ignore[arg-type]
    result = SubmitChanges(SITE, submitter, parked, requested_urls)([message("m1", "/a")])
    assert (result.dead_lettered, result.retry) == ({"m1"}, frozenset())
    (params,) = sent
    reason = params["MessageAttributes"]["reason"]["StringValue"]
    assert reason.startswith("indexnow_rejected: HTTP 422 Unprocessable Entity: bad")
    assert "request" in reason
    assert reason.endswith("end")


def test_throttling_and_server_faults_are_retried_with_growing_backoff() -> None:
    opener = FakeOpener([503, 500, 429, 200])
    sleeps = Sleeps()
    outcome = client(opener, sleeps, jitter=lambda: 0.0).submit(URLS)
    assert (outcome.verdict, outcome.attempts) == (Verdict.ACCEPTED, 4)
    assert sleeps.delays == [0.5, 1.0, 2.0]  # half of 1, 2, 4 s: equal jitter at its lowest
    assert len({json.dumps(body) for body in opener.bodies()}) == 1  # the same request


def test_jitter_spreads_each_delay_over_the_upper_half_of_its_step() -> None:
    spread = client(FakeOpener([200]), jitter=lambda: 0.999)
    assert [round(spread.delay(n), 2) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    low = client(FakeOpener([200]), jitter=lambda: 0.0)
    assert [low.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 4.0, 4.0]  # capped at 8


@pytest.mark.parametrize(
    "error",
    [
        urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")),
        TimeoutError("timed out"),  # socket.timeout is TimeoutError
        ConnectionResetError(104, "reset"),
    ],
    ids=["refused", "timeout", "reset"],
)
def test_no_answer_is_retried_then_fails(error: BaseException) -> None:
    opener = FakeOpener([error])
    sleeps = Sleeps()
    outcome = client(opener, sleeps, max_attempts=3, jitter=lambda: 0.0).submit(URLS)
    assert outcome.verdict is Verdict.FAILED
    assert outcome.status is None
    assert outcome.reason.startswith("no answer: ")
    assert (outcome.attempts, sleeps.delays) == (3, [0.5, 1.0])


def test_retry_after_is_honoured_when_longer_than_the_backoff() -> None:
    opener = FakeOpener([http_error(429, Retry_After="3"), 200])
    sleeps = Sleeps()
    assert client(opener, sleeps, jitter=lambda: 0.0).submit(URLS).verdict is Verdict.ACCEPTED
    assert sleeps.delays == [3.0]


@pytest.mark.parametrize("status", [403, 404, 413])
def test_other_answers_fail_without_an_immediate_retry(status: int) -> None:
    """403: the engine could not verify the key (yet); SQS retries in minutes, not seconds."""
    opener = FakeOpener([http_error(status, b"key not valid")])
    outcome = client(opener).submit(URLS)
    assert (outcome.verdict, outcome.status, outcome.attempts) == (Verdict.FAILED, status, 1)


def test_a_redirect_is_not_followed_and_says_where_it_pointed() -> None:
    opener = FakeOpener([http_error(307, Location="https://elsewhere.example/indexnow")])
    outcome = client(opener).submit(URLS)
    assert (outcome.verdict, outcome.status) == (Verdict.FAILED, 307)
    assert "redirected to https://elsewhere.example/indexnow" in outcome.reason


def test_no_retry_is_started_that_would_overrun_the_deadline() -> None:
    now = [100.0]
    opener = FakeOpener([503])
    sleeps = Sleeps()
    submitter = client(opener, sleeps, clock=lambda: now[0], jitter=lambda: 0.0)
    outcome = submitter.submit(URLS, deadline=100.0 + 10.0 + 0.4)  # timeout 10 s + 0.5 s delay
    assert (outcome.verdict, outcome.attempts, sleeps.delays) == (Verdict.FAILED, 1, [])
    assert "no time left" in outcome.reason


def test_no_request_is_started_that_would_overrun_the_deadline() -> None:
    """A later chunk of a large batch, when the invocation is nearly out of time: SQS
    delivers its messages again rather than Lambda killing a request half-way."""
    opener = FakeOpener([200])
    submitter = client(opener, clock=lambda: 100.0)
    outcome = submitter.submit(URLS, deadline=105.0)  # a request may take 10 s
    assert (outcome.verdict, outcome.attempts, opener.requests) == (Verdict.FAILED, 0, [])
    assert outcome.reason == "no time left for a request in this invocation"


@pytest.mark.parametrize("count", [0, MAX_URLS_PER_REQUEST + 1])
def test_one_request_holds_1_to_10000_urls(count: int) -> None:
    urls = [f"https://www.example.com/{n}" for n in range(count)]
    with pytest.raises(ValueError, match="1 to 10000"):
        client(FakeOpener([200])).submit(urls)


# --- the use case: de-duplication, batches of at most 10,000 ------------------------------------


@dataclass
class FakeSubmitter:
    verdicts: list[Verdict] = field(default_factory=list)  # per request; ACCEPTED when out
    requests: list[list[str]] = field(default_factory=list)

    def submit(self, urls: Sequence[str], deadline: float | None = None) -> Submission:
        self.requests.append(list(urls))
        verdict = self.verdicts.pop(0) if self.verdicts else Verdict.ACCEPTED
        return Submission(verdict, {Verdict.ACCEPTED: 200}.get(verdict, 422), "HTTP 422", 1)


@dataclass
class FakeDeadLetters:
    parked: list[tuple[str, str, str, str]] = field(default_factory=list)
    broken: bool = False

    def dead_letter(self, body: str, code: str, reason: str, source_message_id: str) -> None:
        if self.broken:
            raise RetryableError("SQS is down")
        self.parked.append((body, code, reason, source_message_id))


def message(message_id: str, *paths: str) -> Message:
    return Message(message_id, json.dumps({"urls": [f"{SITE.origin}{p}" for p in paths]}))


def test_urls_are_submitted_once_each_in_order_of_first_appearance() -> None:
    submitter = FakeSubmitter()
    submit = SubmitChanges(SITE, submitter, FakeDeadLetters(), requested_urls)
    result = submit([message("m1", "/a", "/b"), message("m2", "/b", "/c"), message("m3", "/a")])
    assert submitter.requests == [[f"{SITE.origin}/{p}" for p in "abc"]]
    assert (result.submitted, result.retry, result.dead_lettered) == (3, frozenset(), frozenset())


def test_more_than_10000_urls_go_in_several_requests_of_at_most_10000() -> None:
    paths = [f"/page-{n}" for n in range(MAX_URLS_PER_REQUEST + 150)]
    messages = [
        message(f"m{start}", *paths[start : start + URLS_PER_MESSAGE])
        for start in range(0, len(paths), URLS_PER_MESSAGE)
    ]
    submitter = FakeSubmitter()
    result = SubmitChanges(SITE, submitter, FakeDeadLetters(), requested_urls)(messages)
    assert [len(request) for request in submitter.requests] == [MAX_URLS_PER_REQUEST, 150]
    assert result.submitted == MAX_URLS_PER_REQUEST + 150


def test_a_failed_request_fails_exactly_the_messages_in_it() -> None:
    submitter = FakeSubmitter([Verdict.ACCEPTED, Verdict.FAILED, Verdict.ACCEPTED])
    submit = SubmitChanges(
        SITE, submitter, FakeDeadLetters(), requested_urls, max_urls_per_request=2
    )
    result = submit([message("m1", "/a", "/b"), message("m2", "/c"), message("m3", "/d", "/e")])
    assert submitter.requests == [
        [f"{SITE.origin}/{p}" for p in pair] for pair in ("ab", "cd", "e")
    ]
    assert result.retry == {"m2", "m3"}  # /c and /d were in the failed request
    assert result.submitted == 3


def test_a_rejected_request_dead_letters_its_messages_with_the_reason() -> None:
    parked = FakeDeadLetters()
    submitter = FakeSubmitter([Verdict.REJECTED])
    result = SubmitChanges(SITE, submitter, parked, requested_urls)(
        [message("m1", "/a"), message("m2", "/b")]
    )
    assert result.dead_lettered == {"m1", "m2"}
    assert result.retry == frozenset()
    assert {(code, source) for _, code, _, source in parked.parked} == {
        ("indexnow_rejected", "m1"),
        ("indexnow_rejected", "m2"),
    }
    assert all("HTTP 422" in reason for _, _, reason, _ in parked.parked)


def test_a_message_in_a_failed_and_a_rejected_request_is_retried() -> None:
    submitter = FakeSubmitter([Verdict.REJECTED, Verdict.FAILED])
    parked = FakeDeadLetters()
    submit = SubmitChanges(SITE, submitter, parked, requested_urls, max_urls_per_request=1)
    result = submit([message("m1", "/a", "/b")])
    assert (result.retry, result.dead_lettered, parked.parked) == ({"m1"}, frozenset(), [])


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[]",
        '{"urls": []}',
        '{"urls": "https://www.example.com/a"}',
        '{"urls": [1]}',
        '{"urls": ["https://elsewhere.example/a"]}',
        '{"urls": ["https://www.example.com.evil.example/a"]}',
    ],
)
def test_a_message_that_is_not_a_list_of_site_urls_is_dead_lettered(body: str) -> None:
    parked = FakeDeadLetters()
    submitter = FakeSubmitter()
    result = SubmitChanges(SITE, submitter, parked, requested_urls)(
        [Message("bad", body), message("ok", "/a")]
    )
    assert result.dead_lettered == {"bad"}
    assert parked.parked == [(body, "malformed_message", parked.parked[0][2], "bad")]
    assert submitter.requests == [[f"{SITE.origin}/a"]]


def test_a_dead_letter_that_cannot_be_sent_is_retried_instead() -> None:
    parked = FakeDeadLetters(broken=True)
    result = SubmitChanges(SITE, FakeSubmitter([Verdict.REJECTED]), parked, requested_urls)(
        [message("m1", "/a")]
    )
    assert (result.retry, result.dead_lettered) == ({"m1"}, frozenset())


# --- ingest: what is queued, and that it never fails the batch ------------------------------------


@dataclass
class FakeNotifier:
    queued: list[list[str]] = field(default_factory=list)
    broken: bool = False

    def notify(self, urls: Sequence[str]) -> None:
        if self.broken:
            raise RetryableError("the indexnow queue is unavailable")
        self.queued.append(list(urls))


@dataclass
class FakeRebuilds:
    requested: list[dict[str, list[str]]] = field(default_factory=list)
    dead: list[str] = field(default_factory=list)
    broken: bool = False

    def request_rebuilds(self, requests: Mapping[str, Sequence[str]]) -> None:
        if self.broken:
            raise RetryableError("the rebuild queue is unavailable")
        self.requested.append({k: list(v) for k, v in requests.items()})

    def dead_letter(self, body: str, code: str, reason: str, source_message_id: str) -> None:
        self.dead.append(code)


def ingest_with(notifier: FakeNotifier | None, rebuilds: FakeRebuilds | None = None) -> Ingest:
    limits = Limits(max_urls_per_shard=100)
    apply = ApplyChange(MemoryRegistry(limits), limits, 86_400 * 30, FakeClock())
    return Ingest(SITE, 262_144, apply, rebuilds or FakeRebuilds(), indexnow=notifier)


def event(kind: str, path: str, version: int, **fields: Any) -> str:
    return json.dumps({"type": kind, "url": f"{SITE.origin}{path}", "version": version, **fields})


def test_applied_publishes_and_unpublishes_are_queued_once_after_the_batch() -> None:
    notifier = FakeNotifier()
    rebuilds = FakeRebuilds()

    def after_the_rebuild_requests(requests: Mapping[str, Sequence[str]]) -> None:
        assert notifier.queued == []  # nothing before the batch's sitemap work is done
        FakeRebuilds.request_rebuilds(rebuilds, requests)

    rebuilds.request_rebuilds = after_the_rebuild_requests  # type: ignore[method-assign]
    ingest_with(notifier, rebuilds)(
        [
            Message("1", event("publish", "/a", 1)),
            Message("2", event("publish", "/b", 1)),
            Message("3", event("unpublish", "/b", 2)),
        ]
    )
    assert rebuilds.requested == [{"pages-00001": ["1", "2", "3"]}]
    assert notifier.queued == [[f"{SITE.origin}/a", f"{SITE.origin}/b"]]


def test_stale_duplicate_and_rejected_events_are_not_queued() -> None:
    notifier = FakeNotifier()
    ingest = ingest_with(notifier)
    ingest([Message("1", event("publish", "/a", 2))])
    notifier.queued.clear()
    foreign = json.dumps({"type": "publish", "url": "https://evil.example/", "version": 1})
    results = ingest(
        [
            Message("2", event("publish", "/a", 2)),
            Message("3", event("publish", "/a", 1)),
            Message("4", event("publish", "/x", 1, priority=7)),
            Message("5", foreign),
        ]
    )
    assert [results[m].value_or_raise() for m in "2345"] == [
        "duplicate",
        "stale",
        "rejected",
        "rejected",
    ]
    assert notifier.queued == []


def test_a_redelivered_duplicate_is_queued_again() -> None:
    """The delivery that applied it may have timed out before it could queue the URL."""
    notifier = FakeNotifier()
    ingest = ingest_with(notifier)
    ingest([Message("1", event("publish", "/a", 1))])
    notifier.queued.clear()  # as if that invocation died after the commit
    ingest([Message("1", event("publish", "/a", 1))])
    assert notifier.queued == []  # a duplicate delivered once: the URL was queued
    ingest([Message("1", event("publish", "/a", 1), redelivered=True)])
    assert notifier.queued == [[f"{SITE.origin}/a"]]


def test_a_queue_failure_never_fails_the_batch() -> None:
    notifier = FakeNotifier(broken=True)
    rebuilds = FakeRebuilds()
    results = ingest_with(notifier, rebuilds)([Message("1", event("publish", "/a", 1))])
    assert results["1"].value_or_raise() == "applied"
    assert rebuilds.requested == [{"pages-00001": ["1"]}]  # the sitemap work was done first


def test_urls_are_queued_even_when_the_rebuild_request_fails() -> None:
    """The message is retried (it comes back a duplicate, which is not queued), so this is
    the one chance to queue it. A rejected one beside it is not retried: it is dead-lettered
    already, and would be twice."""
    notifier = FakeNotifier()
    ingest = ingest_with(notifier, FakeRebuilds(broken=True))
    results = ingest([Message("1", event("publish", "/a", 1)), Message("2", "{not json")])
    with pytest.raises(RetryableError, match="rebuild queue"):
        results["1"].value_or_raise()
    assert results["2"].value_or_raise() == "rejected"
    assert notifier.queued == [[f"{SITE.origin}/a"]]


def test_without_indexnow_nothing_is_queued_or_counted() -> None:
    results = ingest_with(None)([Message("1", event("publish", "/a", 1))])
    assert results["1"].value_or_raise() == "applied"
    assert Metric.EVENTS_APPLIED in metrics.metric_set
    assert {Metric.INDEXNOW_QUEUED, Metric.INDEXNOW_NOT_QUEUED} & set(metrics.metric_set) == set()


def test_the_queue_adapter_packs_100_urls_per_message() -> None:
    sent: list[dict[str, Any]] = []

    class Sqs:
        def send_message(self, **params: Any) -> dict[str, Any]:
            sent.append(params)
            return {}

    urls = [f"{SITE.origin}/{n}" for n in range(250)]
    IndexNowQueue("q", "dlq", client=Sqs()).notify(urls)  # type: ignore[arg-type]
    bodies = [json.loads(params["MessageBody"])["urls"] for params in sent]
    assert [len(body) for body in bodies] == [100, 100, 50]
    assert [u for body in bodies for u in body] == urls
    assert max(len(params["MessageBody"].encode()) for params in sent) < 256 * 1024


# --- settings ------------------------------------------------------------------------------------


QUEUES = {
    "INDEXNOW_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/indexnow",
    "INDEXNOW_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/indexnow-dlq",
}


def test_off_by_default_with_the_shared_endpoint() -> None:
    settings = Settings.from_env(env())
    assert settings.indexnow_key == ""
    assert settings.indexnow_key_file is None
    assert settings.indexnow_endpoint == DEFAULT_INDEXNOW_ENDPOINT == ENDPOINT


@pytest.mark.parametrize("key", ["a" * 8, "A-z-0-9-" * 16, "f0e1d2c3b4a5968778695a4b3c2d1e0f"])
def test_a_valid_key(key: str) -> None:
    settings = Settings.from_env(env(INDEXNOW_KEY=key, **QUEUES))
    assert settings.indexnow_key_file == f"{key}.txt"


@pytest.mark.parametrize(
    "key", ["a" * 7, "a" * 129, "abc_defgh", "abcdefgh.txt", "abc defgh", "abcdéfgh", "../../etc"]
)
def test_an_invalid_key_is_named(key: str) -> None:
    with pytest.raises(SettingsError, match=r"INDEXNOW_KEY: .*8 to 128 characters"):
        Settings.from_env(env(INDEXNOW_KEY=key, **QUEUES))


@pytest.mark.parametrize(
    "endpoint",
    [
        "ftp://x.example/",
        "api.indexnow.org/indexnow",
        "https://",
        # urllib takes these and every submission then fails, until the URLs are dead-lettered
        "https://api.indexnow.org:44x/indexnow",
        "https://api.indexnow.org:99999/indexnow",
        "https://api.indexnow.org/index now",
        "https://api.indexnow.org/indexnow\u00e9",
    ],
)
def test_an_invalid_endpoint_is_named(endpoint: str) -> None:
    with pytest.raises(SettingsError, match="INDEXNOW_ENDPOINT"):
        Settings.from_env(env(INDEXNOW_ENDPOINT=endpoint))


def test_an_endpoint_is_read_without_surrounding_whitespace() -> None:
    settings = Settings.from_env(env(INDEXNOW_ENDPOINT=f" {ENDPOINT}\n"))
    assert settings.indexnow_endpoint == ENDPOINT


def test_a_key_needs_the_queues() -> None:
    with pytest.raises(SettingsError, match="INDEXNOW_QUEUE_URL or INDEXNOW_DLQ_URL is empty"):
        Settings.from_env(env(INDEXNOW_KEY="a" * 8))
