"""Render speed against a peer: `sitemap-updater build` vs sitemap.js on the same rows.

    .venv/bin/python bench/render.py [--pages 50000] [--runs 5] [--no-peer]

A printout, not a test: the test suite holds no wall-clock assertions; CI only runs this on a
small size (``main(["--pages", "2000", "--runs", "1"])``) to check that it still works.

The rows (deterministic, seeded): every page has a URL, two in three a lastmod, one in four a
changefreq, one in five a priority; one in seven URLs has a query with ``&`` (escaped in the
XML), one in ten a non-ASCII path (percent-encoded by both tools); one in ten pages lists
images on a CDN; one in ten is a language version in a cluster of three (en, de, fr), declared
fully reciprocally, so both tools write the same three ``xhtml:link`` for each.

Each tool is timed as a child process, wall time including interpreter start and imports, and
its CPU time (user + system, its own children and threads included: the machine may be busy
with other work, CPU time is the steadier figure), runs alternating (ours, sitemap.js
buffered, sitemap.js streaming, ours, ...) so that the machine's noise hits all of them
alike; medians are reported. Peak memory is the process tree's: ours forks a second process
to read large files (pages.py), and the resident size the kernel reports at exit is that of
the largest one process, not of both together. So one more run of each tool, untimed, sums
the proportional set size (PSS: a page shared by two processes counts half in each, so a
forked child's copy-on-write pages count once) of every process in its tree every few
milliseconds, and the peak of that sum is reported (where /proc cannot tell it, the largest
process's resident size). Both write gzipped shards of at most 10,000 URLs and a sitemap
index:

* ours: ``sitemap-updater build pages.jsonl --site-url ... --out DIR`` (every record validated
  and normalised, shards gzipped at level 6, index, robots.txt);
* sitemap.js buffered: rows parsed up front, each shard rendered by SitemapStream +
  streamToPromise into one buffer, one ``zlib.gzipSync`` (level 6), the index uncompressed;
* sitemap.js streaming: ``simpleSitemapAndIndex`` reading the rows file, every sitemap piped
  through ``createGzip()`` (the README's path for large sites).

sitemap.js is installed from ``bench/node/package-lock.json`` with ``npm ci`` (once; skipped
when node or npm are missing, or with ``--no-peer``).
"""

from __future__ import annotations

import argparse
import hashlib
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


def write_rows(folder: Path, count: int) -> tuple[Path, Path]:
    generated = pages(count)
    mine, theirs = folder / "pages.jsonl", folder / "sitemapjs.jsonl"
    for path, shape in ((mine, ours), (theirs, peers)):
        lines = (json.dumps(shape(page), ensure_ascii=False) + "\n" for page in generated)
        path.write_text("".join(lines), encoding="utf-8")
    return mine, theirs


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


def table(rows: list[Timings], baseline: Timings) -> str:
    header = (
        f"{'tool':<24}{'median s':>10}{'min s':>8}{'max s':>8}{'vs ours':>9}"
        f"{'cpu s':>8}{'vs ours':>9}{'peak MB':>9}"
    )
    lines = [header, "-" * len(header)]
    ours_median = statistics.median(baseline.seconds)
    ours_cpu = statistics.median(baseline.cpu_seconds)
    for timings in rows:
        median = statistics.median(timings.seconds)
        cpu = statistics.median(timings.cpu_seconds)
        lines.append(
            f"{timings.name:<24}{median:>10.3f}{min(timings.seconds):>8.3f}"
            f"{max(timings.seconds):>8.3f}{median / ours_median:>8.2f}x"
            f"{cpu:>8.3f}{cpu / ours_cpu:>8.2f}x{max(timings.peak_mb):>9.0f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50_000, help="rows to render (50000)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each tool (5)")
    parser.add_argument("--no-peer", action="store_true", help="time only sitemap-updater")
    args = parser.parse_args(argv)
    script = Path(sys.executable).parent / "sitemap-updater"
    skipped = "--no-peer" if args.no_peer else install_peer()
    with tempfile.TemporaryDirectory(prefix="bench-render-") as work:
        folder = Path(work)
        mine, theirs = write_rows(folder, args.pages)
        tools = {"sitemap-updater build": Timings("sitemap-updater build")}
        commands = {
            "sitemap-updater build": lambda out: [
                script, "build", mine, "--site-url", SITE, "--out", out, "--now", "2026-11-22",
            ],
        }  # fmt: skip
        if skipped is None:
            for mode in ("buffered", "streaming"):
                name = f"sitemap.js {mode}"
                tools[name] = Timings(name)
                commands[name] = lambda out, mode=mode: [
                    "node", NODE_DIR / "peer.js", mode, theirs.name, out.name,
                ]  # fmt: skip
        for run in range(args.runs):
            for name, timings in tools.items():
                out = folder / f"out-{len(timings.seconds)}-{name.replace(' ', '-')}"
                seconds, cpu, peak = run_child(commands[name](out), cwd=folder)
                record(timings, out, seconds, cpu, peak)
                shutil.rmtree(out)
            print(f"  run {run + 1}/{args.runs} done", file=sys.stderr, flush=True)
        for name, timings in tools.items():  # the process tree's memory, in a run of its own
            out = folder / f"out-memory-{name.replace(' ', '-')}"
            peak = tree_peak_mb(commands[name](out), cwd=folder)
            if peak is not None:
                timings.peak_mb = [peak]
                timings.digests.add(digest(out))  # one more run to compare ours with
                timings.runs += 1
            shutil.rmtree(out)
    baseline = tools["sitemap-updater build"]
    print(
        f"render {args.pages:,} pages, {args.runs} run(s) each, alternating; "
        f"process wall and CPU time, medians; peak memory of the process tree"
    )
    print(table(list(tools.values()), baseline))
    for timings in tools.values():
        print(
            f"  {timings.name}: {timings.files} files, {timings.gzip_bytes:,} gzipped shard bytes"
        )
    if skipped is not None:
        print(f"  sitemap.js not run: {skipped}")
    else:
        peer_medians = [statistics.median(t.seconds) for t in tools.values() if t is not baseline]
        fastest_peer = min(peer_medians)
        ratio = fastest_peer / statistics.median(baseline.seconds)
        peer_cpu = min(
            statistics.median(t.cpu_seconds) for t in tools.values() if t is not baseline
        )
        cpu_ratio = peer_cpu / statistics.median(baseline.cpu_seconds)
        print(f"  sitemap.js's faster path / ours: {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU")
    identical = len(baseline.digests) == 1
    verdict = ("yes" if identical else "NO") if baseline.runs > 1 else "n/a (one run)"
    print(f"  ours byte-identical across {baseline.runs} runs: {verdict}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
