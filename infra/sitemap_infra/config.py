"""Deployment configuration from CDK context (``cdk deploy -c site_url=... -c ...``), validated
at synth with messages that name the context key. A function setting's key is the settings
model's field name, validated by that model: the stack never accepts a value the functions
would reject at cold start.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from sitemap_updater import connectors
from sitemap_updater.resources import FUNCTIONS, INDEXNOW, RESOURCE_SETTINGS
from sitemap_updater.settings import Settings, problems

SETTING_KEYS = tuple(name for name in Settings.model_fields if name not in RESOURCE_SETTINGS)
INFRA_KEYS = (
    "domain_name",
    "certificate_arn",
    "alarm_topic_arn",
    "alarm_email",
    "stack_name",
    "connectors",
)
# ``rebuild_max_concurrency=10``: an event source mapping's MaximumConcurrency (Lambda: 2-1000).
CONCURRENCY_KEYS = {f"{spec.name}_max_concurrency": spec.name for spec in (*FUNCTIONS, INDEXNOW)}
DEFAULT_STACK_NAME = "SitemapUpdater"

_PLACEHOLDER = "resolved-at-deploy"
MAX_CONNECTORS_BYTES = 2048
# Context key -> its format, and what the message says of a value that is not in it.
_FORMATS = {
    "certificate_arn": (
        re.compile(r"arn:aws[a-z-]*:acm:us-east-1:\d{12}:certificate/[0-9a-f-]{36}"),
        " is not an ACM certificate ARN in us-east-1 (CloudFront only uses certificates from "
        "us-east-1)",
    ),
    "alarm_topic_arn": (
        re.compile(r"arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]{1,256}"),
        " is not an SNS topic ARN",
    ),
    "alarm_email": (re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+"), " is not an e-mail address"),
    "stack_name": (
        re.compile(r"[A-Za-z][A-Za-z0-9-]{0,127}"),
        ": letters, digits and hyphens, starting with a letter, at most 128",
    ),
}
_HOST = re.compile(r"(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}")


class ConfigError(ValueError):
    """The context does not describe a deployable configuration."""


def validated_settings(values: Mapping[str, Any]) -> Settings:
    """The function settings for ``values`` (by field name), validated by the settings model,
    with placeholders for the resource names the stack fills in."""
    unknown = sorted(set(values) - set(SETTING_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(SETTING_KEYS)}"
        )
    placeholders = {name: _PLACEHOLDER for name in RESOURCE_SETTINGS}
    try:
        return Settings.model_validate({**placeholders, **values})
    except ValidationError as exc:
        found = problems(exc, lambda name: f"{name.lower()}={values.get(name.lower())!r}")
        raise ConfigError(f"invalid configuration: {found}") from exc


@dataclass(frozen=True)
class DeployConfig:
    """Everything ``cdk deploy`` needs to know, validated."""

    settings: dict[str, Any]  # the setting keys given in context (validated)
    domain_name: str | None = None
    certificate_arn: str | None = None
    alarm_topic_arn: str | None = None
    alarm_email: str | None = None
    stack_name: str = DEFAULT_STACK_NAME
    connectors: str | None = None  # the connectors file (docs/CONNECTORS.md): a webhook endpoint
    max_concurrency: dict[str, int] = field(default_factory=dict)  # function name -> value
    resolved: Settings = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if "site_url" not in self.settings:
            raise ConfigError(
                "site_url is required, e.g. cdk synth -c site_url=https://www.example.com"
            )
        object.__setattr__(self, "resolved", validated_settings(self.settings))
        object.__setattr__(self, "max_concurrency", validated_concurrency(self.max_concurrency))
        if (self.domain_name is None) != (self.certificate_arn is None):
            raise ConfigError("domain_name and certificate_arn go together: give both or neither")
        if self.domain_name is not None:
            host = urlsplit(self.resolved.site_url).hostname
            if not _HOST.fullmatch(self.domain_name) or self.domain_name != host:
                raise ConfigError(
                    f"domain_name={self.domain_name!r} must be the site's host ({host!r}): "
                    "the index names every shard under site_url"
                )
        if self.connectors is not None:
            deployed_connectors(self.connectors)  # fails the synth, naming the file
        for key, (pattern, problem) in _FORMATS.items():
            value = getattr(self, key)
            if value is not None and not pattern.fullmatch(value):
                raise ConfigError(f"{key}={value!r}{problem}")


def read_context(context: Mapping[str, Any]) -> DeployConfig:
    """The deployment described by CDK context. Keys that are not identifiers are CDK's own
    (feature flags, lookups); any other must be ours: a misspelt ``-c`` fails the synth."""
    ours = {key: value for key, value in context.items() if key.isidentifier()}
    known = (*SETTING_KEYS, *INFRA_KEYS, *CONCURRENCY_KEYS)
    unknown = sorted(set(ours) - set(known))
    if unknown:
        raise ConfigError(f"unknown context key(s) {', '.join(unknown)}; known: {', '.join(known)}")
    given = {key: value for key, value in ours.items() if value is not None and value != ""}
    infra = {key: _text(key, given[key]) for key in INFRA_KEYS if key in given}
    settings = {key: given[key] for key in SETTING_KEYS if key in given}
    concurrency = {name: given[key] for key, name in CONCURRENCY_KEYS.items() if key in given}
    return DeployConfig(settings=settings, max_concurrency=concurrency, **infra)


def validated_concurrency(values: Mapping[str, Any]) -> dict[str, int]:
    """Function name -> its event source mapping's maximum concurrency, as Lambda takes it."""
    names = set(CONCURRENCY_KEYS.values())
    if set(values) - names:
        raise ConfigError(f"max_concurrency: unknown function(s) {sorted(set(values) - names)}")
    result = {}
    for name, value in values.items():
        try:  # "10" from -c, 10 from cdk.json; never 2.5 or true
            number = int(str(value).strip())
        except ValueError:
            number = 0
        if number not in range(2, 1001):
            raise ConfigError(f"{name}_max_concurrency={value!r}: a whole number from 2 to 1000")
        result[name] = number
    return result


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, got {value!r}")
    return value.strip()


def deployed_connectors(path: str) -> dict[str, Any]:
    """The connectors file as the endpoint receives it (the ``CONNECTORS`` setting): secrets
    by Secrets Manager or SSM ARN only; the local runtime's secrets in clear are left out."""
    try:
        document = connectors.read(path)
    except connectors.ConfigError as exc:
        raise ConfigError(f"connectors: {exc}") from exc
    entries = [
        {key: value for key, value in entry.items() if key not in ("secret", "secrets")}
        for entry in document.get("connector", [])
    ]
    for entry in entries:
        if "secret_arn" not in entry and entry["cms"] != "shopify":
            raise ConfigError(
                f"connectors: {path}: connector {entry['name']!r} needs secret_arn to be deployed "
                "(its secrets in clear are the local runtime's only)"
            )
    if not entries:
        raise ConfigError(f"connectors: {path} names no connector")
    size = len(json.dumps({"connector": entries}))
    if size > MAX_CONNECTORS_BYTES:
        raise ConfigError(
            f"connectors: {path} is {size:,} bytes as JSON; the function's environment holds "
            f"it with the settings, within Lambda's 4 KB: at most {MAX_CONNECTORS_BYTES:,}"
        )
    return {"connector": entries}
