"""The pipeline on moto's in-process mock: the deployed resources, the three handlers."""

from __future__ import annotations

import gzip
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lxml import etree
from moto import mock_aws

from sitemap_updater.bootstrap import App
from sitemap_updater.local.stack import LOCAL_STACK_NAME, register_stack
from sitemap_updater.schemas import sitemap_schema
from tests.conftest import SITE, FakeClock
from tests.pipeline import Pipeline

NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}
STACK = ["--stack", LOCAL_STACK_NAME]  # how the operator commands name the deployment


def document(body: bytes) -> bytes:
    return gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body


def parse(body: bytes) -> Any:
    return etree.fromstring(document(body))


def assert_valid(key: str, body: bytes) -> None:
    tree = parse(body)
    schema = sitemap_schema()
    assert schema.validate(tree), f"{key} is not schema-valid: {schema.error_log}"


def site_entries(objects: dict[str, bytes]) -> dict[str, dict[str, str | None]]:
    """URL -> its fields, across every shard the index names (each URL at most once)."""
    index = parse(objects["sitemap.xml"])
    entries: dict[str, dict[str, str | None]] = {}
    for loc in index.findall("sm:sitemap/sm:loc", NS):
        key = loc.text.removeprefix(f"{SITE}/")
        for url in parse(objects[key]).findall("sm:url", NS):
            address = url.findtext("sm:loc", namespaces=NS)
            assert address not in entries, f"{address} is listed twice"
            entries[address] = {
                name: url.findtext(f"sm:{name}", namespaces=NS)
                for name in ("lastmod", "changefreq", "priority")
            }
    return entries


def shard_of(objects: dict[str, bytes], url: str) -> str | None:
    for key, body in objects.items():
        if key.startswith("sitemap-") and "index" not in key and url in shard_urls(body):
            return key
    return None


def shard_urls(body: bytes) -> list[str]:
    return [u.text for u in parse(body).findall("sm:url/sm:loc", NS)]


