"""Connector secrets from Secrets Manager or SSM Parameter Store (SecureString), read on
first use and kept for ``MAX_AGE_SECONDS``, so that a rotation reaches every warm function
within that time while both secrets are active (docs/CONNECTORS.md, Rotating a secret)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from sitemap_updater.connectors import Connector, parse_secret_string
from sitemap_updater.domain.errors import RetryableError

MAX_AGE_SECONDS = 300


@dataclass
class ConnectorSecrets:
    """``client_for(service)``: the ``secretsmanager`` or ``ssm`` client, built on first use."""

    client_for: Callable[[str], Any]
    clock: Callable[[], float]
    _read: dict[str, tuple[float, tuple[str, ...]]] = field(default_factory=dict, repr=False)

    def values(self, connector: Connector) -> tuple[str, ...]:
        """The active secrets (the local runtime's are in the file, in clear)."""
        arn = connector.secret_arn
        if connector.secrets or arn is None:
            return connector.secrets
        now = self.clock()
        read_at, values = self._read.get(arn, (float("-inf"), ()))
        if now - read_at >= MAX_AGE_SECONDS:
            values = parse_secret_string(self._fetch(arn))
            self._read[arn] = (now, values)
        return values

    def _fetch(self, arn: str) -> str:
        try:
            if arn.split(":")[2] == "ssm":
                name = arn.split(":parameter", 1)[1]
                found = self.client_for("ssm").get_parameter(Name=name, WithDecryption=True)
                return str(found["Parameter"]["Value"])
            found = self.client_for("secretsmanager").get_secret_value(SecretId=arn)
            return str(found["SecretString"])
        except (ClientError, BotoCoreError) as exc:
            raise RetryableError(f"cannot read {arn}: {exc}") from exc
