"""No chain of the functions' own requests comes near Lambda's recursive loop detection, which
stops a chain after 16 invocations (docs/RELIABILITY.md#no-runaway-chains).

Lambda counts a chain in the trace header it carries from an invocation to the messages the
function sends. Modelled here: a message sent by a function while it handles a batch is one
hop deeper than the deepest message of that batch; a message from outside (the CMS, the
schedule, an operator) starts a chain. The handlers run on moto with a clock that stands
still, so what is counted is what the code asks for, not what time brings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import FakeClock
from tests.integration.conftest import PipelineFactory, document, publish, unpublish
from tests.integration.test_search_features import _scheduled_index_run
from tests.pipeline import Pipeline

LAMBDA_STOPS_AFTER = 16


class Chains:
    """How deep in its chain each message and each invocation is."""

    def __init__(self, pipeline: Pipeline):
        self.depth: dict[str, int] = {}  # message id -> the invocation that sent it
        self.current = 0  # the invocation running now (0: none, a sender from outside)
        self.longest = 0
        events = pipeline.app.queues.client.meta.events
        events.register("after-call.sqs.SendMessage", self._sent)
        events.register("after-call.sqs.SendMessageBatch", self._sent)
        for mapping in pipeline.mappings.values():
            mapping.handler = self._counted(mapping.handler)

    def _sent(self, parsed: dict[str, Any], **_: Any) -> None:
        for entry in parsed.get("Successful", [parsed]):
            self.depth[entry["MessageId"]] = self.current

    def _counted(self, handler: Callable[..., Any]) -> Callable[..., Any]:
        def invoke(event: dict[str, Any], context: Any) -> Any:
            records = event["Records"]
            self.current = 1 + max(self.depth.get(r["messageId"], 0) for r in records)
            self.longest = max(self.longest, self.current)
            try:
                return handler(event, context)
            finally:
                self.current = 0

        return invoke

    def reset(self) -> None:
        self.longest = 0


NEWS = {
    "publication": {"name": "The Example Times", "language": "en"},
    "title": "Today's news",
}


def test_a_publish_is_three_invocations(pipeline: Pipeline) -> None:
    chains = Chains(pipeline)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    assert chains.longest == 3  # ingest -> rebuild -> index


def test_the_longest_chain_is_five_invocations(
    make_pipeline: PipelineFactory, clock: FakeClock
) -> None:
    """An unpublish empties a shard while another shard's news has aged: ingest -> rebuild
    (retiring) -> index (unlists it, and asks the aged shard's rebuild too) -> rebuild
    (deletes one, rewrites the other) -> index. Every request makes its progress: the index
    asks only for shards whose records say they need it, and each rebuild clears that."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)  # a shard per page
    chains = Chains(pipeline)
    published = clock().strftime("%Y-%m-%dT%H:%M:%SZ")
    pipeline.send_events(
        [publish("/story", 1, news={**NEWS, "publication_date": published}), publish("/b", 1)]
    )
    pipeline.drain()
    assert b"<news:news>" in document(pipeline.objects()["sitemap-pages-00001.xml.gz"])
    clock.advance(2 * 86_400 + 60)  # the story's news block has aged out; the clock stops
    chains.reset()
    pipeline.send_events([unpublish("/b", 2)])
    pipeline.drain()
    assert chains.longest == 5 < LAMBDA_STOPS_AFTER
    objects = pipeline.objects()
    assert b"<news:news>" not in document(objects["sitemap-pages-00001.xml.gz"])  # aged here
    assert "sitemap-pages-00002.xml.gz" not in objects  # /b's shard retired and deleted
    chains.reset()
    _scheduled_index_run(pipeline)  # the sweep then finds nothing left to do
    assert chains.longest == 1
