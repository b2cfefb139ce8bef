"""Find a deployment from its stack's outputs (``--stack``), or flags, or both (flags win)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import boto3
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from sitemap_updater.domain.sharding import Limits
from sitemap_updater.domain.urls import Site
from sitemap_updater.local.stack import REGION as LOCAL_REGION
from sitemap_updater.ops.errors import UserError, error_code, log_to_stderr
from sitemap_updater.ops.flags import RESOURCE_FLAGS, setting_pairs
from sitemap_updater.resources import (
    INDEXNOW,
    QUEUE_OUTPUTS,
    QUEUE_SETTINGS,
    functions_for,
    output_key,
)
from sitemap_updater.settings import Settings, problems

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from sitemap_updater.bootstrap import App

_FLAG_FOR_OUTPUT = {output: flag for flag, (output, _) in RESOURCE_FLAGS.items()}
# Each function's (queue, dead-letter queue) -> the stack output naming it: the settings that
# name queues and the operators' own outputs.
_QUEUE_OUTPUTS = {target: output_key(name) for name, target in QUEUE_SETTINGS.items()} | {
    target: output for output, target in QUEUE_OUTPUTS.items()
}


@dataclass
class Deployment:
    outputs: dict[str, str]
    session: boto3.session.Session
    endpoint_url: str | None = None
    stack: str | None = None
    _clients: dict[str, Any] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        from sitemap_updater.bootstrap import CLIENT_CONFIG  # noqa: PLC0415 - see resolve()

        if service not in self._clients:
            self._clients[service] = self.session.client(
                service,  # type: ignore[call-overload]
                endpoint_url=self.endpoint_url,
                config=CLIENT_CONFIG,
            )
        return self._clients[service]

    @property
    def sqs(self) -> SQSClient:
        client: SQSClient = self.client("sqs")
        return client

    def value(self, output: str) -> str:
        if found := self.outputs.get(output):
            return found
        flag = _FLAG_FOR_OUTPUT.get(output)
        source = f"stack {self.stack!r} has no output {output}" if self.stack else "no --stack"
        hint = f"give {flag} or --stack" if flag else "give --stack"
        raise UserError(f"{output} is unknown ({source}): {hint}")

    @cached_property
    def settings(self) -> Settings:
        names = (name for name in Settings.env_names() if self.outputs.get(output_key(name)))
        try:
            return Settings.model_validate({name: self.outputs[output_key(name)] for name in names})
        except ValidationError as exc:
            raise UserError(f"cannot describe the deployment: {problems(exc, _source)}") from exc

    @property
    def site(self) -> Site:
        """The site alone (a dry run needs no table, bucket or queues)."""
        try:
            return Site.parse(self.value("SiteUrl"))
        except ValueError as exc:
            raise UserError(f"SiteUrl: {exc}") from exc

    @property
    def limits(self) -> Limits:
        """The limits alone: the outputs' values, else the settings' defaults."""
        values = {}
        for name in ("max_urls_per_shard", "max_shard_bytes", "max_sitemaps_per_index"):
            alias = Settings.model_fields[name].alias or name
            given = self.outputs.get(output_key(alias))
            try:
                values[name] = int(given) if given else Settings.model_fields[name].default
            except ValueError as exc:
                raise UserError(f"{alias}: not a whole number: {given!r}") from exc
        try:
            return Limits(**values)
        except ValueError as exc:
            raise UserError(str(exc)) from exc

    @cached_property
    def app(self) -> App:
        from sitemap_updater.bootstrap import build_app  # noqa: PLC0415 - see resolve()

        return build_app(self.settings, self.session, endpoint_url=self.endpoint_url)

    def queues(self) -> dict[str, tuple[str | None, str | None]]:
        """Each function's queue and dead-letter queue URLs (None: unknown)."""
        found = {target: self.outputs.get(output) for target, output in _QUEUE_OUTPUTS.items()}
        indexnow = bool(found.get((INDEXNOW.name, False)))  # "" or absent: IndexNow is off
        return {
            spec.name: (found.get((spec.name, False)), found.get((spec.name, True)))
            for spec in functions_for(indexnow)
        }

    def read_stack(self, stack: str) -> None:
        try:
            stacks = self.client("cloudformation").describe_stacks(StackName=stack)["Stacks"]
        except ClientError as exc:
            if "does not exist" not in error_code(exc)[1]:
                raise
            region = self.session.region_name or "the default region"
            local = f" (a local stack is in {LOCAL_REGION})" if is_local(self.endpoint_url) else ""
            raise UserError(f"stack {stack!r} not found in {region}{local}") from exc
        for output in stacks[0].get("Outputs", []):
            if "OutputKey" in output and "OutputValue" in output:
                self.outputs[output["OutputKey"]] = output["OutputValue"]


def _source(name: str) -> str:
    """Where a setting comes from: its stack output, and the flag that gives it."""
    output = output_key(name)
    return f"{output} ({_FLAG_FOR_OUTPUT.get(output, f'--setting {name}=...')})"


def is_local(endpoint_url: str | None) -> bool:
    if not endpoint_url:
        return False
    with_scheme = endpoint_url if "//" in endpoint_url else f"//{endpoint_url}"  # host:port
    return urlsplit(with_scheme).hostname in {"127.0.0.1", "localhost", "::1"}


def session_for(
    profile: str | None, region: str | None, endpoint_url: str | None
) -> boto3.session.Session:
    """A session; on a loopback endpoint (a local stack) no real credentials are needed."""
    try:
        session = boto3.session.Session(profile_name=profile, region_name=region)
    except BotoCoreError as exc:  # ProfileNotFound and friends
        raise UserError(str(exc)) from exc
    if not is_local(endpoint_url):
        return session
    credentials = session.get_credentials()
    if credentials is not None and session.region_name is not None:
        return session
    frozen = credentials.get_frozen_credentials() if credentials is not None else None
    return boto3.session.Session(
        aws_access_key_id=frozen.access_key if frozen else "local",
        aws_secret_access_key=frozen.secret_key if frozen else "local",
        aws_session_token=frozen.token if frozen else None,
        region_name=session.region_name or LOCAL_REGION,
    )


def resolve(args: argparse.Namespace) -> Deployment:
    # The use cases log and count for Lambda: here they log from WARNING up, and commands
    # drop their metrics (Powertools prints every 100 values). Bootstrap comes after this.
    log_to_stderr("WARNING")
    session = session_for(args.profile, args.region, args.endpoint_url)
    deployment = Deployment({}, session, endpoint_url=args.endpoint_url, stack=args.stack)
    if args.stack:
        deployment.read_stack(args.stack)
    for flag, (output, _) in RESOURCE_FLAGS.items():
        if value := getattr(args, flag[2:].replace("-", "_"), None):  # argparse's dest
            deployment.outputs[output] = value
    for name, value in setting_pairs(args.setting).items():
        deployment.outputs[output_key(name)] = value
    if not deployment.outputs:
        raise UserError("no deployment given: pass --stack NAME, or the resource flags")
    return deployment
