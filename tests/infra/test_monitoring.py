"""The functions' own metrics (Powertools EMF) belong to one deployment: the alarm and the
dashboard of a stack read only what its own functions publish, even when several deployments
(a staging and a production stack, or two sites) share an account and a region."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.resources import METRICS_NAMESPACE
from tests.infra.conftest import SITE, Synthesized, synthesize
from tests.infra.test_environment import environment

KEY = "f0e1d2c3b4a5968778695a4b3c2d1e0f"


@pytest.fixture(scope="module")
def two_deployments() -> tuple[Synthesized, Synthesized]:
    """Two stacks of the app, as deployed side by side in one account and region."""
    return (
        synthesize(site_url=SITE, indexnow_key=KEY, stack_name="Sitemaps-Prod"),
        synthesize(site_url=SITE, indexnow_key=KEY, stack_name="Sitemaps-Staging"),
    )


def published(synth: Synthesized) -> set[tuple[str, str]]:
    """(namespace, service dimension) that each function publishes its metrics under."""
    found = set()
    for name in synth.stack.updater.functions.functions:
        env = environment(synth, name)
        found.add((env["POWERTOOLS_METRICS_NAMESPACE"], env["POWERTOOLS_SERVICE_NAME"]))
    return found


def read(synth: Synthesized) -> set[tuple[str, str]]:
    """(namespace, service dimension) of every custom metric an alarm or the dashboard reads."""
    found = set()
    for alarm in synth.resources("AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        if props.get("Namespace") == METRICS_NAMESPACE:
            (dimension,) = props["Dimensions"]
            assert dimension["Name"] == "service"
            found.add((METRICS_NAMESPACE, dimension["Value"]))
    (dashboard,) = synth.resources("AWS::CloudWatch::Dashboard").values()
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    body: dict[str, Any] = json.loads("".join(p if isinstance(p, str) else "X" for p in parts))
    for widget in body["widgets"]:
        for metric in widget["properties"].get("metrics", []):
            if metric[0] == METRICS_NAMESPACE:
                assert metric[2] == "service"
                found.add((METRICS_NAMESPACE, metric[3]))
    return found


def test_alarms_and_dashboard_read_what_the_functions_publish(
    two_deployments: tuple[Synthesized, Synthesized],
) -> None:
    for synth in two_deployments:
        (stream,) = published(synth)  # one deployment, one metric stream
        assert read(synth) == {stream}


def test_two_deployments_in_one_account_never_share_their_metrics(
    two_deployments: tuple[Synthesized, Synthesized],
) -> None:
    """Otherwise staging's failures would fire production's IndexNowUrlsNotQueued alarm,
    and each dashboard would show the sum of both."""
    prod, staging = two_deployments
    assert not published(prod) & published(staging)
    assert not read(prod) & read(staging)
