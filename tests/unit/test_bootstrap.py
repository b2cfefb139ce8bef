"""The composition root: each function builds only the clients its use case reaches, once
each, from one botocore session (what the first invocation after a cold start pays)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sitemap_updater.adapters import clients
from sitemap_updater.bootstrap import App
from sitemap_updater.settings import Settings
from tests.unit.test_settings import REQUIRED

INDEXNOW = {
    "INDEXNOW_KEY": "a1b2c3d4e5f6",
    "INDEXNOW_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/indexnow",
    "INDEXNOW_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/indexnow-dlq",
}


class Factory:
    """Records every client asked for; hands out a stand-in."""

    def __init__(self) -> None:
        self.made: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, service: str, config: Any) -> Any:
        with self.lock:
            self.made.append(service)
        return object()


def app_with(factory: Factory, **environment: str) -> App:
    return App(settings=Settings.from_env({**REQUIRED, **environment}), client_for=factory)


@pytest.mark.parametrize(
    ("use_case", "services"),
    [
        ("ingest", ["dynamodb", "sqs", "sqs"]),  # registry, queues, IndexNow's queue
        ("rebuild", ["dynamodb", "s3", "sqs"]),
        ("index", ["dynamodb", "s3", "sqs"]),
        ("indexnow", ["sqs"]),  # IndexNow's queue only: no table, no bucket
    ],
)
def test_a_function_builds_only_the_clients_its_use_case_reaches(
    use_case: str, services: list[str]
) -> None:
    factory = Factory()
    app = app_with(factory, **INDEXNOW)
    reach = {
        "ingest": lambda: app.ingest,
        "rebuild": lambda: app.rebuild_shard,
        "index": lambda: app.publish_index,
        "indexnow": lambda: app.submit_indexnow,
    }[use_case]
    reach()
    reach()  # a second invocation builds nothing more
    assert sorted(factory.made) == sorted(services)


class HeldFactory(Factory):
    """Holds the first build open until a second client is asked for, or for a grace period
    when none is. Without it one thread built the adapter before the others asked, and the
    test passed 5 runs of 5 with App._once's lock removed."""

    GRACE_SECONDS = 2.0  # only how long a correct build waits; nothing measures it

    def __init__(self) -> None:
        super().__init__()
        self.second = threading.Event()

    def __call__(self, service: str, config: Any) -> Any:
        with self.lock:
            self.made.append(service)
            first = len(self.made) == 1
        if first:
            self.second.wait(self.GRACE_SECONDS)
        else:
            self.second.set()
        return object()


def test_threads_asking_at_once_share_one_adapter_and_one_client() -> None:
    factory = HeldFactory()
    app = app_with(factory)
    seen: list[Any] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        seen.append(app.registry)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    assert len(seen) == 8
    assert len({id(registry) for registry in seen}) == 1
    assert factory.made == ["dynamodb"]


def test_clients_come_from_one_botocore_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session per client loaded the endpoint rules and models again for each one."""
    made: list[Any] = []
    real = clients.get_session

    def counting() -> Any:
        made.append(real())
        return made[-1]

    clients.session.cache_clear()
    monkeypatch.setattr(clients, "get_session", counting)
    try:
        first, second = clients.client("sqs"), clients.client("dynamodb")
    finally:
        clients.session.cache_clear()
    assert len(made) == 1
    assert (first.meta.service_model.service_name, second.meta.service_model.service_name) == (
        "sqs",
        "dynamodb",
    )