class Recorder:
    """Counts every AWS call the pipeline's clients make, and checks invariant 6 at every
    write and delete: each object written validates against the official schemas, an index
    never names a missing object, nothing is deleted while an index names it.

    Violations are collected (a hook's exception would only fail the handler and be retried)
    and asserted when the test ends.
    """

    def __init__(self, pipeline: Pipeline):
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.puts: list[str] = []
        self.violations: list[str] = []
        self.pipeline = pipeline
        self.watch(pipeline.app)

    def watch(self, app: App) -> None:
        """Record and check the calls of another function instance too (its own clients)."""
        for client in (app.store.client, app.registry.client, app.queues.client):
            client.meta.events.register("provide-client-params.*.*", self._record)
        store_events = app.store.client.meta.events
        store_events.register("after-call.s3.PutObject", self._after_put)
        store_events.register("after-call.s3.DeleteObject", self._after_delete)

    def _record(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        self.calls.append((model.name, dict(params)))
        context["recorded_params"] = dict(params)

    def _after_put(self, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        if http_response.status_code != 200:
            return
        params = context["recorded_params"]
        key, body = params["Key"], params["Body"]
        self.puts.append(key)
        if key.endswith((".xml", ".xml.gz")):
            try:
                assert_valid(key, body)
            except AssertionError as exc:
                self.violations.append(str(exc))
            if _is_index(key):
                existing = set(self.pipeline.objects())
                ours = set(index_locs(body)) - set(self.pipeline.stack.settings.index_extras)
                for loc in sorted(ours):
                    if loc.removeprefix(f"{SITE}/") not in existing:
                        self.violations.append(f"{key} names missing {loc}")

    def _after_delete(self, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        if http_response.status_code not in (200, 204):  # refused (a conditional delete)
            return
        deleted = f"{SITE}/{context['recorded_params']['Key']}"
        for key, body in self.pipeline.objects().items():
            if _is_index(key) and deleted in index_locs(body):
                self.violations.append(f"deleted {deleted} while {key} names it")

    def count(self, operation: str) -> int:
        return sum(1 for name, _ in self.calls if name == operation)

    def reset(self) -> None:
        self.calls.clear()
        self.puts.clear()


def _is_index(key: str) -> bool:
    return key == "sitemap.xml" or key.startswith("sitemap-index-")


def index_locs(index_body: bytes) -> list[str]:
    return [loc.text for loc in parse(index_body).findall("sm:sitemap/sm:loc", NS)]


PipelineFactory = Callable[..., Pipeline]


@pytest.fixture
def make_pipeline(clock: FakeClock) -> Iterator[PipelineFactory]:
    """A pipeline on moto's mock; keyword arguments override settings (MAX_URLS_PER_SHARD=3)."""
    with mock_aws():
        built = itertools.count(1)

        def factory(**overrides: Any) -> Pipeline:
            prefix = f"test{next(built)}"
            return Pipeline.create(
                SITE, overrides, visibility_timeout=1, clock=clock, prefix=prefix
            )

        yield factory


@pytest.fixture
def pipeline(make_pipeline: PipelineFactory) -> Pipeline:
    return make_pipeline()


@pytest.fixture
def recorder(pipeline: Pipeline) -> Iterator[Recorder]:
    recorder = Recorder(pipeline)
    yield recorder
    assert recorder.violations == []


def publish(path: str, version: float, **fields: Any) -> dict[str, Any]:
    return {"type": "publish", "url": f"{SITE}{path}", "version": version, **fields}


def unpublish(path: str, version: float) -> dict[str, Any]:
    return {"type": "unpublish", "url": f"{SITE}{path}", "version": version}


class Fault(Exception):
    """An injected failure: a crash, a timeout, a lost response."""


class FaultInjector:
    """Fail chosen AWS calls of the pipeline's clients, before or after the call reaches AWS.

    ``after=True`` lets the call succeed and then raises, like a Lambda that times out after
    its write but before it can act on the answer.
    """

    def __init__(self, pipeline: Pipeline, include_lambda_service: bool = False):
        self.rules: list[dict[str, Any]] = []
        self.fired: list[str] = []
        clients = [
            pipeline.app.store.client,
            pipeline.app.registry.client,
            pipeline.app.queues.client,
        ]
        for client in clients:
            client.meta.events.register("provide-client-params.*.*", self._stash)
            client.meta.events.register("before-call.*.*", self._before)
            client.meta.events.register("after-call.*.*", self._after)
        if include_lambda_service:  # the event source mapping deleting what it processed
            events = pipeline.sqs.meta.events
            events.register("before-call.sqs.DeleteMessageBatch", self._before)
            events.register("after-call.sqs.DeleteMessageBatch", self._after)

    @staticmethod
    def _stash(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context.setdefault("recorded_params", dict(params))

    def fail(
        self,
        operation: str,
        occurrence: int = 1,
        after: bool = False,
        when: Callable[[dict[str, Any]], bool] | None = None,
        times: int = 1,
    ) -> None:
        """Fail the ``occurrence``-th matching call (and the next ``times - 1``)."""
        self.rules.append(
            {
                "op": operation,
                "n": occurrence,
                "after": after,
                "when": when,
                "times": times,
                "seen": 0,
            }
        )

    def pending(self) -> int:
        """Faults that have not fired yet."""
        return sum(1 for rule in self.rules if rule["seen"] < rule["n"] + rule["times"] - 1)

    def _check(self, model: Any, params: dict[str, Any], after: bool) -> None:
        for rule in self.rules:
            if rule["op"] != model.name or rule["after"] != after:
                continue
            if rule["when"] is not None and not rule["when"](params):
                continue
            rule["seen"] += 1
            if rule["n"] <= rule["seen"] < rule["n"] + rule["times"]:
                self.fired.append(f"{model.name}{' (after)' if after else ''}")
                raise Fault(f"injected fault in {model.name}")

    def _before(
        self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        self._check(model, context.get("recorded_params", {}), after=False)

    def _after(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        self._check(model, context.get("recorded_params", {}), after=True)


@pytest.fixture
def faults(pipeline: Pipeline) -> FaultInjector:
    return FaultInjector(pipeline)


@pytest.fixture
def deployed(pipeline: Pipeline) -> Pipeline:
    """The pipeline, described by a CloudFormation stack whose outputs are a deployment's."""
    register_stack(pipeline.stack)
    return pipeline
