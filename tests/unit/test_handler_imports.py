"""Each function loads its own use case at init, and not the other functions' (what a cold
start costs: bench/coldstart.py measures it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

USE_CASES = {
    "ingest": "sitemap_updater.usecases.ingest",
    "rebuild": "sitemap_updater.usecases.rebuild",
    "index": "sitemap_updater.usecases.publish_index",
    "indexnow": "sitemap_updater.usecases.indexnow",
    "webhook": "sitemap_updater.usecases.webhook",
}


def loaded_by(module: str) -> set[str]:
    """The project's modules a fresh interpreter holds after importing ``module``."""
    code = (
        f"import json, sys; import {module}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('sitemap_updater'))))"
    )
    environment = {
        **os.environ,
        "POWERTOOLS_SERVICE_NAME": "sitemap-updater",
        "POWERTOOLS_METRICS_NAMESPACE": "SitemapUpdater",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environment
    )
    return set(json.loads(result.stdout))


@pytest.mark.parametrize("function", sorted(USE_CASES))
def test_a_handler_module_loads_its_own_use_case_and_no_other(function: str) -> None:
    loaded = loaded_by(f"sitemap_updater.handlers.{function}")
    assert USE_CASES[function] in loaded
    others = {use_case for name, use_case in USE_CASES.items() if name != function}
    assert others & loaded == set()
    if function != "ingest":  # only ingest validates events with the pydantic event models
        assert "sitemap_updater.domain.events" not in loaded
    if function != "webhook":  # only the endpoint reads CMS payloads
        assert "sitemap_updater.connectors" not in loaded
