"""AWS clients from botocore, without boto3, all from one session.

boto3 adds nothing the adapters use, and its import loads s3transfer, about a third of a
cold start (bench/coldstart.py). botocore's clients are the same clients and honour the same
configuration (AWS_ENDPOINT_URL included). One session loads the endpoint rules,
partitions and service models once, for all its clients (about 150 ms a client otherwise).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from botocore.config import Config
from botocore.session import Session, get_session


@cache
def session() -> Session:
    """Not thread-safe, as no botocore session is: a function builds its clients on one
    thread (bootstrap.App's lock); the operator commands pass their own boto3 session."""
    return get_session()


def client(service: str, *, endpoint_url: str | None = None, config: Config | None = None) -> Any:
    return session().create_client(service, endpoint_url=endpoint_url, config=config)
