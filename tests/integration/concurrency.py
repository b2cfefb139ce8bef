"""Real threads against moto's in-process mock, one AWS request at a time.

moto's backends are plain dictionaries, not thread-safe: two threads inside one DynamoDB
transaction can fail with "dictionary changed size during iteration". moto's threaded
server would not help: it dispatches every request to the same backends from a thread per
request. So :class:`Serialised` wraps each client's ``_make_api_call`` in one lock, which
makes every AWS request (with its botocore hooks, the ``Recorder``'s checks included) one
atomic step, as the real services guarantee per request: a PutObject or a conditional
write is evaluated and applied whole; a DynamoDB transaction is serialisable. Everything
between two requests (reading, rendering, deciding, retrying), which is where races live,
runs truly concurrently on real threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3

from sitemap_updater.bootstrap import App, build_app
from sitemap_updater.settings import Settings


class Serialised:
    """One re-entrant lock around every request of the clients it wraps."""

    def __init__(self) -> None:
        self.lock = threading.RLock()

    def client(self, client: Any) -> Any:
        call = client._make_api_call

        def locked(operation: str, params: dict[str, Any]) -> Any:
            with self.lock:
                return call(operation, params)

        client._make_api_call = locked
        return client

    def app(self, app: App) -> App:
        for client in clients(app):
            self.client(client)
        return app


def clients(app: App) -> tuple[Any, Any, Any]:
    return app.store.client, app.registry.client, app.queues.client


class TickingClock:
    """A clock that moves on one second every time it is read, from any thread: two writers
    never render the same lastmod, so an older write winning would show."""

    def __init__(self, start: datetime | None = None):
        self._now = start or datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=1)
            return self._now


def worker_app(settings: Settings, clock: Callable[[], datetime], serialised: Serialised) -> App:
    """A function instance of its own: its own session and clients, as a second Lambda has."""
    session = boto3.session.Session(region_name="us-east-1")
    return serialised.app(build_app(settings, session=session, clock=clock))


def run_threads(targets: Iterable[Callable[[], None]], timeout: float = 60) -> None:
    """Start every target on its own thread, join them all, and re-raise the first error."""
    errors: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException as exc:  # re-raised in the test's thread
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guarded(target), daemon=True) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
        assert not thread.is_alive(), "a racing thread hung"
    if errors:
        raise errors[0]
