"""AWS clients from botocore, without boto3.

boto3 adds nothing the adapters use (no resources, no managed transfers) and its import
loads s3transfer, about a third of a cold start (bench/coldstart.py). botocore's clients
are the same clients, and they honour the same configuration (AWS_ENDPOINT_URL included).
"""

from __future__ import annotations

from typing import Any

from botocore.config import Config
from botocore.session import get_session


def client(service: str, *, endpoint_url: str | None = None, config: Config | None = None) -> Any:
    """A client for ``service`` from a fresh botocore session (credentials, region and
    endpoint from the environment, as boto3's would be)."""
    return get_session().create_client(service, endpoint_url=endpoint_url, config=config)
