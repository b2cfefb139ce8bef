"""Render speed against a peer: `sitemap-updater build` vs sitemap.js, on the same pages written
in every shape a site's export may take.

    .venv/bin/python bench/render.py [--pages 50000] [--runs 5] [--no-peer]

A printout, not a test: the test suite holds no wall-clock assertions; CI only runs this on a
small size to check that it still works.

The pages (deterministic, seeded): every page has a URL, two in three a lastmod, one in four a
changefreq, one in five a priority; one in seven URLs has a query with ``&`` (escaped in the
XML), one in ten a non-ASCII path (percent-encoded by both tools); one in ten pages lists
images on a CDN; one in ten is a language version in a cluster of three (en, de, fr), declared
fully reciprocally, so both tools write the same three ``xhtml:link`` for each.

Ours reads them in six shapes: JSON Lines with non-ASCII raw, the same with ``\\u`` escapes,
the same records with their keys in another order (``type`` and ``version`` first), one
record in ten declaring alternates that are not in the file, one JSON array, and CSV (the
plain fields only). The first four hold the same records: their output must be the same
files, and the bench says whether it is. sitemap.js reads its own items (the same pages).

Each tool is timed as a child process, wall time including interpreter start and imports (our
package byte-compiled first, as an installed one is), and its CPU time (user + system, its own
children and threads included), runs alternating so that the machine's noise hits all of them
alike; medians are reported, and each shape's speed-up is sitemap.js buffered's median over its
own. Peak memory is the process tree's summed proportional set size, sampled in one more run
of each. Both write gzipped shards of at most
10,000 URLs and a sitemap index:

* ours: ``sitemap-updater build FILE --site-url ... --out DIR`` (every record validated and
  normalised, shards gzipped by zlib-ng at level 6, index, robots.txt);
* sitemap.js buffered: rows parsed up front, each shard rendered by SitemapStream +
  streamToPromise into one buffer, one ``zlib.gzipSync`` (level 6), the index uncompressed;
* sitemap.js streaming: ``simpleSitemapAndIndex`` reading the rows file, every sitemap piped
  through ``createGzip()`` (its README's path for large sites).

sitemap.js is installed from ``bench/node/package-lock.json`` with ``npm ci`` (once; skipped
when node or npm are missing, or with ``--no-peer``).
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SITE = "https://www.example.com"
CDN = "https://cdn.example.com"
NODE_DIR = Path(__file__).resolve().parent / "node"
LANGUAGES = ("en", "de", "fr")
WORDS = ("guide", "news", "caf\u00e9", "stra\u00dfe", "\u00fcber", "na\u00efve", "\u65e5\u672c")


@dataclass(frozen=True)
class Page:
    url: str
    lastmod: str | None = None
    changefreq: str | None = None
    priority: float | None = None
    images: tuple[str, ...] = ()
    hreflang: str | None = None
    alternates: tuple[tuple[str, str], ...] = ()  # (hreflang, url), this page included


def pages(count: int) -> list[Page]:
    """``count`` deterministic pages (see the module's docstring for their mix)."""
    rng = random.Random(20261122)
    result = []
    for number in range(count):
        slug = f"title-{rng.randrange(10**6)}"
        url = f"{SITE}/articles/{number}/{slug}"
        if number % 10 == 1:
            url = f"{SITE}/{rng.choice(WORDS)}/{number}/{rng.choice(WORDS)}-{slug}"
        if number % 7 == 2:
            url += f"?q={rng.choice(WORDS[:2])}&page={number % 13}"
        lastmod = None
        if number % 3:
            month, day = rng.randint(1, 12), rng.randint(1, 28)
            lastmod = (
                f"2026-{month:02d}-{day:02d}T{rng.randint(0, 23):02d}:30:00Z"
                if number % 2
                else f"2026-{month:02d}-{day:02d}"
            )
        changefreq = rng.choice(("daily", "weekly", "monthly")) if number % 4 == 0 else None
        priority = round(rng.random(), 1) if number % 5 == 0 else None
        images: tuple[str, ...] = ()
        if number % 10 == 3:
            images = tuple(f"{CDN}/img/{number}-{k}.jpg" for k in range(1 + number % 3))
        hreflang, alternates = None, ()
        if number % 10 == 5:
            position = number // 10
            cluster = position // 3
            hreflang = LANGUAGES[position % 3]
            url = f"{SITE}/{hreflang}/guide/{cluster}"
            alternates = tuple((lang, f"{SITE}/{lang}/guide/{cluster}") for lang in LANGUAGES)
        result.append(
            Page(url, lastmod, changefreq, priority, images, hreflang, alternates),
        )
    return result


def ours(page: Page) -> dict[str, Any]:
    """A page record for ``sitemap-updater build`` (alternates: the others; it adds itself)."""
    record: dict[str, Any] = {"url": page.url}
    for name in ("lastmod", "changefreq", "priority", "hreflang"):
        if getattr(page, name) is not None:
            record[name] = getattr(page, name)
    if page.images:
        record["images"] = [{"loc": loc} for loc in page.images]
    if page.alternates:
        record["alternates"] = [
            {"hreflang": lang, "href": href} for lang, href in page.alternates if href != page.url
        ]
    return record


def peers(page: Page) -> dict[str, Any]:
    """The same page as a sitemap.js item."""
    item: dict[str, Any] = {"url": page.url}
    for name in ("lastmod", "changefreq", "priority"):
        if getattr(page, name) is not None:
            item[name] = getattr(page, name)
    if page.images:
        item["img"] = [{"url": loc} for loc in page.images]
    if page.alternates:
        item["links"] = [{"lang": lang, "url": href} for lang, href in page.alternates]
    return item


def _reordered(record: dict[str, Any]) -> dict[str, Any]:
    """The same record with ``type`` and ``version`` first and the rest in reverse order."""
    rest = {key: record[key] for key in reversed(record)}
    return {"type": "publish", "version": 1, **rest}


def _with_absent_alternates(number: int, record: dict[str, Any]) -> dict[str, Any]:
    """One record in ten declares two language versions that are not in the file."""
    if number % 10 != 7 or "alternates" in record:
        return record
    return {
        **record,
        "hreflang": "en",
        "alternates": [
            {"hreflang": lang, "href": f"{SITE}/{lang}/missing/{number}"} for lang in ("de", "fr")
        ],
    }


def _csv(records: list[dict[str, Any]]) -> str:
    """The records' plain fields as CSV (a CSV row has no images or alternates)."""
    columns = ("url", "lastmod", "changefreq", "priority")
    rows = [",".join(columns)]
    for record in records:
        rows.append(
            ",".join(f'"{record[c]}"' if c == "url" else str(record.get(c, "")) for c in columns)
        )
    return "\n".join(rows) + "\n"


def write_rows(folder: Path, count: int) -> tuple[dict[str, Path], Path]:
    """The same pages in every shape the bench times (ours), and as sitemap.js items."""
    generated = pages(count)
    records = [ours(page) for page in generated]

    def lines(items: Any, ascii_only: bool = False) -> str:
        return "".join(json.dumps(item, ensure_ascii=ascii_only) + "\n" for item in items)

    texts = {
        "rows.jsonl": lines(records),
        "escaped.jsonl": lines(records, ascii_only=True),
        "reordered.jsonl": lines(_reordered(record) for record in records),
        "absent-alternates.jsonl": lines(
            _with_absent_alternates(n, record) for n, record in enumerate(records)
        ),
        "array.json": json.dumps(records, ensure_ascii=False, indent=1),
        "rows.csv": _csv(records),
    }
    shapes = {}
    for name, text in texts.items():
        shapes[name] = folder / name
        shapes[name].write_text(text, encoding="utf-8")
    theirs = folder / "sitemapjs.jsonl"
    theirs.write_text(lines(peers(page) for page in generated), encoding="utf-8")
    return shapes, theirs


SHAPES = {
    "rows.jsonl": "JSON Lines, non-ASCII raw",
    "escaped.jsonl": "JSON Lines, \\u escapes",
    "reordered.jsonl": "keys in another order",
    "absent-alternates.jsonl": "1 in 10: absent alternates",
    "array.json": "one JSON array",
    "rows.csv": "CSV (plain fields)",
}


@dataclass
class Timings:
    name: str
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)
    digests: set[str] = field(default_factory=set)
    files: int = 0
    gzip_bytes: int = 0
    runs: int = 0  # whose output was digested


