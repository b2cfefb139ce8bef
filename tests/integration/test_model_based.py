"""Model-based property test: random publish/update/unpublish streams, delivered with
duplicates, late and in any order, with faults injected at every AWS call the code makes
(and at Lambda's own delete of a processed message). After the queues drain, the sitemaps
must equal a model of the newest event per URL.

Profiles (``HYPOTHESIS_PROFILE``): ``ci`` (the default here, 300 examples) and ``nightly``
(3,000 examples, longer runs): ``HYPOTHESIS_PROFILE=nightly .venv/bin/pytest
tests/integration/test_model_based.py``.
"""

from __future__ import annotations

import itertools
import os
import random
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from moto import mock_aws

from tests.conftest import SITE, FakeClock
from tests.integration.conftest import FaultInjector, Recorder, publish, site_entries, unpublish
from tests.integration.test_convergence import expected_site
from tests.pipeline import Pipeline

settings.register_profile(
    "ci",
    max_examples=300,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "nightly",
    max_examples=3000,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

PATHS = ["/a", "/b", "/c", "/d", "/e"]
# Every AWS call the functions make, and the event source mapping's delete.
OPERATIONS = [
    "GetItem",
    "TransactWriteItems",
    "Query",
    "UpdateItem",
    "DeleteItem",
    "SendMessageBatch",
    "SendMessage",
    "PutObject",
    "GetObject",
    "HeadObject",
    "DeleteObject",
    "DeleteMessageBatch",
]
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "lastmod": st.sampled_from(["2026-11-01", "2026-11-02T10:00:00Z"]),
        "changefreq": st.sampled_from(["daily", "weekly"]),
        "priority": st.sampled_from([0.2, 0.9]),
    },
)
# Fewer outstanding faults than maxReceiveCount (5): no message can exhaust its retries, so
# nothing may end in a dead-letter queue.
MAX_PENDING_FAULTS = 3
_prefixes = itertools.count(1)
_SESSION = boto3.session.Session(region_name="us-east-1")  # one set of service models for all


class PipelineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.pipeline = Pipeline.create(
            SITE,
            {"MAX_URLS_PER_SHARD": 2},
            visibility_timeout=0,  # a failed message is retried at once: no sleeping
            clock=FakeClock(),
            prefix=f"model{next(_prefixes)}",
            session=_SESSION,
        )
        self.recorder = Recorder(self.pipeline)
        self.faults = FaultInjector(self.pipeline, include_lambda_service=True)
        self.versions = dict.fromkeys(PATHS, 0)
        self.generated: list[dict[str, Any]] = []
        self.pending: list[dict[str, Any]] = []
        self.delivered: list[dict[str, Any]] = []

    @initialize(seed=st.integers(0, 2**32 - 1))
    def seed_shuffles(self, seed: int) -> None:
        self.random = random.Random(seed)

    @rule(path=st.sampled_from(PATHS), fields=FIELDS)
    def publish_page(self, path: str, fields: dict[str, Any]) -> None:
        self.versions[path] += 1
        self._emit(publish(path, self.versions[path], **fields))

    @rule(path=st.sampled_from(PATHS))
    def unpublish_page(self, path: str) -> None:
        self.versions[path] += 1
        self._emit(unpublish(path, self.versions[path]))

    @precondition(lambda self: bool(self.generated))
    @rule(data=st.data())
    def redeliver(self, data: st.DataObject) -> None:
        """A duplicate, or an older event arriving late."""
        self.pending.append(data.draw(st.sampled_from(self.generated)))

    @precondition(lambda self: self.faults.pending() < MAX_PENDING_FAULTS)
    @rule(
        operation=st.sampled_from(OPERATIONS),
        after=st.booleans(),
        occurrence=st.integers(1, 6),
    )
    def inject_fault(self, operation: str, after: bool, occurrence: int) -> None:
        seen = sum(1 for name, _ in self.recorder.calls if name == operation)
        self.faults.fail(operation, occurrence=seen + occurrence, after=after)

    @precondition(lambda self: bool(self.pending))
    @rule()
    def deliver(self) -> None:
        batch, self.pending = self.pending, []
        self.random.shuffle(batch)
        self.pipeline.send_events(batch)
        self.delivered.extend(batch)
        self.pipeline.drain(timeout_seconds=120)
        self._check()

    def _emit(self, event: dict[str, Any]) -> None:
        self.generated.append(event)
        self.pending.append(event)

    def _check(self) -> None:
        objects = self.pipeline.objects()
        expected = expected_site(self.delivered)
        if expected:
            assert site_entries(objects) == _strings(expected)
        else:
            assert "sitemap.xml" not in objects
        assert self.pipeline.dead_letters() == []

    @invariant()
    def every_object_written_was_valid(self) -> None:
        assert self.recorder.violations == []

    def teardown(self) -> None:
        if self.pending:
            self.deliver()


def _strings(expected: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        url: {k: (None if v is None else str(v)) for k, v in fields.items()}
        for url, fields in expected.items()
    }


@pytest.mark.slow
def test_the_sitemaps_always_converge_to_the_model_of_the_newest_events() -> None:
    with mock_aws():
        run_state_machine_as_test(PipelineMachine, settings=PROFILE)
