"""The pure rules behind issue 5: hreflang clusters, news ageing, groups, extensions."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from sitemap_updater.domain.clusters import (
    Cluster,
    Member,
    Pairs,
    alternates_bytes,
    listings,
    merge,
    needed_bytes,
    survivor,
)
from sitemap_updater.domain.contract import normalise_hreflang
from sitemap_updater.domain.dates import instant, normalise_w3c
from sitemap_updater.domain.entries import News, SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import parse_body
from sitemap_updater.domain.news import MAX_NEWS_PER_SITEMAP, current_news
from sitemap_updater.domain.render import render_entry
from sitemap_updater.domain.sharding import GroupRules, Limits
from sitemap_updater.domain.urls import Site, normalise_url
from sitemap_updater.schemas import sitemap_schema
from tests.rendering import render_urlset

SITE = "https://www.example.com"


def u(path: str) -> str:
    return f"{SITE}{path}"


def cluster(**members: Member) -> Cluster:
    return Cluster(cid="c", members={u(f"/{name}"): member for name, member in members.items()})


def alternates(cluster: Cluster, url: str) -> Pairs:
    """What ``url``'s entry lists."""
    return listings(cluster).get(url, ())


# -- clusters ---------------------------------------------------------------------------------


def test_a_member_without_its_own_language_takes_what_siblings_declare() -> None:
    c = cluster(
        en=Member(lang="en", declares=(("de", u("/de")), ("x-default", u("/en"))), live=True),
        de=Member(live=True),
    )
    listed = (("de", u("/de")), ("en", u("/en")), ("x-default", u("/en")))
    assert listings(c) == {u("/de"): listed, u("/en"): listed}  # its own, plus x-default


def test_a_language_two_pages_claim_is_listed_once_for_the_smaller_url() -> None:
    c = cluster(
        a=Member(lang="x-default", declares=(("de", u("/b")), ("fr", u("/c"))), live=True),
        b=Member(lang="de", live=True),
        c=Member(lang="x-default", live=True),  # also claims x-default
    )
    listed = (("de", u("/b")), ("x-default", u("/a")))
    assert all(pairs == listed for pairs in listings(c).values())
    assert set(listings(c)) == {u("/a"), u("/b"), u("/c")}


def test_every_published_member_lists_itself_and_all_others_reciprocally() -> None:
    c = cluster(
        en=Member(lang="en", declares=(("de", u("/de")),), live=True),
        de=Member(lang="de", live=True),
        fr=Member(lang="fr", declares=(("en", u("/en")),), live=True),
        it=Member(lang="it", declares=(("en", u("/en")),), live=False),  # unpublished
    )
    expected = (("de", u("/de")), ("en", u("/en")), ("fr", u("/fr")))
    for page in ("/en", "/de", "/fr"):
        assert alternates(c, u(page)) == expected
    assert alternates(c, u("/it")) == ()  # not listed, and lists nothing


def test_components_follow_declarations_in_either_direction_only() -> None:
    c = cluster(
        a=Member(lang="en", declares=(("de", u("/b")),), live=True),
        b=Member(lang="de", live=True),
        c=Member(lang="fr", live=True),  # in the record, linked to no one any more
    )
    assert alternates(c, u("/b")) == (("de", u("/b")), ("en", u("/a")))
    assert alternates(c, u("/c")) == ()


def test_a_lone_page_or_one_without_a_language_lists_nothing() -> None:
    assert alternates(cluster(a=Member(lang="en", live=True)), u("/a")) == ()
    c = cluster(a=Member(declares=(("de", u("/b")),), live=True), b=Member(lang="de", live=True))
    assert alternates(c, u("/a")) == ()  # nobody says what /a is


@pytest.mark.parametrize("other", ["b?x=1&y=2", "l'%C3%A9t%C3%A9", "it's&that's"])
def test_needed_bytes_is_exactly_what_the_entry_renders_to(other: str) -> None:
    """Whatever the href's escapes (&amp;, &apos;): a reservation short of the rendered
    bytes lets a shard outgrow its limit, and its rebuild then fails for good."""
    c = cluster(
        a=Member(lang="en", declares=(("de", u(f"/{other}")),), live=True, base=0),
        **{other: Member(lang="de", live=True)},
    )
    entry = SitemapEntry(url=u("/a"), alternates=alternates(c, u("/a")))
    base = len(render_entry(SitemapEntry(url=u("/a"))))
    assert base + alternates_bytes(entry.alternates) == len(render_entry(entry))
    c = Cluster(
        cid="c", members={**c.all, u("/a"): msgspec.structs.replace(c.all[u("/a")], base=base)}
    )
    assert needed_bytes(c, u("/a")) == len(render_entry(entry).encode())


