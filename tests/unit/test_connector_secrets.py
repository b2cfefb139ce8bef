"""Connector secrets: read from Secrets Manager or SSM by ARN, kept for a while, two while
rotating; a failure to read is retryable (the endpoint answers 503, the CMS retries)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from sitemap_updater.adapters.secrets import ConnectorSecrets
from sitemap_updater.connectors import Connector
from sitemap_updater.domain.errors import RetryableError

SM_ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sitemap/ghost-AbCdEf"
SSM_ARN = "arn:aws:ssm:eu-west-1:123456789012:parameter/sitemap/strapi"


class Clients:
    def __init__(self) -> None:
        self.value = '["new-secret", "old-secret"]'
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail = False

    def __call__(self, service: str) -> Clients:
        self.service = service
        return self

    def get_secret_value(self, **params: Any) -> dict[str, Any]:
        return self._answer({"SecretString": self.value}, params)

    def get_parameter(self, **params: Any) -> dict[str, Any]:
        return self._answer({"Parameter": {"Value": self.value}}, params)

    def _answer(self, answer: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((self.service, params))
        if self.fail:
            raise ClientError({"Error": {"Code": "ThrottlingException"}}, "Get")
        return answer


@pytest.fixture
def clients() -> Clients:
    return Clients()


def test_a_secrets_manager_secret_is_read_once_per_period(clients: Clients) -> None:
    now = [0.0]
    secrets = ConnectorSecrets(clients, lambda: now[0])
    ghost = Connector("ghost", "ghost", secret_arn=SM_ARN)

    assert secrets.values(ghost) == ("new-secret", "old-secret")
    now[0] = 299
    clients.value = "newest"
    assert secrets.values(ghost) == ("new-secret", "old-secret")
    now[0] = 300
    assert secrets.values(ghost) == ("newest",)
    assert clients.calls == [("secretsmanager", {"SecretId": SM_ARN})] * 2


def test_an_ssm_parameter_is_read_decrypted_by_its_name(clients: Clients) -> None:
    secrets = ConnectorSecrets(clients, lambda: 0.0)
    assert secrets.values(Connector("s", "strapi", secret_arn=SSM_ARN)) == (
        "new-secret",
        "old-secret",
    )
    assert clients.calls == [("ssm", {"Name": "/sitemap/strapi", "WithDecryption": True})]


def test_secrets_in_clear_are_the_local_runtimes_and_need_no_call(clients: Clients) -> None:
    secrets = ConnectorSecrets(clients, lambda: 0.0)
    local = Connector("n", "native", secrets=("local",), secret_arn=SM_ARN)
    assert secrets.values(local) == ("local",)
    assert clients.calls == []


def test_a_failed_read_is_retryable(clients: Clients) -> None:
    clients.fail = True
    secrets = ConnectorSecrets(clients, lambda: 0.0)
    with pytest.raises(RetryableError, match="ThrottlingException"):
        secrets.values(Connector("ghost", "ghost", secret_arn=SM_ARN))