def run_child(command: Sequence[str | Path], cwd: Path | None = None) -> tuple[float, float, float]:
    """Run one child to completion: (wall seconds, CPU seconds, peak resident memory in MB)."""
    started = time.perf_counter()
    with subprocess.Popen(
        [str(part) for part in command], cwd=cwd, stdout=subprocess.DEVNULL
    ) as child:
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if child.returncode != 0:
        raise SystemExit(f"{command[0]} {command[1]} failed with status {child.returncode}")
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, cpu, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc/PID/task/TID/children)."""
    found, position = [pid], 0
    while position < len(found):
        parent = found[position]
        position += 1
        try:
            for task in os.listdir(f"/proc/{parent}/task"):
                with open(f"/proc/{parent}/task/{task}/children") as children:
                    found.extend(int(child) for child in children.read().split())
        except OSError:  # gone meanwhile
            continue
    return found


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:  # gone meanwhile
        pass
    return 0


def tree_peak_mb(command: Sequence[str | Path], cwd: Path) -> float | None:
    """Run one child (untimed) sampling its process tree's summed PSS every few milliseconds:
    the peak in MB, or None where /proc has no smaps_rollup or children lists."""
    if not Path(f"/proc/{os.getpid()}/smaps_rollup").exists():
        return None
    if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        return None
    peak = 0
    with subprocess.Popen(
        [str(part) for part in command], cwd=cwd, stdout=subprocess.DEVNULL
    ) as child:
        while child.poll() is None:
            peak = max(peak, sum(_pss_kib(pid) for pid in _tree(child.pid)))
            time.sleep(0.005)
    if child.returncode != 0:
        raise SystemExit(f"{command[0]} {command[1]} failed with status {child.returncode}")
    return peak / 1024


def digest(folder: Path) -> str:
    sha = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()


def compile_ours() -> None:
    """Byte-compile the package the runs import, as pip does when it installs one: an editable
    install under PYTHONDONTWRITEBYTECODE would compile every module again on every run."""
    spec = importlib.util.find_spec("sitemap_updater")
    if spec is not None and spec.origin is not None:
        compileall.compile_dir(Path(spec.origin).parent, quiet=1)


def install_peer() -> str | None:
    """Install sitemap.js into bench/node (once); the reason when it cannot be."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node or npm is not installed"
    if not (NODE_DIR / "node_modules" / "sitemap" / "package.json").is_file():
        subprocess.run(
            ["npm", "ci", "--prefix", str(NODE_DIR), "--no-audit", "--no-fund", "--loglevel=error"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return None


def record(timings: Timings, out: Path, seconds: float, cpu: float, peak: float) -> None:
    timings.seconds.append(seconds)
    timings.cpu_seconds.append(cpu)
    timings.peak_mb.append(peak)
    timings.digests.add(digest(out))
    timings.runs += 1
    files = sorted(out.iterdir())
    timings.files = len(files)
    timings.gzip_bytes = sum(path.stat().st_size for path in files if path.suffix == ".gz")


def table(rows: list[Timings], peer: Timings | None) -> str:
    header = (
        f"{'tool and input':<44}{'median s':>10}{'min s':>8}{'max s':>8}{'cpu s':>8}"
        f"{'peak MB':>9}{'speed-up':>10}"
    )
    lines = [header, "-" * len(header)]
    for timings in rows:
        median = statistics.median(timings.seconds)
        speedup = statistics.median(peer.seconds) / median if peer is not None else None
        lines.append(
            f"{timings.name:<44}{median:>10.3f}{min(timings.seconds):>8.3f}"
            f"{max(timings.seconds):>8.3f}{statistics.median(timings.cpu_seconds):>8.3f}"
            f"{max(timings.peak_mb):>9.0f}" + (f"{speedup:>9.2f}x" if speedup else f"{'':>10}")
        )
    return "\n".join(lines)


def _commands(shapes: dict[str, Path], theirs: Path, with_peer: bool) -> dict[str, Any]:
    script = Path(sys.executable).parent / "sitemap-updater"
    commands: dict[str, Any] = {}
    for name, path in shapes.items():
        commands[f"sitemap-updater build: {SHAPES[name]}"] = lambda out, path=path: [
            script, "build", path, "--site-url", SITE, "--out", out, "--now", "2026-11-22",
        ]  # fmt: skip
    if with_peer:
        for mode in ("buffered", "streaming"):
            commands[f"sitemap.js {mode}"] = lambda out, mode=mode: [
                "node", NODE_DIR / "peer.js", mode, theirs.name, out.name,
            ]  # fmt: skip
    return commands


def _run_all(folder: Path, commands: dict[str, Any], runs: int) -> dict[str, Timings]:
    """Every command ``runs`` times, alternating, in an order shuffled each round (seeded: a
    command that always ran after the same one was timed 15% off), then once more for its
    tree's memory."""
    tools = {name: Timings(name) for name in commands}
    for run in range(runs):
        order = list(tools)
        random.Random(run).shuffle(order)
        for name in order:
            timings = tools[name]
            out = folder / f"out-{run}-{len(timings.seconds)}"
            seconds, cpu, peak = run_child(commands[name](out), cwd=folder)
            record(timings, out, seconds, cpu, peak)
            shutil.rmtree(out)
        print(f"  run {run + 1}/{runs} done", file=sys.stderr, flush=True)
    for name, timings in tools.items():
        out = folder / "out-memory"
        peak = tree_peak_mb(commands[name](out), cwd=folder)
        if peak is not None:
            timings.peak_mb = [peak]
            timings.digests.add(digest(out))
            timings.runs += 1
        shutil.rmtree(out)
    return tools


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50_000, help="rows to render (50000)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each tool (5)")
    parser.add_argument("--no-peer", action="store_true", help="time only sitemap-updater")
    args = parser.parse_args(argv)
    skipped = "--no-peer" if args.no_peer else install_peer()
    compile_ours()
    with tempfile.TemporaryDirectory(prefix="bench-render-") as work:
        folder = Path(work)
        shapes, theirs = write_rows(folder, args.pages)
        tools = _run_all(folder, _commands(shapes, theirs, skipped is None), args.runs)
    ours = [t for name, t in tools.items() if name.startswith("sitemap-updater")]
    peer = tools.get("sitemap.js buffered")
    print(
        f"render {args.pages:,} pages, {args.runs} run(s) each, alternating; process wall and "
        "CPU time, medians; peak memory of the process tree; speed-up: sitemap.js buffered's "
        "median wall time / this one's"
    )
    print(table(list(tools.values()), peer))
    medians = [statistics.median(t.seconds) for t in ours]
    print(f"  ours, slowest shape / fastest: {max(medians) / min(medians):.2f}x")
    if skipped is not None:
        print(f"  sitemap.js not run: {skipped}")
    same_records = [tools[f"sitemap-updater build: {SHAPES[n]}"] for n in SAME_RECORDS]
    identical = all(len(t.digests) == 1 for t in ours)
    spellings = len(set().union(*(t.digests for t in same_records))) == 1
    runs = min(t.runs for t in ours)
    print(f"  ours byte-identical across {runs} runs: {'yes' if identical else 'NO'}")
    print(
        f"  the same records in {len(SAME_RECORDS)} spellings give the same files: "
        f"{'yes' if spellings else 'NO'}"
    )
    return 0 if identical and spellings else 1


# Shapes that hold exactly the same records (the others add or drop fields).
SAME_RECORDS = ("rows.jsonl", "escaped.jsonl", "reordered.jsonl", "array.json")


if __name__ == "__main__":
    sys.exit(main())