def test_merge_keeps_every_member_once() -> None:
    one = cluster(a=Member(lang="en", live=True))
    two = Cluster(cid="d", members={u("/a"): Member(), u("/b"): Member(lang="de")})
    merged = merge([one, two], "c")
    assert set(merged.all) == {u("/a"), u("/b")}
    assert merged.all[u("/a")].lang == "en"  # the first cluster's view of a shared member


def test_a_merge_keeps_the_larger_cluster_then_the_smaller_id() -> None:
    small = Cluster(cid="a", members={u("/a"): Member()})
    large = Cluster(cid="b", members={u("/b"): Member(), u("/c"): Member()})
    tie = Cluster(cid="c", members={u("/d"): Member(), u("/e"): Member()})
    assert survivor([small, large, tie]).cid == "b"
    assert survivor([tie, small]).cid == "c"
    assert survivor([small, Cluster(cid="z", members={u("/z"): Member()})]).cid == "a"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("EN", "en"), ("en-gb", "en-GB"), ("zh-hant-tw", "zh-Hant-TW"), ("es-419", "es-419"),
     ("X-Default", "x-default")],
)  # fmt: skip
def test_hreflang_values_are_normalised(raw: str, expected: str) -> None:
    assert normalise_hreflang(raw) == expected


@pytest.mark.parametrize("raw", ["english", "e", "en_GB", "en-", "x-default-2", "de\n", ""])
def test_hreflang_values_are_validated(raw: str) -> None:
    with pytest.raises(ValueError, match="hreflang"):
        normalise_hreflang(raw)


# -- news ------------------------------------------------------------------------------------


def _news(path: str, published: str) -> SitemapEntry:
    return SitemapEntry(url=u(path), news=News("The Times", "en", published, "t"))


def test_news_is_kept_for_two_days_and_says_when_it_next_expires() -> None:
    now = datetime(2026, 11, 21, 12, tzinfo=UTC)
    entries = [
        _news("/old", "2026-11-19T11:59:59Z"),  # two days and a second ago
        _news("/young", "2026-11-20T12:00:00Z"),
        _news("/edge", "2026-11-19T12:00:00Z"),  # exactly two days: still news
        SitemapEntry(url=u("/plain")),
    ]
    rendered, expiry = current_news(entries, now)
    assert [e.news is not None for e in rendered] == [False, True, True, False]
    assert [e.url for e in rendered] == [e.url for e in entries]  # every page stays listed
    assert expiry == datetime(2026, 11, 21, 12, tzinfo=UTC)  # /edge expires now


@pytest.mark.parametrize("published", ["9999-12-31", "9999-12-30T00:00:01Z"])
def test_news_dated_in_the_last_two_days_of_year_9999_does_not_break_its_shard(
    published: str,
) -> None:
    # The contract accepts these dates (a CMS's "never" placeholder); two days later is past
    # what a datetime can hold. The shard must still render, and its other news still age.
    now = datetime(2026, 11, 21, 12, tzinfo=UTC)
    entries = [_news("/far", published), _news("/young", "2026-11-20T12:00:00Z")]
    rendered, expiry = current_news(entries, now)
    assert [e.news is not None for e in rendered] == [False, True]  # /far is in the future
    assert expiry == datetime(2026, 11, 22, 12, tzinfo=UTC)  # /young's
    far = instant(normalise_w3c(published))
    rendered, expiry = current_news(entries, far)
    assert [e.news is not None for e in rendered] == [True, False]
    assert expiry is None  # /far never expires: two days later is past what a datetime holds


@pytest.mark.parametrize("published", ["0001-01-01", "0001-01-01T00:03:00Z"])
def test_news_dated_in_the_first_minutes_of_year_1_does_not_break_its_shard(
    published: str,
) -> None:
    # Five minutes of clock skew before it is before what a datetime can hold.
    now = datetime(2026, 11, 21, 12, tzinfo=UTC)
    entries = [_news("/first", published), _news("/young", "2026-11-20T12:00:00Z")]
    rendered, expiry = current_news(entries, now)
    assert [e.news is not None for e in rendered] == [False, True]
    assert expiry == datetime(2026, 11, 22, 12, tzinfo=UTC)


