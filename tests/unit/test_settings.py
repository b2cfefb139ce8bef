from __future__ import annotations

import pytest

from sitemap_updater.settings import Settings, SettingsError

BASE = {
    "SITE_URL": "https://www.example.com",
    "TABLE_NAME": "registry",
    "BUCKET_NAME": "bucket",
    "REBUILD_QUEUE_URL": "https://sqs/rebuild.fifo",
    "INDEX_QUEUE_URL": "https://sqs/index.fifo",
    "INGEST_DLQ_URL": "https://sqs/ingest-dlq",
}


def test_invalidation_is_off_by_default_and_round_trips_through_the_environment() -> None:
    settings = Settings.from_env(BASE)
    assert settings.invalidate_paths is False
    assert settings.distribution_id == ""
    env = settings.to_env()
    assert env["INVALIDATE_PATHS"] == "false"
    assert env["DISTRIBUTION_ID"] == ""
    assert set(env) == Settings.env_names()
    assert Settings.from_env(env) == settings


def test_invalidation_needs_a_distribution() -> None:
    with pytest.raises(SettingsError, match="DISTRIBUTION_ID"):
        Settings.from_env({**BASE, "INVALIDATE_PATHS": "true"})
    on = Settings.from_env({**BASE, "INVALIDATE_PATHS": "true", "DISTRIBUTION_ID": "E2ABC"})
    assert on.invalidate_paths
