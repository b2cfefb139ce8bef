"""Each CMS's samples through the endpoint and the whole pipeline on moto: a publish lists the
page, a slug change moves it in one registry transaction, an unpublish without a URL takes
it out, and a replayed request changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater import connectors
from tests.integration.conftest import PipelineFactory, Recorder, site_entries
from tests.pipeline import Pipeline
from tests.unit.test_connectors_signing import SAMPLES, event_sample
from tests.unit.test_webhook import signed

# (folder, the connector's publish, slug change, and unpublish-without-URL samples)
JOURNEYS = [
    ("ghost", "post-published", "post-slug-changed", "post-deleted"),
    ("wp-webhooks", "post-create", "post-update-slug", "post-delete"),
    ("wordpress", "publish", "permalink-change", "unpublish"),
    ("strapi", "v5-entry-publish", "v5-entry-publish-slug", "v5-entry-delete"),
    ("contentful", "entry-publish", "entry-publish-slug", "entry-delete"),
    ("sanity", "create", "update-slug", "delete"),
    ("shopify", "products-create", "products-update-handle", "products-delete"),
]


@pytest.fixture
def served(make_pipeline: PipelineFactory) -> Pipeline:
    return make_pipeline(CONNECTORS=json.dumps(connectors.read(SAMPLES / "connectors.toml")))


def deliver(pipeline: Pipeline, folder: str, name: str) -> list[str]:
    """The sample, signed, to the endpoint; the pipeline drained; the URLs it published."""
    receive = pipeline.app.receive_webhook
    if folder == "shopify":
        event = event_sample(name)
        receive.from_eventbridge(event, "e1")
        mapped = connectors.map_event(receive.connectors["shopify"], event)
    else:
        request = signed(folder, name)
        assert receive(request, name).status == 202
        mapped = connectors.map_request(receive.connectors[folder], request)
    pipeline.drain()
    return [e["url"] for e in mapped.events if e["type"] == "publish"]


@pytest.mark.parametrize(("folder", "first", "moved", "gone"), JOURNEYS)
def test_publish_slug_change_and_unpublish_without_a_url(
    served: Pipeline, folder: str, first: str, moved: str, gone: str
) -> None:
    recorder = Recorder(served)
    published = deliver(served, folder, first)
    assert set(listed(served)) == set(published)

    recorder.calls.clear()
    renamed = deliver(served, folder, moved)
    assert set(listed(served)) == set(renamed)
    retired = set(published) - set(renamed)
    assert retired
    transactions = [
        _urls_in(params) for name, params in recorder.calls if name == "TransactWriteItems"
    ]
    for old in retired:  # in the transaction that lists the new URL
        assert any(old in urls and urls & set(renamed) for urls in transactions), old

    deliver(served, folder, gone)
    assert listed(served) == set()
    assert recorder.violations == []


def listed(pipeline: Pipeline) -> set[str]:
    objects = pipeline.objects()
    return set(site_entries(objects)) if "sitemap.xml" in objects else set()


def _urls_in(params: dict[str, Any]) -> set[str]:
    urls = set()
    for action in params["TransactItems"]:
        ((_, request),) = action.items()
        item = request.get("Item", {})
        if item.get("sk", {}).get("S") == "URL":
            urls.add(item["url"]["S"])
    return urls


def test_a_replayed_request_changes_nothing(served: Pipeline) -> None:
    deliver(served, "ghost", "post-published")
    first = served.objects()
    deliver(served, "ghost", "post-published")
    assert served.objects() == first
    assert listed(served) == {"https://www.example.com/spring-menu/"}
