"""docs/CONNECTORS.md: every ``curl`` it gives, run by bash with ``openssl``, sends a request
that its connector accepts and maps to events. Skipped without bash or openssl."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sitemap_updater import connectors
from tests.unit.test_connectors_signing import CONNECTORS, REPO, SECRET

DOC = REPO / "docs" / "CONNECTORS.md"
BLOCKS = re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
CURLS = {
    match.group(1): block
    for block in BLOCKS
    if (match := re.search(r"curl -sS http://127\.0\.0\.1:8000/hooks/([a-z-]+)", block))
}
# Instead of sending, curl writes its arguments down, one per NUL-terminated record.
RECORD = 'curl() { printf "%s\\0" "$@" > "$ARGUMENTS"; }\n'
assert shutil.which("bash"), "bash runs the documented commands"
assert shutil.which("openssl"), "openssl signs the documented samples"


def test_every_http_connector_has_its_curl() -> None:
    assert sorted(CURLS) == sorted(set(CONNECTORS) - {"shopify"})


@pytest.mark.parametrize("name", sorted(CURLS))
def test_the_documented_curl_sends_a_request_its_connector_accepts(
    name: str, tmp_path: Path
) -> None:
    arguments = tmp_path / "arguments"
    subprocess.run(
        ["bash", "-euo", "pipefail", "-c", RECORD + CURLS[name]],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "ARGUMENTS": str(arguments)},
        check=True,
        timeout=60,
    )
    argv = arguments.read_bytes().split(b"\0")[:-1]
    headers = [argv[i + 1].decode().split(": ", 1) for i, a in enumerate(argv) if a == b"-H"]
    body = argv[argv.index(b"--data-binary") + 1]
    request = connectors.request(
        "POST", f"/hooks/{name}", [(k, v) for k, v in headers], body, time.time()
    )

    assert connectors.verify(CONNECTORS[name], request, [SECRET]).reason is None
    result = connectors.map_request(CONNECTORS[name], request)
    assert result.events
    assert result.refusals == ()


def test_the_documented_shopify_command_maps_its_sample() -> None:
    (block,) = [b for b in BLOCKS if "map_event" in b]
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.replace("python -c", f"{sys.executable} -c")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )

    assert "'type': 'publish'" in done.stdout
    assert "stoneware-plate" in done.stdout