def test_news_dated_in_the_future_appears_at_its_date_and_stays_two_days() -> None:
    # A scheduled post announced early: no news block before its date (beyond a few minutes
    # of clock skew), and the rendering says when it changes, for the sweep to rebuild it.
    now = datetime(2026, 11, 21, 12, tzinfo=UTC)
    entries = [_news("/soon", "2026-11-25T12:00:00Z"), _news("/skew", "2026-11-21T12:03:00Z")]
    rendered, expiry = current_news(entries, now)
    assert [e.news is not None for e in rendered] == [False, True]
    assert expiry == datetime(2026, 11, 23, 12, 3, tzinfo=UTC)  # /skew expires first
    rendered, expiry = current_news(entries[:1], now)
    assert expiry == datetime(2026, 11, 25, 11, 55, tzinfo=UTC)  # /soon appears
    rendered, expiry = current_news(entries[:1], expiry)
    assert rendered[0].news is not None
    assert expiry == datetime(2026, 11, 27, 12, tzinfo=UTC)


def test_at_most_a_thousand_news_blocks_per_sitemap_the_newest() -> None:
    now = datetime(2026, 11, 21, 12, tzinfo=UTC)
    entries = [
        _news(f"/{n:04d}", (now - timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ"))
        for n in range(MAX_NEWS_PER_SITEMAP + 5)
    ]
    rendered, _ = current_news(entries, now)
    kept = [e.url for e in rendered if e.news is not None]
    assert len(kept) == MAX_NEWS_PER_SITEMAP
    assert u("/1004") not in kept  # the five oldest lose their news block
    assert u("/0000") in kept


# -- groups ----------------------------------------------------------------------------------


def test_group_rules_longest_prefix_explicit_field_and_news_limits() -> None:
    rules = GroupRules.parse("/news/=news, /news/archive/=archive ,/shop/=products")
    assert rules.group_for(u("/news/a")) == "news"
    assert rules.group_for(u("/news/archive/2020")) == "archive"
    assert rules.group_for(u("/about")) == "pages"
    assert rules.group_for(u("/news/a"), "campaigns") == "campaigns"
    assert rules.max_urls("news", Limits()) == 1000
    assert rules.max_urls("products", Limits()) == 10_000


def test_a_group_rule_matches_paths_as_urls_are_normalised() -> None:
    # Page URLs are compared in their canonical form (non-ASCII percent-encoded as UTF-8,
    # escapes upper-cased): a rule written as a person would type it must match them, or
    # its pages are placed, for life, in the default group.
    rules = GroupRules.parse("/actualités/=news,/caf%c3%a9/=cafe,/a[1]/=brackets")
    site = Site.parse(SITE)
    assert rules.group_for(normalise_url(f"{SITE}/actualités/x", site)) == "news"
    assert rules.group_for(normalise_url(f"{SITE}/café/x", site)) == "cafe"
    assert rules.group_for(normalise_url(f"{SITE}/a[1]/x", site)) == "brackets"


@pytest.mark.parametrize(
    "rules", ["news=news", "/news/=../x", "/a/=A", "/a/=", "/a b/=x", "/50%/=x", "/a?b/=x"]
)
def test_bad_group_rules_are_refused(rules: str) -> None:
    with pytest.raises(ValueError, match="group"):
        GroupRules.parse(rules)


# -- extensions end to end: parsed, rendered, valid -------------------------------------------

VIDEO = {
    "thumbnail_loc": "https://cdn.example.net/t.jpg",
    "title": "t",
    "description": "d",
    "player_loc": "https://player.example.net/p?id=1&a=2",
}


@given(
    title=st.text(min_size=1, max_size=100).filter(lambda t: t.strip()),
    name=st.text(min_size=1, max_size=60).filter(lambda t: t.strip()),
    images=st.integers(0, 5),
)
def test_any_accepted_extension_text_renders_schema_valid_and_escaped(
    title: str, name: str, images: int
) -> None:
    event = {
        "type": "publish",
        "url": u("/x"),
        "version": 1,
        "images": [{"loc": f"https://cdn.example.net/{n}.jpg"} for n in range(images)],
        "videos": [{**VIDEO, "title": title}],
        "news": {
            "publication": {"name": name, "language": "en"},
            "publication_date": "2026-11-21",
            "title": title,
        },
    }
    try:
        change = parse_body(json.dumps(event), Site.parse(SITE), 262_144)
    except InvalidEvent as rejected:  # e.g. a control character: refused, never rendered
        code = rejected.code
    else:
        code = ""
    if code:
        assert code in {"invalid_video", "invalid_news"}
        return
    assert change.entry is not None
    document = render_urlset([change.entry])
    tree = etree.fromstring(document)
    assert sitemap_schema().validate(tree), sitemap_schema().error_log
    assert tree.findtext(".//{*}video/{*}title") == change.entry.videos[0].title
