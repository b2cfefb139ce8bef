"""What search engines read, on moto: images, video, news (and its ageing), hreflang
clusters kept complete and reciprocal, groups, and size-aware placement with clusters."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.adapters.registry import cluster_key, url_key
from sitemap_updater.domain.clusters import MAX_REDIRECTS
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.domain.sharding import Limits
from tests.conftest import SITE, FakeClock
from tests.integration.conftest import (
    NS,
    FaultInjector,
    PipelineFactory,
    Recorder,
    document,
    parse,
    publish,
    shard_of,
    unpublish,
)
from tests.pipeline import Pipeline
from tests.rendering import entry_size

XHTML = "{http://www.w3.org/1999/xhtml}link"
NEWS = "{http://www.google.com/schemas/sitemap-news/0.9}news"
IMAGE_LOC = "{http://www.google.com/schemas/sitemap-image/1.1}loc"
VIDEO = "{http://www.google.com/schemas/sitemap-video/1.1}video"


def url_elements(objects: dict[str, bytes]) -> dict[str, Any]:
    """URL -> its <url> element, across every shard the index names."""
    found = {}
    index = parse(objects["sitemap.xml"])
    for loc in index.findall("sm:sitemap/sm:loc", NS):
        for element in parse(objects[loc.text.removeprefix(f"{SITE}/")]).findall("sm:url", NS):
            url = element.findtext("sm:loc", namespaces=NS)
            assert url not in found, f"{url} is listed twice"
            found[url] = element
    return found


def hreflang(objects: dict[str, bytes]) -> dict[str, set[tuple[str, str]]]:
    """URL -> the (hreflang, href) pairs its entry lists."""
    return {
        url: {(link.get("hreflang"), link.get("href")) for link in element.iter(XHTML)}
        for url, element in url_elements(objects).items()
    }


def alt(path: str, lang: str) -> dict[str, str]:
    return {"hreflang": lang, "href": f"{SITE}{path}"}


def test_images_videos_and_news_are_rendered_and_valid(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    video = {
        "thumbnail_loc": "https://cdn.example.net/t.jpg",
        "title": "How & why <it> works",
        "description": "A description",
        "content_loc": "https://cdn.example.net/v.mp4",
        "duration": 90,
        "family_friendly": True,
        "restriction": {"relationship": "allow", "countries": ["GB", "IE"]},
    }
    news = {
        "publication": {"name": "The Example Times", "language": "en"},
        "publication_date": "2026-11-21T11:00:00Z",
        "title": "Launch",
    }
    pipeline.send_events(
        [
            publish(
                "/article",
                1,
                images=[{"loc": "https://cdn.example.net/a.jpg"}, {"loc": f"{SITE}/b.png?x=1&y=2"}],
                videos=[video],
                news=news,
            )
        ]
    )
    pipeline.drain()
    element = url_elements(pipeline.objects())[f"{SITE}/article"]
    assert [loc.text for loc in element.iter(IMAGE_LOC)] == [
        "https://cdn.example.net/a.jpg",
        f"{SITE}/b.png?x=1&y=2",
    ]
    (rendered,) = element.iter(VIDEO)
    assert rendered.findtext("{*}title") == "How & why <it> works"
    assert rendered.find("{*}restriction").text == "GB IE"
    assert element.find(NEWS) is not None
    assert recorder.violations == []  # every object validated at every write


def test_news_ages_out_by_itself_and_the_page_stays_listed(
    pipeline: Pipeline, clock: FakeClock, recorder: Recorder
) -> None:
    published = clock().strftime("%Y-%m-%dT%H:%M:%SZ")
    news = {
        "publication": {"name": "The Example Times", "language": "en"},
        "publication_date": published,
        "title": "Today's news",
    }
    pipeline.send_events([publish("/story", 1, news=news), publish("/evergreen", 1)])
    pipeline.drain()
    assert url_elements(pipeline.objects())[f"{SITE}/story"].find(NEWS) is not None
    output = pipeline.app.registry.shard_output("pages-00001")
    assert output.news_expiry == "2026-11-23T12:00:00Z"

    clock.advance(86_400)  # a day later the scheduled sweep changes nothing
    _scheduled_index_run(pipeline)
    assert url_elements(pipeline.objects())[f"{SITE}/story"].find(NEWS) is not None

    clock.advance(86_400 + 60)  # two days and a minute: no new event for the page
    recorder.reset()
    _scheduled_index_run(pipeline)
    story = url_elements(pipeline.objects())[f"{SITE}/story"]
    assert story.find(NEWS) is None  # aged out...
    assert story.findtext("sm:loc", namespaces=NS) == f"{SITE}/story"  # ...still listed
    assert "sitemap-pages-00001.xml.gz" in recorder.puts
    assert pipeline.app.registry.shard_output("pages-00001").news_expiry is None


def _scheduled_index_run(pipeline: Pipeline) -> None:
    """What the EventBridge schedule does: a message on the index queue."""
    pipeline.sqs.send_message(
        QueueUrl=pipeline.stack.queues["index"].url,
        MessageBody=json.dumps({"source": "aws.events", "detail-type": "Scheduled Event"}),
        MessageGroupId="index",
        MessageDeduplicationId=str(pipeline.app.clock().timestamp()),
    )
    pipeline.drain()


def test_a_cluster_declared_partially_and_at_different_times_is_complete_and_reciprocal(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)  # every page in its own shard
    recorder = Recorder(pipeline)
    en, de, fr = f"{SITE}/en", f"{SITE}/de", f"{SITE}/fr"
    # /en declares /de, which is not published yet: /en lists nothing (it is alone).
    pipeline.send_events([publish("/en", 1, hreflang="en", alternates=[alt("/de", "de")])])
    pipeline.drain()
    assert hreflang(pipeline.objects())[en] == set()

    # /de is published, declaring nothing: its language is what /en says it is.
    pipeline.send_events([publish("/de", 1)])
    pipeline.drain()
    pair = {("en", en), ("de", de)}
    assert hreflang(pipeline.objects()) == {en: pair, de: pair}

    # /fr declares only /en: it joins, and every member now lists all three.
    recorder.reset()
    pipeline.send_events([publish("/fr", 1, hreflang="fr", alternates=[alt("/en", "en")])])
    pipeline.drain()
    three = {("en", en), ("de", de), ("fr", fr)}
    assert hreflang(pipeline.objects()) == {en: three, de: three, fr: three}
    # Publishing /fr rewrote its siblings' entries, so their shards.
    assert {"sitemap-pages-00001.xml.gz", "sitemap-pages-00002.xml.gz"} <= set(recorder.puts)

    # /de is unpublished: it leaves every sibling's entry.
    pipeline.send_events([unpublish("/de", 2)])
    pipeline.drain()
    assert hreflang(pipeline.objects()) == {
        en: {("en", en), ("fr", fr)},
        fr: {("en", en), ("fr", fr)},
    }
    assert recorder.violations == []


def test_two_clusters_merge_when_a_page_links_them(pipeline: Pipeline) -> None:
    pipeline.send_events(
        [
            publish("/a/en", 1, hreflang="en", alternates=[alt("/a/de", "de")]),
            publish("/a/de", 1, hreflang="de"),
            publish("/b/fr", 1, hreflang="fr", alternates=[alt("/b/it", "it")]),
            publish("/b/it", 1, hreflang="it"),
        ]
    )
    pipeline.drain()
    assert len(hreflang(pipeline.objects())[f"{SITE}/a/en"]) == 2
    pipeline.send_events(
        [publish("/a/en", 2, hreflang="en", alternates=[alt("/a/de", "de"), alt("/b/fr", "fr")])]
    )
    pipeline.drain()
    everyone = {
        ("en", f"{SITE}/a/en"),
        ("de", f"{SITE}/a/de"),
        ("fr", f"{SITE}/b/fr"),
        ("it", f"{SITE}/b/it"),
    }
    assert hreflang(pipeline.objects()) == dict.fromkeys((href for _, href in everyone), everyone)


# 63 languages: with the page that links them, a cluster of 64 pages (the most it holds).
LANGUAGE_CODES = (
    "af am ar as az be bg bn bo br bs ca cs cy da de el en eo es et eu fa fi fo fr fy ga "
    "gd gl gu ha he hi hr hu hy id is it ja jv ka kk km kn ko ky lb lo lt lv mk ml mn mr "
    "ms mt my nb ne nl nn"
)
LANGUAGES = LANGUAGE_CODES.split()


def test_a_page_linking_as_many_clusters_as_a_cluster_holds_merges_them(
    pipeline: Pipeline,
) -> None:
    """Each language version published first with only its own hreflang (a cluster of one
    each), then the x-default page declaring all 63: one event merges 63 clusters and links
    63 pages. Rewriting every linked page's record besides leaving 62 redirects took the
    transaction past DynamoDB's 100 actions: refused every time, the event was retried until
    SQS dead-lettered it with no reason, and the page never reached a sitemap."""
    assert len(LANGUAGES) == 63
    pipeline.send_events([publish(f"/{lang}", 1, hreflang=lang) for lang in LANGUAGES])
    pipeline.drain()
    pipeline.send_events(
        [
            publish(
                "/",
                1,
                hreflang="x-default",
                alternates=[alt(f"/{lang}", lang) for lang in LANGUAGES],
            )
        ]
    )
    pipeline.drain()
    assert pipeline.dead_letters() == []
    everyone = {("x-default", f"{SITE}/")} | {(lang, f"{SITE}/{lang}") for lang in LANGUAGES}
    assert hreflang(pipeline.objects()) == dict.fromkeys((href for _, href in everyone), everyone)
    # Every page reads the merged cluster, directly or through the redirect its old one left.
    registry = pipeline.app.registry
    pointers = {registry.url_state(href).cluster for _, href in everyone}
    resolved = registry.clusters(pointers)
    assert set(resolved) == pointers
    assert len({cluster.cid for cluster in resolved.values()}) == 1
    assert set(next(iter(resolved.values())).all) == {href for _, href in everyone}


def redirect_hops(pipeline: Pipeline, cid: str) -> int:
    """How many redirects a cluster pointer goes through to reach the live cluster record."""
    registry = pipeline.app.registry
    hops = 0
    while True:
        item = registry.client.get_item(TableName=registry.table, Key=cluster_key(cid))["Item"]
        if "redirect" not in item:
            return hops
        cid, hops = item["redirect"]["S"], hops + 1


def test_a_page_declared_long_before_it_is_published_still_finds_its_cluster(
    pipeline: Pipeline,
) -> None:
    """A CMS publishes each translation alone as it is finished, and links it to the earlier
    ones on its next revision; the first one names the x-default hub, published last. Every
    link merges the newcomer's cluster of one into the group. When the survivor was the
    smaller cluster id, an order whose ids happen to decrease made every merge redirect the
    group's cluster once more: the hub's pointer (a page not yet published is never resized,
    so never re-pointed) ended 16 redirects away, past what a read follows, and the hub,
    published, started a cluster of its own: listed by nobody, listing nobody."""
    langs = LANGUAGES[:17]
    pipeline.send_events([publish(f"/{lang}", 1, hreflang=lang) for lang in langs])
    pipeline.drain()
    registry = pipeline.app.registry
    cids = {lang: registry.url_state(f"{SITE}/{lang}").cluster or "" for lang in langs}
    order = sorted(langs, key=cids.__getitem__, reverse=True)
    hub = [alt("/", "x-default")]
    for k, lang in enumerate(order):
        earlier = [alt(f"/{other}", other) for other in order[:k]]
        pipeline.send_events([publish(f"/{lang}", 2, hreflang=lang, alternates=earlier or hub)])
        pipeline.drain()
    hops = redirect_hops(pipeline, registry.url_state(f"{SITE}/").cluster or "")

    pipeline.send_events([publish("/", 1, hreflang="x-default")])
    pipeline.drain()
    assert pipeline.dead_letters() == []
    everyone = {("x-default", f"{SITE}/")} | {(lang, f"{SITE}/{lang}") for lang in langs}
    assert hreflang(pipeline.objects()) == dict.fromkeys((href for _, href in everyone), everyone)
    assert hops <= 4  # merged by size, the hub's cluster is redirected at most log2(17) times


def test_a_cluster_id_too_many_redirects_away_is_an_error_not_a_cluster_left_out(
    pipeline: Pipeline,
) -> None:
    """Merges keep ids within 6 redirects; a read follows 16. Beyond, it used to leave the
    cluster out: pages rendered without alternates, and a page joining it started a cluster of
    its own. Now the read fails, for SQS to retry and dead-letter with the reason."""
    pipeline.send_events([publish("/en", 1, hreflang="en")])
    pipeline.drain()
    registry = pipeline.app.registry
    live = registry.url_state(f"{SITE}/en").cluster or ""
    chain = [f"redirect{n:02d}" for n in range(MAX_REDIRECTS + 1)]
    for cid, target in zip(chain, [*chain[1:], live], strict=True):
        item = {"version": {"N": "1"}, "redirect": {"S": target}}
        registry.client.put_item(TableName=registry.table, Item={**cluster_key(cid), **item})
    assert registry.clusters([chain[1]])[chain[1]].cid == live  # 16 redirects: followed
    with pytest.raises(RetryableError, match="more than 16 redirects"):
        registry.clusters([chain[0]])


def test_x_default_and_a_page_that_stops_declaring_a_link(pipeline: Pipeline) -> None:
    pipeline.send_events(
        [
            publish(
                "/en", 1, hreflang="en", alternates=[alt("/en", "x-default"), alt("/de", "de")]
            ),
            publish("/de", 1, hreflang="de", alternates=[alt("/en", "en")]),
        ]
    )
    pipeline.drain()
    links = {("en", f"{SITE}/en"), ("x-default", f"{SITE}/en"), ("de", f"{SITE}/de")}
    assert hreflang(pipeline.objects()) == {f"{SITE}/en": links, f"{SITE}/de": links}
    # Both stop declaring each other: the link is gone, so is the cluster in the sitemaps.
    pipeline.send_events([publish("/en", 2, hreflang="en"), publish("/de", 2, hreflang="de")])
    pipeline.drain()
    assert hreflang(pipeline.objects()) == {f"{SITE}/en": set(), f"{SITE}/de": set()}


def test_a_sibling_that_outgrows_its_shard_when_its_cluster_grows_moves(
    make_pipeline: PipelineFactory,
) -> None:
    max_bytes = 4096
    room = Limits(max_shard_bytes=max_bytes).max_entry_bytes
    bare = entry_size(SitemapEntry(url=f"{SITE}/"))
    length = room // 3 - bare - 20
    paths = [f"/{letter * length}" for letter in "abc"]
    pipeline = make_pipeline(MAX_SHARD_BYTES=max_bytes)
    recorder = Recorder(pipeline)
    pipeline.send_events([publish(path, 1) for path in paths])  # three bare entries fill it
    pipeline.drain()
    # A page in another shard declares /b as its German version: /b's entry now lists two
    # links (itself and the new page), more than its shard has room for, so it moves.
    pipeline.send_events([publish("/en", 1, hreflang="en", alternates=[alt(paths[1], "de")])])
    pipeline.drain()
    objects = pipeline.objects()
    assert shard_of(objects, SITE + paths[1]) != "sitemap-pages-00001.xml.gz"
    assert {SITE + paths[0], SITE + paths[2]} <= set(url_elements(objects))
    assert hreflang(objects)[SITE + paths[1]] == {("de", SITE + paths[1]), ("en", f"{SITE}/en")}
    for key, body in objects.items():
        assert len(document(body)) <= max_bytes, key
    assert recorder.violations == []


def test_groups_by_path_rule_and_by_explicit_field_all_in_one_index(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(GROUP_RULES="/news/=news,/shop/=products")
    pipeline.send_events(
        [
            publish("/news/a", 1),
            publish("/shop/b", 1),
            publish("/about", 1),
            publish("/landing", 1, sitemap="campaigns"),
        ]
    )
    pipeline.drain()
    objects = pipeline.objects()
    assert shard_of(objects, f"{SITE}/news/a") == "sitemap-news-00001.xml.gz"
    assert shard_of(objects, f"{SITE}/shop/b") == "sitemap-products-00001.xml.gz"
    assert shard_of(objects, f"{SITE}/about") == "sitemap-pages-00001.xml.gz"
    assert shard_of(objects, f"{SITE}/landing") == "sitemap-campaigns-00001.xml.gz"
    assert len(url_elements(objects)) == 4  # one index names every group's shards
    # The group is chosen when a page is first placed; it keeps its shard for life.
    pipeline.send_events([publish("/about", 2, sitemap="campaigns")])
    pipeline.drain()
    assert shard_of(pipeline.objects(), f"{SITE}/about") == "sitemap-pages-00001.xml.gz"


def test_siblings_left_unsettled_are_settled_by_the_page_s_next_version(
    make_pipeline: PipelineFactory,
) -> None:
    """A change of language committed, then its marking of the siblings' shards failed; the
    page's next version, a new lastmod only, settles them (the failed one, redelivered, is
    stale by then and settles nothing)."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)  # a shard per page
    en, de = f"{SITE}/en", f"{SITE}/de"
    pipeline.send_events([publish("/en", 1, hreflang="en", alternates=[alt("/de", "de")])])
    pipeline.drain()
    pipeline.send_events([publish("/de", 1, hreflang="de", alternates=[alt("/en", "en")])])
    pipeline.drain()
    faults = FaultInjector(pipeline)
    faults.fail("BatchWriteItem", when=lambda params: "PEND#" in str(params))
    british = {"hreflang": "en-GB", "alternates": [alt("/de", "de")]}
    pipeline.send_events(
        [publish("/en", 2, **british), publish("/en", 3, **british, lastmod="2026-11-20")]
    )
    pipeline.drain()

    assert faults.fired
    objects = pipeline.objects()
    assert hreflang(objects)[en] == hreflang(objects)[de] == {("en-GB", en), ("de", de)}


