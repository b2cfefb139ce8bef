"""How long `sitemap-updater build` takes for 50,000 pages, end to end (a printout, not a test).

    .venv/bin/python bench/build_50k.py [--pages 50000] [--runs 3]

Writes deterministic page records (some with escaping and non-ASCII paths, some with
lastmod/changefreq/priority) to a temporary folder, runs the console script --runs times
(wall time includes interpreter start and imports), checks that every run wrote
byte-identical files, and prints the times.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SITE = "https://www.example.com"


def records(count: int) -> list[str]:
    rng = random.Random(20261122)
    lines = []
    for number in range(count):
        page: dict[str, object] = {"url": f"{SITE}/articles/{number}/title-{rng.randrange(10**6)}"}
        if number % 10 == 1:
            page["url"] = f"{SITE}/caf\u00e9/{number}?q=a&b=c"  # percent-encoded, escaped
        if number % 3:
            page["lastmod"] = (
                f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:00:00+01:00"
            )
        if number % 4 == 0:
            page["changefreq"] = "weekly"
        if number % 5 == 0:
            page["priority"] = round(rng.random(), 1)
        lines.append(json.dumps(page, ensure_ascii=False))
    return lines


def digest(folder: Path) -> str:
    sha = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    script = Path(sys.executable).parent / "sitemap-updater"
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "pages.jsonl"
        source.write_text("\n".join(records(args.pages)) + "\n", encoding="utf-8")
        times, cpu, digests = [], [], set()
        for run in range(args.runs):
            out = Path(work) / f"site-{run}"
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(
                [script, "build", source, "--site-url", SITE, "--out", out],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            times.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            digests.add(digest(out))
        files = sorted(p.name for p in (Path(work) / "site-0").iterdir())
    print(f"build of {args.pages:,} pages -> {len(files)} files, {args.runs} runs")
    print(
        f"  wall time (process): median {statistics.median(times):.2f} s, "
        f"min {min(times):.2f} s, max {max(times):.2f} s"
    )
    print(
        f"  CPU time (process, user+sys): median {statistics.median(cpu):.2f} s "
        "(steadier than wall time on a busy machine)"
    )
    print(f"  byte-identical across runs: {'yes' if len(digests) == 1 else 'NO'}")


if __name__ == "__main__":
    main()
