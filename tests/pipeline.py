"""The local runtime's Pipeline, with the tests' ways of sending and checking."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sitemap_updater.local import runtime
from sitemap_updater.local.feeder import MessageBody


class Pipeline(runtime.Pipeline):
    def send(self, bodies: Sequence[str]) -> int:
        """The bodies on the ingest queue, through the runtime's own sending."""
        return self.send_messages([MessageBody(body, f"#{n}") for n, body in enumerate(bodies)])

    def send_events(self, events: Sequence[dict[str, Any]]) -> int:
        return self.send([json.dumps(event) for event in events])

    @property
    def function_errors(self) -> int:
        """Invocations that raised (Lambda would retry their whole batch)."""
        return sum(mapping.errors for mapping in self.mappings.values())
