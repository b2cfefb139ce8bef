"""Every benchmark in one run, one table each: render speed against sitemap.js, AWS work per
event as the site grows and in a burst, cold start of each function, events per second
through ``sitemap-updater local``.

    make bench                      # the full sizes (several minutes)
    .venv/bin/python bench/run.py --small   # what CI runs: small sizes, to see it still works

A printout, not a test: nothing here asserts a time. The README's Performance section
records the figures of a full run and how to read them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import coldstart
import local
import render
import work

FULL = {
    "render": ["--pages", "50000", "--runs", "5"],
    "work": ["--sizes", "1000,10000,100000", "--shard-size", "1000", "--burst", "1000"],
    "coldstart": ["--runs", "9"],
    "local": ["--events", "1000,10000"],  # --large adds 50,000: run bench/local.py for it
}
SMALL = {
    "render": ["--pages", "2000", "--runs", "1"],
    "work": [
        *("--sizes", "100,300", "--shard-size", "100", "--burst", "100"),
        *("--simulate", "2000", "--sim-shard-size", "1000"),
    ],
    "coldstart": ["--runs", "1"],
    "local": ["--events", "200"],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="small sizes (CI)")
    parser.add_argument(
        "--only",
        choices=("render", "work", "coldstart", "local"),
        action="append",
        help="run only these",
    )
    parser.add_argument("--json", action="store_true", help="work: end with its figures as JSON")
    args = parser.parse_args(argv)
    sizes = SMALL if args.small else FULL
    benches = {
        "render": render.main,
        "work": work.main,
        "coldstart": coldstart.main,
        "local": local.main,
    }
    for name, bench in benches.items():
        if args.only and name not in args.only:
            continue
        print(f"\n=== {name} ===", flush=True)
        status = bench(sizes[name] + (["--json"] if args.json and name == "work" else []))
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
