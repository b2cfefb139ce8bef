"""AWS clients from botocore, without boto3.

boto3 adds nothing the adapters use (no resources, no managed transfers) and its import
loads s3transfer, about a third of a cold start (bench/coldstart.py). botocore's clients
are the same clients, and they honour the same configuration (AWS_ENDPOINT_URL included).

Every client comes from one botocore session, made on first use: a session loads the
endpoint rules, partitions and service models once and its clients share them. A fresh
session per client loaded them again for each, which cost a cold start about 150 ms per
client (bench/coldstart.py, "first use").
"""

from __future__ import annotations

from functools import cache
from typing import Any

from botocore.config import Config
from botocore.session import Session, get_session


@cache
def session() -> Session:
    """The one botocore session (credentials, region and endpoint from the environment, as
    boto3's would be). Not thread-safe, as no botocore session is: a function builds its
    clients on one thread; the operator commands pass their own boto3 session."""
    return get_session()


def client(service: str, *, endpoint_url: str | None = None, config: Config | None = None) -> Any:
    """A client for ``service`` from the shared session."""
    return session().create_client(service, endpoint_url=endpoint_url, config=config)
