"""``sitemap-updater local`` end to end: the real console script, in a subprocess.

Each run is its own process (moto's server, the process-wide AWS environment the local runtime
sets), so nothing leaks into other tests. What the site must hold is worked out here from the
event files, independently of the code under test.
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.robotparser
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from lxml import etree

from sitemap_updater.schemas import ALL_XSD, sitemap_schema

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "events"
REJECTED_SAMPLES = EVENTS / "90-rejected-examples.jsonl"
SITE = "https://www.example.com"
NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}
RUN_TIMEOUT = 120


# --- running the CLI -------------------------------------------------------------------------


def cli() -> list[str]:
    """The console script's entry point, run by this interpreter (the venv's)."""
    return [sys.executable, "-m", "sitemap_updater.cli"]


def child_env() -> dict[str, str]:
    """This environment minus any real AWS account; the local runtime points boto3 at moto."""
    environ = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1"
    )
    return environ


def run(*args: str | Path, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cli(), *map(str, args)],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=REPO,
        timeout=timeout,
        check=False,
    )


def _restore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(*args: str | Path, logs: Path) -> subprocess.Popen[bytes]:
    """Start the CLI in the background, its output in files (no pipe to fill up)."""
    extra: dict[str, Any] = {}
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # e.g. pytest run as a background job
        extra["preexec_fn"] = _restore_sigint  # else the child inherits it and ignores Ctrl-C
    logs.mkdir(parents=True, exist_ok=True)
    with (logs / "stdout").open("wb") as stdout, (logs / "stderr").open("wb") as stderr:
        return subprocess.Popen(
            [*cli(), *map(str, args)],
            stdout=stdout,
            stderr=stderr,
            env=child_env(),
            cwd=REPO,
            **extra,
        )


def free_port() -> int:
    """A free port below the ephemeral range, so the child's own bind(0) cannot take it first."""
    ranges = Path("/proc/sys/net/ipv4/ip_local_port_range")
    low = int(ranges.read_text().split()[0]) if ranges.exists() else 32768
    for port in random.sample(range(10_000, max(low, 10_100)), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port")


# --- what the site must hold, from the event files alone --------------------------------------


def bodies_in(folder: Path) -> list[str]:
    """Every message body the folder holds, in name order (schema.json is not an event)."""
    bodies: list[str] = []
    for path in sorted(folder.rglob("*")):
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if path.suffix == ".jsonl":
            bodies += [line for line in text.split("\n") if line.strip()]
        elif path.suffix == ".json":
            document = json.loads(text)
            if isinstance(document, list):
                bodies += [json.dumps(element) for element in document]
            elif "Records" in document:
                bodies += [record["body"] for record in document["Records"]]
            elif "$schema" not in document:
                bodies.append(text)
    return bodies


def without_envelope(document: dict[str, Any]) -> dict[str, Any]:
    if document.get("Type") == "Notification":
        document = json.loads(document["Message"])
    if "detail-type" in document:
        document = document["detail"]
    return document


def iri_to_uri(url: str) -> str:
    return "".join(c if c.isascii() else quote(c, safe="") for c in url)


def newest_publishes(bodies: list[str], site: str) -> dict[str, dict[str, Any]]:
    """URL (as a sitemap lists it) -> the publish event that must describe it."""
    origin = urlsplit(site)
    newest: dict[str, dict[str, Any]] = {}
    for body in bodies:
        try:
            event = without_envelope(json.loads(body))
        except ValueError:
            continue
        if "id" in event:  # events/13-entity-moves.jsonl: an entity that ends unpublished
            continue
        parts = urlsplit(event["url"])
        version = event["version"]
        if (parts.scheme, parts.netloc) != (origin.scheme, origin.netloc):
            continue
        if isinstance(version, bool) or not isinstance(version, int | float):
            continue
        url = iri_to_uri(event["url"])
        if url not in newest or version > newest[url]["version"]:
            newest[url] = event
    return {url: event for url, event in newest.items() if event["type"] == "publish"}


def as_utc(lastmod: str) -> str:
    if len(lastmod) == len("2026-11-20"):
        return lastmod
    moment = datetime.fromisoformat(lastmod.replace("Z", "+00:00")).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- reading the site ----------------------------------------------------------------------------


def xml_of(body: bytes) -> bytes:
    return gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body


def locs(document: bytes, path: str) -> list[str]:
    return [loc.text for loc in etree.fromstring(xml_of(document)).findall(path, NS)]


def shard_files(out: Path, site: str) -> list[Path]:
    """The files the index names, in its order."""
    named = locs((out / "sitemap.xml").read_bytes(), "sm:sitemap/sm:loc")
    assert all(loc.startswith(f"{site}/") for loc in named), named
    return [out / loc.removeprefix(f"{site}/") for loc in named]


def entries(out: Path, site: str) -> dict[str, dict[str, str | None]]:
    found: dict[str, dict[str, str | None]] = {}
    for shard in shard_files(out, site):
        for url in etree.fromstring(xml_of(shard.read_bytes())).findall("sm:url", NS):
            loc = url.findtext("sm:loc", namespaces=NS)
            assert loc not in found, f"{loc} is listed twice"
            found[loc] = {
                name: url.findtext(f"sm:{name}", namespaces=NS)
                for name in ("lastmod", "changefreq", "priority")
            }
    return found


def assert_fields(found: dict[str, str | None], event: dict[str, Any]) -> None:
    assert found["lastmod"] == (as_utc(event["lastmod"]) if "lastmod" in event else None)
    assert found["changefreq"] == event.get("changefreq")
    if "priority" in event:
        assert found["priority"] is not None
        assert Decimal(found["priority"]) == Decimal(str(event["priority"]))
    else:
        assert found["priority"] is None


# --- the console script itself -----------------------------------------------------------------


def test_python_m_runs_the_installed_console_script() -> None:
    script = Path(sys.executable).parent / "sitemap-updater"
    assert script.is_file(), f"no console script next to {sys.executable}: pip install -e '.[dev]'"

    by_module = run("--help")
    by_script = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, timeout=60, check=False
    )

    assert by_module.returncode == by_script.returncode == 0
    assert by_module.stdout == by_script.stdout
    assert "local" in by_module.stdout
    assert "schema" in by_module.stdout


