"""Shard ids, object keys, index splitting and the protocol limits (invariants 4, 5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemap_updater.domain.render import URLSET_FRAME_BYTES
from sitemap_updater.domain.sharding import (
    DEFAULT_GROUP,
    GROUP_NAME,
    INDEX_KEY,
    PROTOCOL_MAX_BYTES,
    PROTOCOL_MAX_INDEX_ENTRIES,
    PROTOCOL_MAX_URLS,
    GroupRules,
    Limits,
    ShardFormat,
    index_key,
    parse_shard_id,
    shard_id,
    split_index,
    write_order,
)

# --- Limits -----------------------------------------------------------------------------------


def test_protocol_limits_are_the_sitemaps_org_ones() -> None:
    assert PROTOCOL_MAX_URLS == 50_000
    assert PROTOCOL_MAX_BYTES == 52_428_800 == 50 * 1024 * 1024
    assert PROTOCOL_MAX_INDEX_ENTRIES == 50_000


def test_default_limits() -> None:
    limits = Limits()
    assert limits.max_urls_per_shard == 10_000
    assert limits.max_shard_bytes == PROTOCOL_MAX_BYTES
    assert limits.max_sitemaps_per_index == PROTOCOL_MAX_INDEX_ENTRIES
    assert limits.max_entry_bytes == PROTOCOL_MAX_BYTES - URLSET_FRAME_BYTES


def test_limits_at_the_protocol_maximum_are_accepted() -> None:
    limits = Limits(
        max_urls_per_shard=50_000, max_shard_bytes=52_428_800, max_sitemaps_per_index=50_000
    )
    assert (limits.max_urls_per_shard, limits.max_sitemaps_per_index) == (50_000, 50_000)


def test_smallest_limits_are_accepted() -> None:
    limits = Limits(
        max_urls_per_shard=1, max_shard_bytes=URLSET_FRAME_BYTES + 1, max_sitemaps_per_index=1
    )
    assert limits.max_entry_bytes == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_urls_per_shard", 50_001),
        ("max_urls_per_shard", 1_000_000),
        ("max_urls_per_shard", 0),
        ("max_urls_per_shard", -1),
        ("max_shard_bytes", 52_428_801),
        ("max_shard_bytes", 100 * 1024 * 1024),
        ("max_shard_bytes", URLSET_FRAME_BYTES),
        ("max_shard_bytes", 0),
        ("max_sitemaps_per_index", 50_001),
        ("max_sitemaps_per_index", 0),
    ],
)
def test_limits_outside_the_protocol_are_rejected(field: str, value: int) -> None:
    with pytest.raises(ValueError, match=field):
        Limits(**{field: value})  # type: ignore[arg-type]


def test_limits_are_frozen() -> None:
    limits = Limits()
    with pytest.raises(AttributeError):
        limits.max_urls_per_shard = 60_000  # type: ignore[misc]


# --- shard ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "number", "shard"),
    [
        ("pages", 1, "pages-00001"),
        ("pages", 12, "pages-00012"),
        ("pages", 99_999, "pages-99999"),
        ("pages", 100_000, "pages-100000"),
        ("news-2026", 3, "news-2026-00003"),
        ("a", 7, "a-00007"),
        ("p0", 1, "p0-00001"),
    ],
)
def test_shard_id_round_trips(group: str, number: int, shard: str) -> None:
    assert shard_id(group, number) == shard
    assert parse_shard_id(shard) == (group, number)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "pages",
        "pages-",
        "pages-1",
        "pages-0001",
        "-00001",
        "Pages-00001",
        "pages_x-00001",
        "pages--00001",
        "-pages-00001",
        "pages-00001.xml",
        "pages-00001\n",
        "pages-0000a",
        "pages-\u0661\u0662\u0663\u0664\u0665",  # Arabic-Indic digits
        "x" * 33 + "-00001",
        "sitemap-pages-00001.xml.gz",
    ],
)
def test_parse_shard_id_rejects_anything_else(text: str) -> None:
    with pytest.raises(ValueError, match="not a shard id"):
        parse_shard_id(text)


def test_parse_shard_id_splits_at_the_last_number() -> None:
    assert parse_shard_id("news-00001-00002") == ("news-00001", 2)


@given(
    group=st.from_regex(GROUP_NAME, fullmatch=True),
    number=st.integers(min_value=0, max_value=10**9),
)
def test_every_group_and_number_round_trip(group: str, number: int) -> None:
    shard = shard_id(group, number)
    assert parse_shard_id(shard) == (group, number)


@given(st.lists(st.integers(min_value=1, max_value=99_999), unique=True, min_size=2))
def test_shard_ids_of_a_group_sort_by_number_below_100000(numbers: list[int]) -> None:
    ids = [shard_id("pages", n) for n in numbers]
    assert sorted(ids) == [shard_id("pages", n) for n in sorted(numbers)]


def test_group_names() -> None:
    for name in ("pages", "a", "news-2026", "x" * 32):
        assert GROUP_NAME.fullmatch(name)
        assert not GROUP_NAME.fullmatch(name + "\n")
    for name in ("", "Pages", "-pages", "pages-", "pa_ges", "x" * 33, "päges"):
        assert not GROUP_NAME.fullmatch(name)


def test_group_for_is_the_default_group() -> None:
    assert DEFAULT_GROUP == "pages"
    assert GroupRules().group_for("https://www.example.com/anything") == "pages"
    assert GROUP_NAME.fullmatch(GroupRules().group_for("https://www.example.com/"))


# --- keys ---------------------------------------------------------------------------------------


def test_shard_keys() -> None:
    assert ShardFormat(compressed=True).key("pages-00001") == "sitemap-pages-00001.xml.gz"
    assert ShardFormat(compressed=False).key("pages-00001") == "sitemap-pages-00001.xml"


def test_index_keys() -> None:
    assert INDEX_KEY == "sitemap.xml"
    assert [index_key(n) for n in range(4)] == [
        "sitemap.xml",
        "sitemap-index-2.xml",
        "sitemap-index-3.xml",
        "sitemap-index-4.xml",
    ]


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=10**6))
def test_index_keys_are_distinct_and_never_shard_keys(a: int, b: int) -> None:
    assert (index_key(a) == index_key(b)) == (a == b)
    for key in (index_key(a),):
        for compressed in (True, False):
            assert key != ShardFormat(compressed=compressed).key(shard_id("pages", b))


# --- split_index --------------------------------------------------------------------------------


def test_split_index_empty() -> None:
    assert split_index([], Limits()) == []


def test_split_index_fits_one_file() -> None:
    shards = ["pages-00002", "pages-00001", "news-00001"]
    assert split_index(shards, Limits()) == [
        ("sitemap.xml", ["news-00001", "pages-00001", "pages-00002"])
    ]


def test_split_index_at_and_past_the_limit() -> None:
    limits = Limits(max_sitemaps_per_index=2)
    shards = [shard_id("pages", n) for n in range(1, 6)]
    assert split_index(shards[:2], limits) == [("sitemap.xml", shards[:2])]
    assert split_index(shards[::-1], limits) == [
        ("sitemap.xml", shards[0:2]),
        ("sitemap-index-2.xml", shards[2:4]),
        ("sitemap-index-3.xml", shards[4:5]),
    ]


def test_split_index_at_the_protocol_limit() -> None:
    shards = [shard_id("pages", n) for n in range(1, PROTOCOL_MAX_INDEX_ENTRIES + 2)]
    files = split_index(shards, Limits())
    assert [key for key, _ in files] == ["sitemap.xml", "sitemap-index-2.xml"]
    assert len(files[0][1]) == PROTOCOL_MAX_INDEX_ENTRIES
    assert files[1][1] == [shard_id("pages", PROTOCOL_MAX_INDEX_ENTRIES + 1)]


@given(
    st.sets(st.integers(min_value=1, max_value=99_999), max_size=60),
    st.integers(min_value=1, max_value=7),
)
def test_split_index_partitions_every_shard_once(numbers: set[int], per_index: int) -> None:
    shards = [shard_id("pages", n) for n in numbers]
    files = split_index(shards, Limits(max_sitemaps_per_index=per_index))
    listed = [shard for _, chunk in files for shard in chunk]
    assert listed == sorted(shards)
    assert all(1 <= len(chunk) <= per_index for _, chunk in files)
    assert [key for key, _ in files] == [index_key(n) for n in range(len(files))]
    assert split_index(list(reversed(shards)), Limits(max_sitemaps_per_index=per_index)) == files


def test_write_order_puts_a_shard_in_its_new_index_file_before_the_old_one_drops_it() -> None:
    limits = Limits(max_sitemaps_per_index=2)
    before = ["pages-00001", "pages-00002", "pages-00003"]
    # blog-00001 sorts first: pages-00002 shifts from the first file into the second.
    files = split_index(["blog-00001", *before], limits)
    assert [key for key, _ in files] == ["sitemap.xml", "sitemap-index-2.xml"]
    ordered = write_order(files, before, limits)
    assert [key for key, _ in ordered] == ["sitemap-index-2.xml", "sitemap.xml"]
    assert sorted(ordered) == sorted(files)
    # A retired shard shifts them back: the first file takes pages-00003 first.
    files = split_index(["pages-00001", "pages-00003", "pages-00004"], limits)
    shrunk = write_order(
        files, ["pages-00001", "pages-00002", "pages-00003", "pages-00004"], limits
    )
    assert [key for key, _ in shrunk] == ["sitemap.xml", "sitemap-index-2.xml"]


def test_write_order_keeps_the_files_order_when_nothing_moves() -> None:
    limits = Limits(max_sitemaps_per_index=2)
    shards = ["a-00001", "a-00002", "b-00001", "b-00002"]
    files = split_index(shards, limits)
    assert write_order(files, shards, limits) == files
    assert write_order(files, [], limits) == files


@given(
    before=st.sets(st.integers(1, 40), max_size=25),
    after=st.sets(st.integers(1, 40), max_size=25),
    per_file=st.integers(1, 4),
)
def test_written_in_write_order_a_named_shard_is_always_in_some_index_file(
    before: set[int], after: set[int], per_file: int
) -> None:
    limits = Limits(max_sitemaps_per_index=per_file)
    old = [f"pages-{n:05d}" for n in before]
    new = [f"pages-{n:05d}" for n in after]
    stored = dict(split_index(old, limits))
    for key, shards in write_order(split_index(new, limits), old, limits):
        stored[key] = shards
        named = {shard for shards in stored.values() for shard in shards}
        assert set(old) & set(new) <= named  # kept shards are never named by no file
