"""The benchmarks still run (at small sizes): CI's only check on bench/. No time is asserted;
what is asserted is that each part ran to its table and measured what it says it does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sitemap_updater.resources import REBUILD

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_every_benchmark_runs_at_a_small_size() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--small"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, result.stderr[-3000:]
    for section in ("=== render ===", "=== work ===", "=== coldstart ===", "=== local ==="):
        assert section in out
    # local: every page whose newest event is a publish is listed (lost: 0)
    assert re.search(r"^\s+200\s+80\s.*\s0$", out, re.MULTILINE), out
    # render: our build's output was byte-identical across runs (two at least: the timed
    # run and the memory run)
    assert "sitemap-updater build" in out
    assert re.search(r"ours byte-identical across (?:[2-9]|[1-9]\d+) runs: yes", out), out
    # ... on every shape of the same records, and those give the same files
    assert re.search(r"the same records in \d spellings give the same files: yes", out), out
    # work: the same requests per event at every registry size, and the burst coalesced
    assert "requests identical at every size: yes" in out
    # (every request: the functions', the CMS's sends, Lambda's receives and deletes)
    burst = re.search(r"every request of the burst: [\d,]+ = (\d+\.\d+) per event", out)
    assert burst is not None
    assert float(burst.group(1)) <= 1.3
    # ... and the largest shards a rebuild may hold fit its function's memory, with room
    peaks = re.findall(r"^  .{16} +4\d\.\d MiB: \d+ MB, \d+ MB, (\d+) MB$", out, re.MULTILINE)
    assert len(peaks) == 4, out
    assert all(int(peak) < 0.75 * REBUILD.memory_mb for peak in peaks), peaks
    # coldstart: every handler module was imported in the runtime environment
    # and each one's first invocation built its clients and use case (the '1st use' column)
    for handler in ("ingest", "rebuild", "index", "indexnow"):
        row = re.search(rf"sitemap_updater\.handlers\.{handler} +\|(.*)", out)
        assert row is not None
        cells = [cell.strip() for cell in row.group(1).split("|")]
        assert re.fullmatch(r"\d+ ms", cells[4]), cells
    # ... and the libraries' floor beside them, measured the same way
    floors = re.findall(r"floor: .+? \|\s+(\d+) ms", out)
    assert len(floors) == 2
    assert all(int(ms) > 0 for ms in floors)
