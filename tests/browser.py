"""Headless Chromium (Debian's ``chromium``, installed by scripts/system-deps): load a URL the
way a person would and return the DOM after the browser has rendered it.

``--dump-dom`` serialises the document once it has loaded: for an XML document that
references an XSL stylesheet, that is the HTML the stylesheet produced (checked on
Chromium 156). The flags keep it offline and cheap (no sync, no component updates, no
QUIC, a throw-away profile); ``--no-sandbox`` because CI runs the tests as root.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from typing import Any

import pytest
from lxml import html

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
TIMEOUT_SECONDS = 60


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail("chromium is not installed: run scripts/system-deps (make pytest does)")
    return found


def dump_dom(url: str, *flags: str) -> str:
    """The rendered page at ``url`` as HTML text (``flags``: more Chromium switches)."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        done = subprocess.run(
            [chromium(), *FLAGS, *flags, f"--user-data-dir={profile}", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    if done.returncode != 0 or not done.stdout.strip():
        pytest.fail(f"chromium failed on {url} ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def rendered(url: str, *flags: str) -> Any:
    """The rendered page at ``url``, parsed (lxml.html)."""
    return html.fromstring(dump_dom(url, *flags))