def test_a_new_lastmod_in_a_settled_cluster_asks_only_for_its_own_shard(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)  # a shard per page
    pages = {"/en": "en", "/de": "de", "/fr": "fr"}
    every = [alt(path, lang) for path, lang in pages.items()]
    pipeline.send_events(
        [publish(path, 1, hreflang=lang, alternates=every) for path, lang in pages.items()]
    )
    pipeline.drain()
    recorder = Recorder(pipeline)
    pipeline.send_events([publish("/en", 2, hreflang="en", alternates=every, lastmod="2026-11-28")])
    pipeline.drain()

    asked = [
        json.loads(entry["MessageBody"])
        for name, params in recorder.calls
        if name == "SendMessageBatch" and "rebuild" in params["QueueUrl"]
        for entry in params["Entries"]
    ]
    assert len(asked) == 1
    assert shard_of(pipeline.objects(), f"{SITE}/en").endswith(f"{asked[0]['shard']}.xml.gz")
    links = {(lang, f"{SITE}{path}") for path, lang in pages.items()}
    assert {path: hreflang(pipeline.objects())[f"{SITE}{path}"] for path in pages} == dict.fromkeys(
        pages, links
    )


def test_a_redelivery_that_settles_its_cluster_marks_its_own_shard_too(
    make_pipeline: PipelineFactory, clock: FakeClock
) -> None:
    """A sibling's change of language commits and its marking fails; a redelivered duplicate
    then settles the cluster: the marker its own shard had is long applied, so its settle
    marks that shard too, or the cluster would be settled without it."""
    make_pipeline()  # moto's mock is on; this pipeline's failed messages wait 5 s
    pipeline = Pipeline.create(
        SITE, {"MAX_URLS_PER_SHARD": 1}, visibility_timeout=5, clock=clock, prefix="settle"
    )
    ingest = pipeline.mappings["ingest"]
    a, b, c = f"{SITE}/a", f"{SITE}/b", f"{SITE}/c"
    french = {"hreflang": "fr-CA", "alternates": [alt("/a", "en"), alt("/b", "de")]}
    pipeline.send_events(
        [
            publish("/a", 1, hreflang="en", alternates=[alt("/b", "de"), alt("/c", "fr-CA")]),
            publish("/b", 1, hreflang="de", alternates=[alt("/a", "en"), alt("/c", "fr-CA")]),
            publish("/c", 1, **french),
        ]
    )
    pipeline.drain()
    three = {("en", a), ("de", b), ("fr-CA", c)}
    assert hreflang(pipeline.objects()) == dict.fromkeys((a, b, c), three)

    # /c becomes fr (no sibling's entry grows: none is resized): committed, then its marking
    # of the siblings' shards fails.
    faults = FaultInjector(pipeline)
    faults.fail("BatchWriteItem", when=lambda p: "PutRequest" in str(p) and "PEND#" in str(p))
    french_now = {**french, "hreflang": "fr"}
    pipeline.send_events([publish("/c", 2, **french_now)])
    assert ingest.poll_once() == 1
    assert faults.fired
    # /a's first event, delivered again (SQS delivers at least once): a duplicate.
    pipeline.send_events(
        [publish("/a", 1, hreflang="en", alternates=[alt("/b", "de"), alt("/c", "fr-CA")])]
    )
    assert ingest.poll_once() == 1
    # /c's next version, a new lastmod only, before /c 2 is delivered again (stale then).
    pipeline.send_events([publish("/c", 3, **french_now, lastmod="2026-11-20")])
    assert ingest.poll_once() == 1
    pipeline.drain()

    now = {("en", a), ("de", b), ("fr", c)}
    assert hreflang(pipeline.objects()) == dict.fromkeys((a, b, c), now)


