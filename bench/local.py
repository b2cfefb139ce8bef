"""Events per second through ``sitemap-updater local``, as a new user runs it on an export.

    .venv/bin/python bench/local.py [--events 1000,10000] [--large]   # --large adds 50,000

A printout, not a test. CPU seconds are printed next to the wall time: on a shared machine
they are the steadier figure. Each size is a stream of that many events for about 0.4 as many
pages in four groups (sitemap names): each page published first, then updates, unpublishes
and republishes in random order, each with the next version. The command runs in a process
of its own; the figures are its wall time, events per second and peak memory, and whether
every page whose last event is a publish is in the sitemaps (nothing lost).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SITE = "https://www.example.com"
GROUPS = ("pages", "products", "articles", "docs")
PAGES_PER_EVENT = 0.4
ROOT = Path(__file__).resolve().parents[1]


def stream(events: int, seed: int = 15) -> tuple[list[dict[str, object]], set[str]]:
    """``events`` events and the URLs live at the end."""
    rng = random.Random(seed)
    pages = max(1, int(events * PAGES_PER_EVENT))
    urls = [f"{SITE}/{GROUPS[n % 4]}/{n:06d}/a-page-title" for n in range(pages)]
    later = rng.choices(range(pages), k=events - pages)
    version = dict.fromkeys(urls, 0)
    live: dict[str, bool] = {}
    out = []
    for n in [*range(pages), *later]:
        url = urls[n]
        version[url] += 1
        publish = not live.get(url) or rng.random() < 0.8  # updates, some unpublishes
        event: dict[str, object] = {"type": "publish" if publish else "unpublish", "url": url}
        event["version"] = version[url]
        if publish:
            day = 1 + version[url] % 28
            event |= {"lastmod": f"2026-11-{day:02d}", "sitemap": GROUPS[n % 4]}
        live[url] = publish
        out.append(event)
    return out, {url for url, on in live.items() if on}


def listed(site: Path) -> set[str]:
    found: set[str] = set()
    for shard in site.glob("sitemap-*.xml*"):
        data = shard.read_bytes()
        text = (gzip.decompress(data) if shard.suffix == ".gz" else data).decode()
        found.update(re.findall(r"<loc>([^<]+)</loc>", text))
    return found


def run(events: int) -> dict[str, float]:
    generated, live = stream(events)
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "events.jsonl"
        source.write_text("".join(json.dumps(e) + "\n" for e in generated))
        command = [sys.executable, "-m", "sitemap_updater.cli", "local", str(source)]
        command += ["--site-url", SITE, "--out", f"{folder}/site"]
        before = _cpu()
        started = time.monotonic()
        env = {**os.environ, "PYTHONPATH": str(ROOT / "functions")}
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env=env)
        seconds = time.monotonic() - started
        cpu = _cpu() - before
        lost = len(live - listed(Path(folder) / "site"))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"events": events, "seconds": seconds, "cpu": cpu, "peak_mb": peak, "lost": lost}


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", default="1000,10000", help="stream sizes")
    parser.add_argument("--large", action="store_true", help="also 50,000 events (minutes)")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.events.split(",")] + ([50_000] if args.large else [])
    print(
        f"{'events':>8} {'pages':>7} {'seconds':>8} {'events/s':>9} {'cpu s':>7} "
        f"{'peak MB':>8} {'lost':>5}"
    )
    for size in sizes:
        got = run(size)
        print(
            f"{size:>8,} {int(size * PAGES_PER_EVENT):>7,} {got['seconds']:>8.1f} "
            f"{size / got['seconds']:>9.0f} {got['cpu']:>7.0f} {got['peak_mb']:>8.0f} "
            f"{got['lost']:>5.0f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
