"""The operator commands as a person runs them: console scripts against ``local --serve``.

``sitemap-updater local --serve`` runs the pipeline on moto's server and describes itself
as the stack ``sitemap-updater-local``; every AWS command then works on it with nothing but
``--stack`` and ``--endpoint-url`` (the line it prints), exactly as against a deployment.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = str(Path(sys.executable).parent / "sitemap-updater")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Served:
    def __init__(self, process: subprocess.Popen[str], site: str, target: list[str]):
        self.process = process
        self.site = site
        self.target = target  # --stack ... --endpoint-url ... --region ...

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SCRIPT, *argv], capture_output=True, text=True, timeout=120, check=False, env=_env()
        )

    def aws(self, command: str, *argv: str) -> subprocess.CompletedProcess[str]:
        return self.run(command, *argv, *self.target)

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(f"{self.site}{path}", timeout=10) as response:
            return bytes(response.read())


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = "/nonexistent"
    return env  # no credentials, no region: a local endpoint needs neither


def serve(events: Path, site: str, out: Path, *ports: str) -> Served:
    """``local --serve`` started as a person starts it; the target it prints to operate it."""
    process = subprocess.Popen(
        [SCRIPT, "local", str(events), "--site-url", site, "--out", str(out), "--serve", *ports],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    target: list[str] = []
    served_at = site
    assert process.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not target:
        line = process.stderr.readline()
        if not line:
            break
        if line.startswith("serving "):
            served_at = line.split()[3]
        if line.startswith("operate it: sitemap-updater status "):
            target = shlex.split(line.removeprefix("operate it: sitemap-updater status "))
    assert target, "local --serve did not say how to operate it"
    assert target[:2] == ["--stack", "sitemap-updater-local"]
    return Served(process, served_at, target)


def stop(served: Served) -> None:
    served.process.send_signal(signal.SIGINT)
    try:
        served.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        served.process.kill()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    port, moto_port = free_port(), free_port()
    site = f"http://127.0.0.1:{port}"
    # The samples name www.example.com: these name this site. Not inside --out, which
    # `local` replaces whole (and so refuses to hold its inputs).
    events = tmp_path_factory.mktemp("events") / "events.jsonl"
    events.write_text(
        "".join(
            json.dumps({"type": "publish", "url": f"{site}/{n}", "version": 1}) + "\n"
            for n in range(3)
        )
        + "{not an event\n"
    )
    running = serve(events, site, tmp_path_factory.mktemp("site"), "--moto-port", str(moto_port))
    assert f"http://127.0.0.1:{moto_port}" in running.target
    yield running
    stop(running)


def test_the_documented_recipe_serves_the_sample_events_as_their_site(tmp_path: Path) -> None:
    # docs/OPERATIONS.md: the samples name https://www.example.com, served from this machine.
    port, moto_port = str(free_port()), str(free_port())
    samples = Path(__file__).parents[2] / "events"
    site = "https://www.example.com"
    running = serve(samples, site, tmp_path / "site", "--port", port, "--moto-port", moto_port)
    try:
        assert running.site == f"http://127.0.0.1:{port}"
        assert running.get("/robots.txt").endswith(f"Sitemap: {site}/sitemap.xml\n".encode())
        check = running.run("validate", f"{running.site}/robots.txt", "--site-url", site)
        assert check.returncode == 0, check.stdout
        assert "2 sitemap(s), 14 URL(s): 0 fault(s), 0 warning(s)" in check.stdout
        status = running.aws("status")  # 1: the three rejected samples are dead letters
        assert (status.returncode, status.stderr) == (1, "")
        assert "dead letters: 3 by reason_code" in status.stdout
    finally:
        stop(running)


def test_status_resolves_the_local_stack_and_sees_the_dead_letter(served: Served) -> None:
    result = served.aws("status", "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 1  # the malformed line is a dead letter
    assert report["dead_letters"] == 1
    assert report["site_url"] == served.site
    assert report["shards"][0]["state"] == "listed"


def test_send_reaches_the_running_pipeline(served: Served, tmp_path: Path) -> None:
    events = tmp_path / "new.jsonl"
    events.write_text(
        json.dumps({"type": "publish", "url": f"{served.site}/sent", "version": 1}) + "\n"
    )
    result = served.aws("send", str(events))
    assert result.returncode == 0, result.stderr
    assert "1 of 1 event(s) sent" in result.stdout
    deadline = time.monotonic() + 60
    while f"{served.site}/sent".encode() not in _shard(served):
        assert time.monotonic() < deadline, "the pipeline did not publish the event"
        time.sleep(0.5)


def test_backfill_rebuild_and_redrive_dry_run_work_on_it(served: Served, tmp_path: Path) -> None:
    pages = tmp_path / "pages.csv"
    pages.write_text(f"url,lastmod\n{served.site}/imported,2026-11-01\n")
    backfill = served.aws("backfill", str(pages))
    assert backfill.returncode == 0, backfill.stderr
    assert "1 applied" in backfill.stdout
    rebuild = served.aws("rebuild", "--all")
    assert rebuild.returncode == 0, rebuild.stderr
    assert rebuild.stdout.startswith("rebuild: ")
    redrive = served.aws("redrive", "--dry-run", "--queue", "ingest")
    assert redrive.returncode == 0, redrive.stderr
    assert "ingest: 1 message(s)" in redrive.stdout


def test_nothing_accepted_is_lost_under_concurrent_send_and_backfill(
    served: Served, tmp_path: Path
) -> None:
    """Two sends and a backfill at once, into the running functions: every page ends as its
    newest event says (publishes listed, unpublishes not), none left behind."""

    def event(kind: str, path: str, version: int) -> str:
        return json.dumps({"type": kind, "url": f"{served.site}/{path}", "version": version})

    first, second, pages = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "pages.csv"
    first.write_text("".join(event("publish", f"c-a-{n}", 1) + "\n" for n in range(40)))
    second.write_text(
        "".join(event("publish", f"c-b-{n}", 1) + "\n" for n in range(40))
        + "".join(event("unpublish", f"c-b-{n}", 2) + "\n" for n in range(10))
    )
    # Version 0: the pages the sends also publish (c-a-*) keep the send's event.
    pages.write_text("url\n" + "".join(f"{served.site}/c-{p}\n" for p in ("a-0", "a-1", "f-0")))
    commands = [("send", first), ("send", second), ("backfill", pages)]
    running = [
        subprocess.Popen(
            [SCRIPT, command, str(path), *served.target],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for command, path in commands
    ]
    for process in running:
        _out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    live = {f"c-a-{n}" for n in range(40)} | {f"c-b-{n}" for n in range(10, 40)} | {"c-f-0"}
    gone = {f"c-b-{n}" for n in range(10)}
    deadline = time.monotonic() + 300
    while True:
        listed = {loc.rsplit("/", 1)[-1] for loc in _locs(_shard(served))}
        if live <= listed and not gone & listed:
            break
        assert time.monotonic() < deadline, f"missing {sorted(live - listed)[:5]}"
        time.sleep(1)


def _locs(shard: bytes) -> list[str]:
    return [part.split(b"</loc>")[0].decode() for part in shard.split(b"<loc>")[1:]]


def test_validate_finds_the_served_site_clean(served: Served) -> None:
    result = served.run("validate", f"{served.site}/")
    assert result.returncode == 0, result.stdout
    assert " 0 fault(s), 0 warning(s)" in result.stdout


def test_a_wrong_endpoint_is_one_line_and_exit_1(served: Served) -> None:
    result = served.run(
        "status", "--stack", "x", "--endpoint-url", f"http://127.0.0.1:{free_port()}"
    )
    assert result.returncode == 1
    assert result.stderr.startswith("sitemap-updater: error: cannot reach http://127.0.0.1:")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("mistake", ["site port", "no scheme", "mistyped region"])
def test_a_wrong_endpoint_or_region_is_one_line_and_exit_1(served: Served, mistake: str) -> None:
    endpoint = served.target[served.target.index("--endpoint-url") + 1]
    given = {
        "site port": ["--endpoint-url", served.site],
        "no scheme": ["--endpoint-url", endpoint.removeprefix("http://")],
        "mistyped region": ["--endpoint-url", endpoint, "--region", "us-eats-1"],
    }[mistake]
    for command in ("status", "send"):
        events = [] if command == "status" else [str(Path(__file__).parents[2] / "events")]
        result = served.run(command, *events, "--stack", "sitemap-updater-local", *given)
        assert result.returncode == 1, result.stderr
        assert result.stderr.startswith("sitemap-updater: error: "), result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert ("scheme" if mistake == "no scheme" else "--region") in result.stderr


def _shard(served: Served) -> bytes:
    import gzip

    return gzip.decompress(served.get("/sitemap-pages-00001.xml.gz"))