def publish_with_a_large_reservation(pipeline: Pipeline, path: str) -> None:
    """``path`` published with images, then without: its shard keeps the larger room."""
    images = [{"loc": f"https://cdn.example.net/{n}-a-long-image-name.jpg"} for n in range(4)]
    pipeline.send_events([publish(path, 1, images=images)])
    pipeline.drain()
    pipeline.send_events([publish(path, 2)])
    pipeline.drain()


def test_a_page_newly_linked_whose_reservation_already_fits_lists_its_alternates(
    make_pipeline: PipelineFactory,
) -> None:
    """Its entry, not only its URL record, must name the cluster: a rebuild renders the
    alternates of the entries that name one."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)  # a shard per page
    en, de = f"{SITE}/en", f"{SITE}/de"
    publish_with_a_large_reservation(pipeline, "/de")
    pipeline.send_events([publish("/en", 1, hreflang="en", alternates=[alt("/de", "de")])])
    pipeline.drain()

    pair = {("en", en), ("de", de)}
    assert hreflang(pipeline.objects()) == {en: pair, de: pair}


# What reaches the cluster after /en 1, whose relink of /de was lost: its redelivery alone;
# /en 2 (a new lastmod) first, which makes it stale; or /x joining, with no language of its
# own (no sibling's line changes), first.
AFTER_A_LOST_RELINK = {
    "redelivered": [],
    "overtaken": [
        publish("/en", 2, hreflang="en", alternates=[alt("/de", "de")], lastmod="2026-11-20")
    ],
    "joined": [publish("/x", 1, alternates=[alt("/en", "en")])],
}


@pytest.mark.parametrize("then", list(AFTER_A_LOST_RELINK))
def test_a_relink_lost_with_its_invocation_is_done_by_the_next_settle(
    make_pipeline: PipelineFactory, then: str
) -> None:
    """The linking commit holds, then the invocation dies before /de's entry is written again
    to name the cluster. Whatever settles the cluster next relinks /de."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)  # a shard per page
    ingest = pipeline.mappings["ingest"]
    en, de = f"{SITE}/en", f"{SITE}/de"
    publish_with_a_large_reservation(pipeline, "/de")
    faults = FaultInjector(pipeline)
    # Transactions naming /de: /en's into a full shard, /en's (linking /de), the relink.
    faults.fail("TransactWriteItems", occurrence=3, when=lambda params: "/de" in str(params))
    pipeline.send_events([publish("/en", 1, hreflang="en", alternates=[alt("/de", "de")])])
    assert ingest.poll_once() == 1
    assert faults.fired
    if events := AFTER_A_LOST_RELINK[then]:
        pipeline.send_events(events)
        assert ingest.poll_once() == 1  # /en 1 is not visible yet
    pipeline.drain()

    pair = {("en", en), ("de", de)}
    listed = hreflang(pipeline.objects())
    assert {en: listed[en], de: listed[de]} == {en: pair, de: pair}