# --- `local events/ --json` ------------------------------------------------------------------


@dataclass
class LocalRun:
    result: subprocess.CompletedProcess[str]
    out: Path

    @property
    def summary(self) -> dict[str, Any]:
        return json.loads(self.result.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> LocalRun:
    out = tmp_path_factory.mktemp("local") / "site"
    result = run("local", "events/", "--site-url", SITE, "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    return LocalRun(result, out)


def test_the_summary_counts_every_event(sample_run: LocalRun) -> None:
    sent = len(bodies_in(EVENTS))
    rejected = len(REJECTED_SAMPLES.read_text(encoding="utf-8").splitlines())
    summary = sample_run.summary

    assert {"accepted", "rejected", "dead_lettered", "objects_written"} <= set(summary)
    assert summary["sent"] == sent
    assert summary["accepted"] == sent - rejected
    assert summary["dead_lettered"] == rejected  # nothing else failed its way to a DLQ
    assert summary["objects_written"] >= len(summary["objects"]) >= 3
    assert "Traceback" not in sample_run.result.stderr
    assert sample_run.result.stdout.startswith(
        f"events: {sent} sent, {sent - rejected} accepted, {rejected} rejected, "
        f"{rejected} dead-lettered\n"
    )


def test_the_rejected_examples_come_back_with_their_reason_codes(sample_run: LocalRun) -> None:
    lines = REJECTED_SAMPLES.read_text(encoding="utf-8").splitlines()
    codes = ["url_foreign_host", "invalid_version", "malformed_json"]  # one per line, in order
    expected = sorted(zip(codes, lines, strict=True))

    got = []
    for rejection in sample_run.summary["rejected"]:
        assert set(rejection) == {"reason", "event"}
        event = rejection["event"]
        if isinstance(event, str):  # not JSON: the body as it was sent
            got.append((rejection["reason"].split(":")[0], event))
            continue
        line = next(line for line in lines if line.endswith("}") and json.loads(line) == event)
        got.append((rejection["reason"].split(":")[0], line))

    assert sorted(got) == expected
    malformed = next(r for r in sample_run.summary["rejected"] if isinstance(r["event"], str))
    assert malformed["event"] == lines[2]  # the line exactly as written
    for code in codes:
        assert f"  rejected: {code}: " in sample_run.result.stdout


def test_the_out_dir_holds_robots_txt_the_index_and_a_gzipped_shard(sample_run: LocalRun) -> None:
    files = sorted(
        str(p.relative_to(sample_run.out)) for p in sample_run.out.rglob("*") if p.is_file()
    )

    assert files == sample_run.summary["objects"]
    assert "robots.txt" in files
    assert "sitemap.xml" in files
    assert any(name.endswith(".xml.gz") for name in files)
    assert sample_run.summary["out"] == str(sample_run.out)


def test_robots_txt_names_the_index_and_the_index_names_the_shards(sample_run: LocalRun) -> None:
    robots = (sample_run.out / "robots.txt").read_text(encoding="utf-8")
    sitemap_lines = [line for line in robots.splitlines() if line.lower().startswith("sitemap:")]

    assert sitemap_lines == [f"Sitemap: {SITE}/sitemap.xml"]
    assert "host:" not in robots.lower()
    shards = shard_files(sample_run.out, SITE)
    assert shards
    for shard in shards:
        assert shard.name.endswith(".xml.gz")
        assert shard.read_bytes()[:2] == b"\x1f\x8b"


def test_every_xml_file_validates_with_lxml_and_xmllint(sample_run: LocalRun) -> None:
    xmllint = shutil.which("xmllint")
    assert xmllint, "xmllint is missing: run scripts/system-deps"
    documents = sorted(sample_run.out.glob("*.xml*"))
    assert len(documents) >= 2

    schema = sitemap_schema()
    for document in documents:
        tree = etree.fromstring(xml_of(document.read_bytes()))
        assert schema.validate(tree), f"{document.name}: {schema.error_log}"
        checked = subprocess.run(
            [xmllint, "--noout", "--nonet", "--schema", str(ALL_XSD), str(document)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert checked.returncode == 0, checked.stderr
        assert f"{document} validates" in checked.stderr


def test_the_shards_list_exactly_the_newest_publishes(sample_run: LocalRun) -> None:
    expected = newest_publishes(bodies_in(EVENTS), SITE)
    found = entries(sample_run.out, SITE)

    assert set(found) == set(expected)
    for url, event in expected.items():
        assert_fields(found[url], event)


def test_urls_are_percent_encoded_and_escaped_in_the_bytes(sample_run: LocalRun) -> None:
    expected = newest_publishes(bodies_in(EVENTS), SITE)
    raw = b"".join(xml_of(shard.read_bytes()) for shard in shard_files(sample_run.out, SITE))
    text = raw.decode("utf-8")

    assert text.isascii()  # non-ASCII URLs arrive percent-encoded (UTF-8)
    assert any("%C3%" in url for url in expected)  # the samples hold such a URL ...
    assert any("&" in url for url in expected)  # ... and one with a query of several fields
    for url in expected:
        assert f"<loc>{url.replace('&', '&amp;')}</loc>" in text


# --- usage errors ------------------------------------------------------------------------------


def assert_usage_error(result: subprocess.CompletedProcess[str], words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sitemap-updater: error: ")
    assert words in lines[0]


def test_a_site_url_that_is_not_http_is_a_usage_error(tmp_path: Path) -> None:
    result = run("local", "events/", "--site-url", "ftp://x", "--out", tmp_path / "out")

    assert_usage_error(result, "site URL must start with http:// or https://")
    assert result.stdout == ""
    assert not (tmp_path / "out").exists()


def test_a_missing_events_path_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-events.jsonl"
    result = run("local", "events/", missing, "--site-url", SITE, "--out", tmp_path / "out")

    assert_usage_error(result, f"no such file or directory: {missing}")
    assert not (tmp_path / "out").exists()


def test_an_out_dir_holding_anything_a_run_does_not_write_is_refused_not_emptied(
    tmp_path: Path,
) -> None:
    """--out is replaced whole: a web root given by mistake must not be emptied."""
    web_root = tmp_path / "www"
    (web_root / "assets").mkdir(parents=True)
    (web_root / "index.html").write_text("<h1>home</h1>")
    (web_root / "sitemap.xml").write_text("<sitemapindex/>")

    result = run("local", "events/", "--site-url", SITE, "--out", web_root)

    assert_usage_error(result, "holds 'assets' and 1 more, which a local run does not write")
    assert (web_root / "index.html").read_text() == "<h1>home</h1>"
    assert (web_root / "sitemap.xml").is_file()
    not_a_folder = tmp_path / "site.txt"
    not_a_folder.write_text("notes")
    assert_usage_error(
        run("local", "events/", "--site-url", SITE, "--out", not_a_folder), "is not a folder"
    )
    assert not_a_folder.read_text() == "notes"


def test_an_out_dir_of_what_runs_write_is_replaced(tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    earlier = ["robots.txt", "sitemap.xml", "sitemap-pages-00007.xml.gz", "sitemap.xsl"]
    for name in [*earlier, "0123456789abcdef.txt"]:  # and an IndexNow key file
        (out / name).write_text("from an earlier run")

    result = run("local", "events/", "--site-url", SITE, "--out", out)

    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in out.iterdir()) == [
        "robots.txt",
        "sitemap-campaigns-00001.xml.gz",
        "sitemap-pages-00001.xml.gz",
        "sitemap.xml",
    ]


def test_an_out_dir_holding_the_events_is_refused(tmp_path: Path) -> None:
    """--out is replaced whole, so it must never be (or hold) an input or the cwd."""
    events = tmp_path / "events"
    events.mkdir()
    (events / "a.json").write_text(json.dumps({"type": "unpublish", "url": SITE, "version": 1}))

    for out in (events, tmp_path):
        assert_usage_error(run("local", events, "--site-url", SITE, "--out", out), "would delete")
    assert_usage_error(run("local", events, "--site-url", SITE, "--out", "."), "would delete")
    assert (events / "a.json").is_file()


def test_an_events_file_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(
        b'{"type": "publish", "url": "https://www.example.com/k\xf6ln", "version": 1}\n'
    )

    assert_usage_error(
        run("local", path, "--site-url", SITE, "--out", tmp_path / "out"),
        f"{path} is not UTF-8 (line 1: byte 0xF6)",
    )


def test_large_events_are_sent_and_one_sqs_cannot_carry_is_a_rejected_event(
    tmp_path: Path,
) -> None:
    """Ten valid ~230 KB events fit no single SendMessageBatch; a body over SQS's 1 MiB
    message limit cannot be sent at all: it is reported, not a traceback."""
    images = [{"loc": f"https://cdn.example.com/{'i' * 200}{n}"} for n in range(1000)]
    lines = [
        json.dumps({"type": "publish", "url": f"{SITE}/big{n}", "version": 1, "images": images})
        for n in range(10)
    ]
    lines.append(json.dumps({"type": "publish", "url": f"{SITE}/huge", "pad": "x" * 1_100_000}))
    events = tmp_path / "big.jsonl"
    events.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = run("local", events, "--site-url", SITE, "--out", tmp_path / "out", "--json")

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    summary = LocalRun(result, tmp_path / "out").summary
    assert (summary["sent"], summary["accepted"], summary["dead_lettered"]) == (10, 10, 0)
    (rejected,) = summary["rejected"]
    assert rejected["reason"].startswith(f"not_sent: the ingest queue refused {events}:11: ")
    assert "MessageTooLong" in rejected["reason"]
    assert f"  rejected: not_sent: the ingest queue refused {events}:11" in result.stdout


def test_stdout_holds_the_summary_alone_however_many_events_a_function_counts(
    tmp_path: Path,
) -> None:
    """Powertools prints a metric's values once it holds 100, even disabled: the functions'
    stdout is the command's stderr."""
    page = {"type": "publish", "version": 1}
    lines = [json.dumps({**page, "url": f"{SITE}/p{n}"}) for n in range(150)]
    events = tmp_path / "many.jsonl"
    events.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = run("local", events, "--site-url", SITE, "--out", tmp_path / "out", "--json")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("events: 150 sent, 150 accepted")
    assert LocalRun(result, tmp_path / "out").summary["accepted"] == 150
    assert "CloudWatchMetrics" not in result.stdout


def test_a_shard_size_above_the_protocol_limit_is_a_usage_error(tmp_path: Path) -> None:
    result = run(
        "local", EVENTS / "01-publish.json", "--site-url", SITE, "--out", tmp_path / "out",
        "--max-urls-per-shard", "60000",
    )  # fmt: skip

    assert_usage_error(result, "MAX_URLS_PER_SHARD: Input should be less than or equal to 50000")


def test_an_unknown_log_level_is_a_usage_error(tmp_path: Path) -> None:
    result = run(
        "local", EVENTS / "01-publish.json", "--site-url", SITE, "--out", tmp_path / "out",
        "--log-level", "verbose",
    )  # fmt: skip

    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "--log-level" in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "out").exists()


@contextlib.contextmanager
def port_in_use() -> Iterator[int]:
    """A port on 127.0.0.1 that another socket is listening on, while the block runs."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_a_port_in_use_is_a_usage_error(tmp_path: Path) -> None:
    with port_in_use() as port:
        result = run(
            "local", EVENTS / "01-publish.json", "--site-url", SITE, "--out", tmp_path / "out",
            "--serve", "--port", str(port),
        )  # fmt: skip

    assert_usage_error(result, f"cannot serve on port {port}")


def test_a_moto_port_in_use_or_out_of_range_is_a_usage_error_not_a_hang(tmp_path: Path) -> None:
    # moto's server binds on a thread of its own and waited for it for ever: a port in use
    # (say, a `local --serve --moto-port 5005` still running) hung the command
    with port_in_use() as port:
        in_use = run(
            "local", EVENTS / "01-publish.json", "--site-url", SITE, "--out", tmp_path / "out",
            "--moto-port", str(port), timeout=60,
        )  # fmt: skip
    out_of_range = run(
        "local", EVENTS / "01-publish.json", "--site-url", SITE, "--out", tmp_path / "out",
        "--moto-port", "70000", timeout=60,
    )  # fmt: skip

    assert_usage_error(in_use, f"cannot start moto's server on 127.0.0.1:{port}")
    assert_usage_error(out_of_range, "cannot start moto's server on 127.0.0.1:70000")
    assert not (tmp_path / "out").exists()


# --- `--serve`: real crawlers follow robots.txt -> index -> shards --------------------------------


def serve_events(site: str) -> list[dict[str, Any]]:
    return [
        {"type": "publish", "url": f"{site}/", "version": 1, "lastmod": "2026-11-20T09:30:00Z",
         "changefreq": "daily", "priority": 1.0},
        {"type": "publish", "url": f"{site}/products?id=42&colour=blue", "version": 12,
         "priority": 0.8},
        {"type": "publish", "url": f"{site}/städte/köln", "version": 2, "lastmod": "2026-11-19"},
        {"type": "publish", "url": f"{site}/about", "version": 3, "changefreq": "monthly"},
        {"type": "publish", "url": f"{site}/about", "version": 4,
         "lastmod": "2026-11-21T08:00:00+01:00"},
        {"type": "publish", "url": f"{site}/old", "version": 5},
        {"type": "unpublish", "url": f"{site}/old", "version": 6},
        {"type": "publish", "url": f"{site}/old", "version": 4},  # late and older: stays gone
        {"type": "publish", "url": f"{site}/news/a", "version": 1, "changefreq": "hourly"},
        {"type": "publish", "url": "http://evil.example.net/x", "version": 1},
        {"type": "publish", "url": f"{site}/late", "version": "seven"},
    ]  # fmt: skip


@dataclass
class Served:
    site: str
    port: int
    process: subprocess.Popen[bytes]
    expected: dict[str, dict[str, Any]]
    out: Path
    logs: Path

    def request(
        self, method: str, path: str, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request(method, path, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def get(self, path: str) -> bytes:
        status, _, body = self.request("GET", path)
        assert status == 200, path
        return body


def write_events(folder: Path, site: str) -> list[str]:
    """JSON Lines plus a JSON array; returns the bodies in the order they are sent."""
    events = serve_events(site)
    folder.mkdir(parents=True)
    lines = [json.dumps(event, ensure_ascii=False) for event in events[:-3]]
    (folder / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "b.json").write_text(json.dumps(events[-3:], ensure_ascii=False), encoding="utf-8")
    return bodies_in(folder)


def wait_until_served(process: subprocess.Popen[bytes], port: int, logs: Path) -> float:
    started = time.monotonic()
    while time.monotonic() - started < RUN_TIMEOUT:
        if process.poll() is not None:
            raise AssertionError(f"exited {process.returncode}: {(logs / 'stderr').read_text()}")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            connection.request("GET", "/robots.txt")
            if connection.getresponse().status == 200:
                return time.monotonic() - started
        except OSError:
            time.sleep(0.1)
        finally:
            connection.close()
    raise AssertionError(f"robots.txt did not answer within {RUN_TIMEOUT} s")


def stop(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            return process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait(timeout=20)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("serve")
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    bodies = write_events(root / "events", site)
    process = start(
        "local", root / "events", "--site-url", site, "--out", root / "site",
        "--serve", "--port", str(port), "--max-urls-per-shard", "2",
        logs=root / "logs",
    )  # fmt: skip
    try:
        wait_until_served(process, port, root / "logs")
        yield Served(
            site, port, process, newest_publishes(bodies, site), root / "site", root / "logs"
        )
    finally:
        stop(process)


def test_serve_robots_txt_for_robotparser_and_protego(served: Served) -> None:
    from protego import Protego

    robots = served.get("/robots.txt")
    index = f"{served.site}/sitemap.xml"

    parser = urllib.robotparser.RobotFileParser(f"{served.site}/robots.txt")
    parser.read()
    assert parser.site_maps() == [index]
    assert parser.can_fetch("*", f"{served.site}/about")
    assert list(Protego.parse(robots.decode("utf-8")).sitemaps) == [index]
    assert robots == (served.out / "robots.txt").read_bytes()  # the bucket, as exported


def test_serve_ultimate_sitemap_parser_finds_every_page(served: Served) -> None:
    from usp.objects.sitemap import IndexRobotsTxtSitemap, IndexXMLSitemap, PagesXMLSitemap
    from usp.tree import sitemap_tree_for_homepage

    tree = sitemap_tree_for_homepage(f"{served.site}/", use_known_paths=False)

    kinds = {sitemap.url: type(sitemap) for sitemap in tree.all_sitemaps()}
    assert kinds.pop(f"{served.site}/robots.txt") is IndexRobotsTxtSitemap
    assert kinds.pop(f"{served.site}/sitemap.xml") is IndexXMLSitemap
    assert len(kinds) >= 3  # five URLs, two per shard
    assert all(kind is PagesXMLSitemap and url.endswith(".xml.gz") for url, kind in kinds.items())

    pages = {page.url: page for page in tree.all_pages()}
    assert set(pages) == set(served.expected)
    for url, event in served.expected.items():
        page = pages[url]
        if "priority" in event:
            assert page.priority == Decimal(str(event["priority"]))
        if "lastmod" in event:
            assert page.last_modified is not None
            if len(event["lastmod"]) == 10:
                assert page.last_modified.date() == date.fromisoformat(event["lastmod"])
            else:
                assert page.last_modified == datetime.fromisoformat(event["lastmod"])
        if "changefreq" in event:
            assert page.change_frequency is not None
            assert page.change_frequency.value == event["changefreq"]


def test_serve_scrapys_sitemap_parser_finds_every_page(served: Served) -> None:
    from scrapy.utils.gz import gunzip
    from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots

    indexes = list(sitemap_urls_from_robots(served.get("/robots.txt"), base_url=served.site))
    assert indexes == [f"{served.site}/sitemap.xml"]

    index = Sitemap(served.get(urlsplit(indexes[0]).path))
    assert index.type == "sitemapindex"
    urls: list[str] = []
    for entry in index:
        assert entry["lastmod"]
        body = served.get(urlsplit(entry["loc"]).path)
        shard = Sitemap(gunzip(body) if body[:2] == b"\x1f\x8b" else body)
        assert shard.type == "urlset"
        urls += [item["loc"] for item in shard]

    assert sorted(urls) == sorted(served.expected)


def test_serve_the_files_match_the_independent_expectation(served: Served) -> None:
    found = entries(served.out, served.site)

    assert set(found) == set(served.expected)
    for url, event in served.expected.items():
        assert_fields(found[url], event)
    summary = (served.logs / "stdout").read_text(encoding="utf-8")
    assert "rejected: url_foreign_host" in summary
    assert "rejected: invalid_version" in summary


def test_serve_head_etag_and_not_found(served: Served) -> None:
    status, headers, body = served.request("GET", "/sitemap.xml")
    assert status == 200
    assert headers["Content-Type"].startswith("application/xml")
    assert headers["Cache-Control"].startswith("public, max-age=")
    assert int(headers["Content-Length"]) == len(body)
    etag = headers["ETag"]
    assert etag.startswith('"')
    assert body == (served.out / "sitemap.xml").read_bytes()

    status, head, head_body = served.request("HEAD", "/sitemap.xml")
    assert (status, head_body) == (200, b"")
    assert head["ETag"] == etag
    assert head["Content-Length"] == headers["Content-Length"]

    status, cached, cached_body = served.request("GET", "/sitemap.xml", {"If-None-Match": etag})
    assert (status, cached_body) == (304, b"")
    assert cached["ETag"] == etag
    status, _, _ = served.request("GET", "/sitemap.xml", {"If-None-Match": '"something-else"'})
    assert status == 200

    shard = urlsplit(locs(body, "sm:sitemap/sm:loc")[0]).path
    status, headers, gz = served.request("GET", shard)
    assert status == 200
    assert gz[:2] == b"\x1f\x8b"
    assert int(headers["Content-Length"]) == len(gz)

    for path in ("/nope.xml", "/", "/sitemap.xml.bak", "/../etc/passwd"):
        status, _, _ = served.request("GET", path)
        assert status == 404, path
    status, _, missing_body = served.request("HEAD", "/nope.xml")
    assert (status, missing_body) == (404, b"")
    status, _, _ = served.request("POST", "/sitemap.xml")
    assert status == 501


def test_serve_stops_by_itself_and_cleanly_on_sigint(tmp_path: Path) -> None:
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    (tmp_path / "one.json").write_text(
        json.dumps({"type": "publish", "url": f"{site}/", "version": 1})
    )
    process = start(
        "local", tmp_path / "one.json", "--site-url", site, "--out", tmp_path / "site",
        "--serve", "--port", str(port), logs=tmp_path / "logs",
    )  # fmt: skip
    try:
        wait_until_served(process, port, tmp_path / "logs")
        process.send_signal(signal.SIGINT)
        # It exits by itself on the one SIGINT (stop() would send another, then kill): the
        # timeout only keeps a hung process from hanging the run, it measures nothing.
        code = process.wait(timeout=RUN_TIMEOUT)
    finally:
        stop(process)

    assert code == 0
    stderr = (tmp_path / "logs" / "stderr").read_text(encoding="utf-8")
    assert "Traceback" not in stderr
    assert f"serving {site}" in stderr
    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(("127.0.0.1", port))
