"""Index Lambda: refresh the sitemap index and robots.txt. All requests share one FIFO
message group, so runs never overlap; a batch of requests is served by one run."""

from __future__ import annotations

from aws_lambda_powertools.utilities.typing import LambdaContext

import sitemap_updater.usecases.publish_index  # noqa: F401 - loaded at init (bootstrap.py)
from sitemap_updater.adapters.queues import index_request
from sitemap_updater.bootstrap import App, app
from sitemap_updater.handlers import Event, Response, serve_once
from sitemap_updater.observability import logged


@logged
def handler(event: Event, context: LambdaContext, app_: App | None = None) -> Response:
    publish = (app_ or app()).publish_index
    requests = [index_request(record["body"]) for record in event.get("Records", [])]
    # Shards' own requests are served by patching their lines, and the feed's by writing it
    # alone; a scheduled run (or any other message) publishes in full.
    known = [r for r in requests if r is not None and (r.shard is not None or r.files)]
    shards = [r.shard for r in known if r.shard is not None]
    sent = [r.sent for r in known if r.sent is not None]

    def serve(_: str) -> str:
        publish(shards if len(known) == len(requests) else None, sent)
        return "published"

    return serve_once(event, context, lambda _record: "index", serve)
