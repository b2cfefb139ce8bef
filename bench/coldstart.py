"""Cold start: how long importing each handler module takes, as the function's asset holds it.

    .venv/bin/python bench/coldstart.py [--runs 9] [--python python3.12]

A printout, not a test. The functions' pinned requirements (functions/requirements.txt) are
installed into a virtual environment of their own under bench/.cache (once per requirements
hash), so what is imported is what Lambda imports: no test or operator packages that happen
to be in the project's environment (pyOpenSSL, for one, changes what botocore loads). Each
handler module is imported in a fresh interpreter ``--runs`` times with ``python -X
importtime``, runs interleaved across modules; the table shows the median and the fastest of
its total import time, and the largest packages it loads. Two floor rows import only
libraries every handler needs (botocore; botocore, Powertools and pydantic), measured the
same way: what no code of ours can go below. Interpreter start-up itself is not included
(Lambda's init phase adds it, and the runtime's own bootstrap). A last column shows what a
cold start's first invocation adds before its use case runs: the settings validated and the
botocore clients built (from one session; see adapters/clients.py), no request sent.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ROOT / "functions"
REQUIREMENTS = FUNCTIONS / "requirements.txt"
CACHE = Path(__file__).resolve().parent / ".cache"
HANDLERS = ("ingest", "rebuild", "index", "indexnow")
GOAL_MS = 300
# What every handler needs, imported alone (no code of ours): how much of a cold start is
# the floor set by the libraries. Written into the measured package as modules of their own.
FLOORS = {
    "floor_botocore": "botocore alone (the clients)",
    "floor_libraries": "botocore + Powertools + pydantic",
}
_FLOOR_SOURCES = {
    "floor_botocore": "import botocore.config\nimport botocore.session\nimport botocore.client\n",
    "floor_libraries": (
        "import botocore.config\nimport botocore.session\nimport botocore.client\n"
        "from aws_lambda_powertools import Logger, Metrics\n"
        "from aws_lambda_powertools.utilities.batch import BatchProcessor\n"
        "from pydantic import BaseModel\n\n\n"
        "class Settings(BaseModel):\n    table_name: str = ''\n"
    ),
}


def runtime_environment(python: str) -> Path:
    """A virtualenv holding exactly the functions' requirements; its interpreter's path."""
    key = REQUIREMENTS.read_bytes() + python.encode() + b"compiled"
    digest = hashlib.sha256(key).hexdigest()[:12]
    venv = CACHE / f"runtime-{digest}"
    interpreter = venv / "bin" / "python"
    if interpreter.exists():
        return interpreter
    shutil.rmtree(venv, ignore_errors=True)
    print(f"  installing {REQUIREMENTS.name} into {venv} ...", file=sys.stderr, flush=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(interpreter), "-m", "pip", "install", "--quiet"]  # compiled, as the asset is
    subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
    return interpreter


def compiled_package(interpreter: Path) -> Path:
    """A copy of the package compiled as the asset is (infra/sitemap_infra/bundling.py)."""
    folder = CACHE / "package"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(FUNCTIONS / "sitemap_updater", folder / "sitemap_updater")
    for module, source in _FLOOR_SOURCES.items():
        (folder / f"{module}.py").write_text(source)
    compile_all = [str(interpreter), "-m", "compileall", "-q"]
    subprocess.run([*compile_all, "--invalidation-mode", "unchecked-hash", str(folder)], check=True)
    return folder


def import_times(
    interpreter: Path, package: Path, module: str, *, bytecode: bool = True
) -> dict[str, int]:
    """Cumulative import time (microseconds) of every module one import of ``module`` loads;
    ``bytecode=False``: as from an asset without .pyc files (every module compiled)."""
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(package),
        "PYTHONDONTWRITEBYTECODE": "1",
        "POWERTOOLS_SERVICE_NAME": "sitemap-updater",
        "POWERTOOLS_METRICS_NAMESPACE": "SitemapUpdater",
    }
    # An empty pycache prefix: no bytecode is found anywhere, so every import compiles.
    no_bytecode = [] if bytecode else ["-X", f"pycache_prefix={CACHE / 'empty-pycache'}"]
    result = subprocess.run(
        [str(interpreter), *no_bytecode, "-X", "importtime", "-c", f"import {module}"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    times: dict[str, int] = {}
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        times.setdefault(name.strip(), int(cumulative))
    return times


# What a function's first invocation builds before its use case can run: the settings
# validated, and the clients and adapters its use case reaches (bootstrap.App). Run after
# the handler's import, in the same fresh interpreter; no request leaves the machine.
_FIRST_USE = """
import os, time
os.environ.update({environment!r})
import {module}
from sitemap_updater.bootstrap import app
started = time.perf_counter()
built = app()
{reach}
print((time.perf_counter() - started) * 1e6)
"""
_REACH = {
    "ingest": "built.ingest",
    "rebuild": "built.rebuild_shard",
    "index": "built.publish_index",
    "indexnow": "built.submit_indexnow",
}
_SETTINGS = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "SITE_URL": "https://www.example.com",
    "TABLE_NAME": "sitemap-registry",
    "BUCKET_NAME": "sitemap-site",
    "REBUILD_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/rebuild.fifo",
    "INDEX_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/index.fifo",
    "INGEST_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq",
    "INDEXNOW_KEY": "a1b2c3d4e5f6",
    "INDEXNOW_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/indexnow",
    "INDEXNOW_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/indexnow-dlq",
}


def first_use(interpreter: Path, package: Path, handler: str) -> float:
    """Microseconds the handler's first invocation spends building its App and use case."""
    code = _FIRST_USE.format(
        environment=_SETTINGS,
        module=f"sitemap_updater.handlers.{handler}",
        reach=_REACH[handler],
    )
    result = subprocess.run(
        [str(interpreter), "-c", code],
        env={
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(package),
            "PYTHONDONTWRITEBYTECODE": "1",
            "POWERTOOLS_SERVICE_NAME": "sitemap-updater",
            "POWERTOOLS_METRICS_NAMESPACE": "SitemapUpdater",
        },
        capture_output=True,
        text=True,
        check=True,
    )
    return float(result.stdout.strip().splitlines()[-1])