def test_a_page_linked_by_a_change_that_lists_nothing_yet_still_names_its_cluster(
    make_pipeline: PipelineFactory,
) -> None:
    """/a (no language of its own) comes to declare /de while nothing lists anything: no
    sibling's line changes, yet /de, newly linked and whose old reservation fits, must get
    an entry naming the cluster. /a's next version gives /a a language: /de is no target any
    more (its pointer names the cluster) and does not grow, so only then is too late."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)  # a shard per page
    a, de = f"{SITE}/a", f"{SITE}/de"
    publish_with_a_large_reservation(pipeline, "/de")
    pipeline.send_events([publish("/a", 1, hreflang="en")])  # a cluster of one, settled
    pipeline.drain()
    pipeline.send_events([publish("/a", 2, alternates=[alt("/de", "de")])])  # lists nothing
    pipeline.drain()
    assert hreflang(pipeline.objects()) == {a: set(), de: set()}  # as build would: one language
    pipeline.send_events([publish("/a", 3, hreflang="en", alternates=[alt("/de", "de")])])
    pipeline.drain()

    pair = {("en", a), ("de", de)}
    assert hreflang(pipeline.objects()) == {a: pair, de: pair}


def test_a_move_whose_invocation_died_after_its_commit_still_unlists_the_url_it_left(
    make_pipeline: PipelineFactory,
) -> None:
    """Entity 42 moves from /old (in a cluster with /fr) to /new, which links /de; /old's
    unpublish and /new's commit hold, then the invocation dies relinking /de. Delivered again,
    the move is a duplicate, which must still ask for /old's shard to be rebuilt."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)  # a shard per page
    new, de, fr = f"{SITE}/new", f"{SITE}/de", f"{SITE}/fr"
    publish_with_a_large_reservation(pipeline, "/de")
    pipeline.send_events(
        [
            publish("/fr", 1, hreflang="fr"),
            publish("/old", 1, id="42", hreflang="en", alternates=[alt("/fr", "fr")]),
        ]
    )
    pipeline.drain()
    faults = FaultInjector(pipeline)
    relink = "URL#https://www.example.com/de"  # a transaction that starts with /de's record
    faults.fail("TransactWriteItems", when=lambda p: relink in str(p["TransactItems"][0]))
    pipeline.send_events(
        [publish("/new", 2, id="42", hreflang="en", alternates=[alt("/de", "de")])]
    )
    pipeline.drain()

    assert faults.fired
    pair = {("en", new), ("de", de)}
    assert hreflang(pipeline.objects()) == {fr: set(), new: pair, de: pair}


