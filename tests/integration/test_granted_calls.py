"""Each function's role grants every DynamoDB action its code calls (moto does not enforce
IAM: a call the role lacks fails only once deployed). The calls are recorded per function
while a pipeline runs the paths that use them; tests/infra/test_permissions.py holds the
template to the same grants."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sitemap_infra.functions import table_actions
from sitemap_updater.adapters.registry import entry_key
from tests.conftest import SITE, FakeClock
from tests.integration.conftest import PipelineFactory, publish, unpublish

# A transaction's items are authorised one by one, as the single-item actions.
_TRANSACT_ITEMS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


class Calls:
    """The DynamoDB actions called, by the function running when each was made."""

    def __init__(self) -> None:
        self.running: str | None = None
        self.by_function: dict[str, set[str]] = defaultdict(set)

    def record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if self.running is None:
            return
        if model.name == "TransactWriteItems":
            for item in params["TransactItems"]:
                self.by_function[self.running] |= {_TRANSACT_ITEMS[kind] for kind in item}
        else:
            self.by_function[self.running].add(model.name)

    @contextmanager
    def running_as(self, name: str) -> Iterator[None]:
        self.running = name
        try:
            yield
        finally:
            self.running = None

    def wrap(self, name: str, handler: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            with self.running_as(name):
                return handler(*args, **kwargs)

        return run


def test_every_dynamodb_action_a_function_calls_is_granted_to_it(
    make_pipeline: PipelineFactory, clock: FakeClock
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=2, FEED_ENTRIES=5)
    calls = Calls()
    pipeline.app.registry.client.meta.events.register(
        "provide-client-params.dynamodb.*", calls.record
    )
    for name, mapping in pipeline.mappings.items():
        mapping.handler = calls.wrap(name, mapping.handler)

    de = {"hreflang": "de", "href": f"{SITE}/de"}
    en = {"hreflang": "en", "href": f"{SITE}/en"}
    steps = [
        [publish(f"/p{n}", 1) for n in range(5)],  # batched commits, new shards: full index
        [publish("/en", 1, hreflang="en", alternates=[de])],
        [publish("/de", 1, hreflang="de", alternates=[en])],  # marks a sibling's shard
        [publish("/p0", 2, lastmod="2026-11-20")],  # a patched shard, a patched index
        [unpublish("/p4", 2), publish("/p1", 1)],  # a shard retires; a duplicate
        [{"type": "unpublish", "id": "gone", "version": 1}],  # an id never seen
    ]
    for events in steps:
        clock.advance(60)
        pipeline.send_events(events)
        pipeline.drain()
    registry = pipeline.app.registry
    record = registry.url_state(f"{SITE}/p0").record
    assert record is not None
    assert record.shard is not None
    registry.client.delete_item(TableName=registry.table, Key=entry_key(record.shard, record.url))
    reconcile = pipeline.app.reconcile
    with calls.running_as("reconcile"):
        while record.shard not in reconcile().visited:  # one shard a run, the least recent
            clock.advance(3600)

    assert set(calls.by_function) >= {"ingest", "rebuild", "index", "reconcile"}
    missing = {
        name: sorted(used - set(table_actions(name, feed=True)))
        for name, used in calls.by_function.items()
    }
    assert {name: actions for name, actions in missing.items() if actions} == {}
