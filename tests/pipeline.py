"""The local runtime's Pipeline, with the tests' ways of sending and checking."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sitemap_updater.local import runtime
from sitemap_updater.local.feeder import MessageBody
from sitemap_updater.local.poller import Handler


class Pipeline(runtime.Pipeline):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.invocations: Counter[str] = Counter()  # per function
        self.function_errors = 0  # invocations that raised (Lambda would retry their whole batch)
        for name, mapping in self.mappings.items():
            mapping.handler = self._counted(name, mapping.handler)

    def _counted(self, name: str, handler: Handler) -> Handler:
        def invoke(event: dict[str, Any], context: Any) -> dict[str, Any]:
            self.invocations[name] += 1
            try:
                return handler(event, context)
            except Exception:
                self.function_errors += 1
                raise

        return invoke

    def send(self, bodies: Sequence[str]) -> int:
        """The bodies on the ingest queue, through the runtime's own sending."""
        return self.send_messages([MessageBody(body, f"#{n}") for n, body in enumerate(bodies)])

    def send_events(self, events: Sequence[dict[str, Any]]) -> int:
        return self.send([json.dumps(event) for event in events])