def top_level(times: dict[str, int], module: str, count: int = 4) -> list[tuple[str, int]]:
    """The largest packages loaded (by their top-level name, excluding the handler's own)."""
    packages: dict[str, int] = {}
    for name, micros in times.items():
        root = name.split(".")[0]
        if name == root and root != module.split(".", maxsplit=1)[0]:
            packages[root] = max(packages.get(root, 0), micros)
    return sorted(packages.items(), key=lambda item: -item[1])[:count]


def default_python() -> str:
    """Python 3.12 when this machine runs one (the closest to the functions' runtime), else
    this interpreter."""
    candidates = [
        shutil.which("python3.12"),
        *map(str, Path.home().glob(".pyenv/versions/3.12*/bin/python3.12")),
    ]
    for candidate in candidates:
        if (
            candidate
            and subprocess.run(
                [candidate, "-c", "pass"], capture_output=True, check=False
            ).returncode
            == 0
        ):
            return candidate
    return sys.executable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh interpreters per module")
    parser.add_argument(
        "--python",
        default=None,
        help="interpreter for the runtime environment (python3.12 when there is one)",
    )
    args = parser.parse_args(argv)
    interpreter = runtime_environment(args.python or default_python())
    version = subprocess.run(
        [str(interpreter), "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    package = compiled_package(interpreter)
    print(f"\nCold start: import time of each handler module (Python {version}, asset packages)")
    header = (
        f"{'handler':<40} | {'median':>8} | {'fastest':>8} | {'goal':>6} | "
        f"{'no .pyc':>8} | {'1st use':>8} | largest imports (ms)"
    )
    print(header)
    print("-" * len(header))
    modules = [f"sitemap_updater.handlers.{name}" for name in HANDLERS] + list(FLOORS)
    # Runs interleave the modules (one of each, then again): the machine's drift over the
    # minute this takes falls on all of them alike.
    runs: dict[str, list[dict[str, int]]] = {module: [] for module in modules}
    first_uses: dict[str, list[float]] = {name: [] for name in HANDLERS}
    for _ in range(args.runs):
        for module in modules:
            runs[module].append(import_times(interpreter, package, module))
        for name in HANDLERS:
            first_uses[name].append(first_use(interpreter, package, name) / 1000)
    for module in modules:
        totals = [run[module] / 1000 for run in runs[module]]
        median = statistics.median(totals)
        if module in FLOORS:
            name, uncompiled, largest = f"floor: {FLOORS[module]}", "", "no code of ours"
            built = ""
        else:
            built = f"{statistics.median(first_uses[module.rsplit('.', 1)[1]]):>5.0f} ms"
            name, largest = (
                module,
                ", ".join(
                    f"{top} {micros / 1000:.0f}"
                    for top, micros in top_level(runs[module][0], module)
                ),
            )
            no_pyc = import_times(interpreter, package, module, bytecode=False)[module] / 1000
            uncompiled = f"{no_pyc:>5.0f} ms"
        print(
            f"{name:<40} | {median:>5.0f} ms | {min(totals):>5.0f} ms | "
            f"{'ok' if median <= GOAL_MS else 'OVER':>6} | {uncompiled:>8} | {built:>8} | "
            f"{largest}"
        )
    print(
        f"(goal: {GOAL_MS} ms each, with bytecode as the asset ships it; 'no .pyc': one run "
        "as from an asset without bytecode, every module compiled at import; '1st use': "
        "median time the first invocation spends validating the settings and building the "
        "clients and use case it reaches, IndexNow on, no request sent)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
