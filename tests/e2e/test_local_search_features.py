"""Issue 5's rules through `sitemap-updater local`: a cluster declared partially, news
ageing, a group of its own, size-aware placement, and every file valid (lxml and xmllint)."""

from __future__ import annotations

import gzip
import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from lxml import etree

from sitemap_updater.schemas import ALL_XSD, sitemap_schema
from tests.e2e.test_local_cli import run

SITE = "https://www.example.com"
XHTML = "{http://www.w3.org/1999/xhtml}link"
NEWS = "{http://www.google.com/schemas/sitemap-news/0.9}news"
SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


def _w3c(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _events(now: datetime) -> list[dict[str, object]]:
    def news(published: datetime) -> dict[str, object]:
        return {
            "publication": {"name": "The Example Times", "language": "en"},
            "publication_date": _w3c(published),
            "title": "Headline",
        }

    return [
        {"type": "publish", "url": f"{SITE}/en/a", "version": 1, "hreflang": "en",
         "alternates": [{"hreflang": "de", "href": f"{SITE}/de/a"}]},
        {"type": "publish", "url": f"{SITE}/fr/a", "version": 1, "hreflang": "fr",
         "alternates": [{"hreflang": "en", "href": f"{SITE}/en/a"}]},
        {"type": "publish", "url": f"{SITE}/de/a", "version": 1},
        {"type": "publish", "url": f"{SITE}/news/fresh", "version": 1,
         "news": news(now - timedelta(hours=1))},
        {"type": "publish", "url": f"{SITE}/news/aged", "version": 1,
         "news": news(now - timedelta(days=2, hours=1))},
        {"type": "publish", "url": f"{SITE}/gallery", "version": 1,
         "images": [{"loc": f"https://cdn.example.net/{n}.jpg"} for n in range(40)]},
        {"type": "publish", "url": f"{SITE}/promo", "version": 1, "sitemap": "campaigns"},
    ]  # fmt: skip


def test_search_features_through_the_local_runtime(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in _events(now)))
    out = tmp_path / "site"
    result = run(
        "local", events, "--site-url", SITE, "--out", out, "--json", "--max-urls-per-shard", "3"
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert (summary["accepted"], summary["rejected"]) == (7, [])

    shards = {}
    index = etree.fromstring((out / "sitemap.xml").read_bytes())
    for loc in index.iter(f"{SM}loc"):
        path = out / loc.text.removeprefix(f"{SITE}/")
        shards[path.name] = etree.fromstring(gzip.decompress(path.read_bytes()))
        assert sitemap_schema().validate(shards[path.name]), path
    xmllint = subprocess.run(
        ["xmllint", "--noout", "--nonet", "--schema", str(ALL_XSD), *map(str, out.glob("*.xml*"))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert xmllint.returncode == 0, xmllint.stderr

    urls = {
        element.findtext(f"{SM}loc"): element
        for document in shards.values()
        for element in document.iter(f"{SM}url")
    }
    cluster = {("en", f"{SITE}/en/a"), ("de", f"{SITE}/de/a"), ("fr", f"{SITE}/fr/a")}
    for page in ("/en/a", "/de/a", "/fr/a"):  # complete and reciprocal, though declared partially
        assert {
            (x.get("hreflang"), x.get("href")) for x in urls[SITE + page].iter(XHTML)
        } == cluster
    assert urls[f"{SITE}/news/fresh"].find(NEWS) is not None
    assert urls[f"{SITE}/news/aged"].find(NEWS) is None  # aged out, still listed
    assert len(list(urls[f"{SITE}/gallery"].iter("{*}image"))) == 40
    assert "sitemap-campaigns-00001.xml.gz" in shards  # its own group, in the one index
    assert [
        e.findtext(f"{SM}loc") for e in shards["sitemap-campaigns-00001.xml.gz"].iter(f"{SM}url")
    ] == [f"{SITE}/promo"]
    assert all(len(list(doc.iter(f"{SM}url"))) <= 3 for doc in shards.values())
