"""Shared fixtures: fake AWS credentials (never a real account), Powertools settings, and
moto the documented way: the mock starts before any client is created."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.httpsite import StaticSite

# Powertools objects read these when sitemap_updater.observability is first imported.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "sitemap-updater-test")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "SitemapUpdaterTest")

SITE = "https://www.example.com"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run first: with ``-n 2 --dist worksteal`` (make test) the
    model-based test, minutes long, then has a worker to itself from the start while the
    other takes the rest, instead of starting last and making the run that much longer."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and no endpoint override: nothing can reach a real account."""
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture(autouse=True)
def restored_environment() -> Iterator[None]:
    """Whatever a test sets in os.environ goes with it: the operator commands set Powertools'
    variables for their process (POWERTOOLS_METRICS_DISABLED among them), which must not
    reach the next test. moto's dashboard copies of its models go too (memory)."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)
    if "moto" in sys.modules:  # and moto's dashboard copies of every model (poller.poll_round)
        from moto.core.model_instances import reset_model_data

        reset_model_data()


@pytest.fixture(autouse=True)
def clean_metrics() -> Iterator[None]:
    from sitemap_updater.observability import metrics

    yield
    metrics.clear_metrics()


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime | None = None):
        self.now = start or datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def http_site() -> Iterator[StaticSite]:
    """A hand-made site served on 127.0.0.1 (put bytes at paths)."""
    site = StaticSite()
    yield site
    site.stop()
