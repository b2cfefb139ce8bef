"""AWS clients from botocore, all from one session: importing boto3 (s3transfer) costs a
third of a cold start (bench/coldstart.py), and one session loads the endpoint rules and
service models once for all its clients (about 150 ms a client otherwise)."""

from __future__ import annotations

from functools import cache
from typing import Any

from botocore.config import Config
from botocore.session import Session, get_session


@cache
def session() -> Session:
    """Not thread-safe: a function builds its clients on one thread (bootstrap.App's lock)."""
    return get_session()


def client(service: str, *, endpoint_url: str | None = None, config: Config | None = None) -> Any:
    return session().create_client(service, endpoint_url=endpoint_url, config=config)