@pytest.mark.parametrize("clustered", [False, True])
def test_a_move_overtaken_before_its_redelivery_still_unlists_the_url_it_left(
    make_pipeline: PipelineFactory, clustered: bool
) -> None:
    """Entity 42's move from /old to /new commits and its invocation dies before asking for
    the rebuilds; the entity's next version (a new lastmod) comes first, and makes the move's
    redelivery stale: that next version must settle /old."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)  # a shard per page
    ingest = pipeline.mappings["ingest"]
    links = {"hreflang": "en", "alternates": [alt("/fr", "fr")]} if clustered else {}
    pipeline.send_events([publish("/fr", 1, hreflang="fr"), publish("/old", 1, id="42", **links)])
    pipeline.drain()
    faults = FaultInjector(pipeline)
    faults.fail("SendMessageBatch", when=lambda params: "rebuild" in params["QueueUrl"])
    pipeline.send_events([publish("/new", 2, id="42")])
    assert ingest.poll_once() == 1
    assert faults.fired
    pipeline.send_events([publish("/new", 3, id="42", lastmod="2026-11-20")])
    assert ingest.poll_once() == 1  # /new 2 is not visible yet
    pipeline.drain()

    assert hreflang(pipeline.objects()) == {f"{SITE}/fr": set(), f"{SITE}/new": set()}


def test_a_page_republished_after_its_tombstone_expired_is_linked_again(
    make_pipeline: PipelineFactory,
) -> None:
    """/de leaves the cluster's pages (unpublished), its record expires, it is published
    again outside any cluster; when /en declares it again, its member must be as it is now."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)  # a shard per page
    en, de = f"{SITE}/en", f"{SITE}/de"
    declares = {"hreflang": "en", "alternates": [alt("/de", "de")]}
    pipeline.send_events([publish("/de", 1), publish("/en", 1, **declares)])
    pipeline.drain()
    pipeline.send_events([unpublish("/de", 2)])
    pipeline.drain()
    registry = pipeline.app.registry
    registry.client.delete_item(TableName=registry.table, Key=url_key(de))  # its TTL
    pipeline.send_events([publish("/de", 3)])
    pipeline.drain()
    pipeline.send_events([publish("/en", 2, **declares, lastmod="2026-11-20")])
    pipeline.drain()

    pair = {("en", en), ("de", de)}
    assert hreflang(pipeline.objects()) == {en: pair, de: pair}


def test_a_move_whose_new_page_declares_the_url_it_leaves(make_pipeline: PipelineFactory) -> None:
    """Entity 42 moves from /old to /new, the new page declaring /old as its German version:
    /old is both the URL the move unpublishes (retired) and a page it newly links (a target).
    After the drain /old is gone and /new lists nothing (one live page). A transaction may
    touch an item once: /old's record is the retire's alone."""
    pipeline = make_pipeline()
    new = f"{SITE}/new"
    pipeline.send_events([publish("/old", 1, id="42")])
    pipeline.drain()
    pipeline.send_events(
        [publish("/new", 2, id="42", hreflang="en", alternates=[alt("/old", "de")])]
    )
    pipeline.drain()

    assert hreflang(pipeline.objects()) == {new: set()}
