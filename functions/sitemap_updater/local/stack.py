"""The embedded stack: moto's server on 127.0.0.1 holding the resources ``infra/`` deploys
(from :mod:`sitemap_updater.resources`), reached through boto3's ``AWS_ENDPOINT_URL``."""

from __future__ import annotations

import json
import logging
import os
import socket
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import boto3

from sitemap_updater.local.tuning import tune_moto
from sitemap_updater.resources import (
    DLQ_RETENTION_DAYS,
    MAX_MESSAGE_BYTES,
    QUEUE_OUTPUTS,
    QUEUE_RETENTION_DAYS,
    QUEUE_SETTINGS,
    TABLE,
    FunctionSpec,
    functions_for,
    output_key,
    queue_urls,
)
from sitemap_updater.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

REGION = "us-east-1"
LOCAL_PREFIX = "sitemap-updater-local"
LOCAL_STACK_NAME = LOCAL_PREFIX  # the CloudFormation stack the operator commands resolve
# The settings create_resources fills in: the local stack's own resources.
STACK_SETTINGS = frozenset(
    name.upper() for name in ("site_url", "table_name", "bucket_name", *QUEUE_SETTINGS)
)


@dataclass
class LocalQueue:
    spec: FunctionSpec
    url: str
    arn: str
    dlq_url: str


@dataclass
class LocalStack:
    settings: Settings
    queues: dict[str, LocalQueue]


class MotoServer:
    """moto's threaded server on 127.0.0.1 (a free port unless one is given)."""

    def __init__(self, port: int = 0):
        from moto.server import ThreadedMotoServer  # noqa: PLC0415 - only the local extra has it

        self._port = port
        self.url: str | None = None  # once started
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log per request

    def start(self) -> str:
        """Start the server; OSError when its port cannot be had (tried first, as the server
        binds it: moto binds on a thread of its own and would wait for a busy port for ever)."""
        if self._port:
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", self._port))
                except (OSError, OverflowError) as exc:
                    reason = getattr(exc, "strerror", None) or exc
                    raise OSError(
                        f"cannot start moto's server on 127.0.0.1:{self._port} "
                        f"(--moto-port): {reason}"
                    ) from exc
        tune_moto()
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.url = f"http://{host}:{port}"
        return self.url

    def stop(self) -> None:
        if self.url:  # moto's stop() fails on a server that never started
            self.url = None
            self._server.stop()


def create_resources(
    site_url: str,
    settings_overrides: dict[str, Any] | None = None,
    visibility_timeout: int | None = None,
    session: boto3.session.Session | None = None,
    prefix: str = LOCAL_PREFIX,
) -> LocalStack:
    """The table, bucket and queues (IndexNow's with INDEXNOW_KEY) wherever boto3 points, as
    deployed but for ``visibility_timeout``: a failed message comes back in seconds."""
    session = session or boto3.session.Session(region_name=REGION)
    overrides = settings_overrides or {}
    table = _create_table(session.client("dynamodb"), f"{prefix}-registry")
    bucket = f"{prefix}-site"
    session.client("s3").create_bucket(Bucket=bucket)
    sqs = session.client("sqs")
    specs = functions_for(bool(overrides.get("INDEXNOW_KEY") or overrides.get("indexnow_key")))
    queues = {spec.name: _create_queue(sqs, prefix, spec, visibility_timeout) for spec in specs}
    resources = {"site_url": site_url, "table_name": table, "bucket_name": bucket}
    queue_settings = queue_urls(QUEUE_SETTINGS, _urls(queues))
    settings = Settings.model_validate(resources | queue_settings | overrides)
    return LocalStack(settings=settings, queues=queues)


def _create_queue(
    sqs: SQSClient, prefix: str, spec: FunctionSpec, visibility_timeout: int | None
) -> LocalQueue:
    fifo = ".fifo" if spec.fifo else ""
    shared: dict[Any, str] = {"MaximumMessageSize": str(MAX_MESSAGE_BYTES)}
    if spec.fifo:
        shared["FifoQueue"] = "true"
    dlq_url = _new_queue(sqs, f"{prefix}-{spec.name}-dlq{fifo}", shared, DLQ_RETENTION_DAYS)
    timeout = spec.visibility_timeout_seconds if visibility_timeout is None else visibility_timeout
    arn = _queue_arn(sqs, dlq_url)
    redrive = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": spec.max_receive_count})
    attributes = shared | {"VisibilityTimeout": str(timeout), "RedrivePolicy": redrive}
    if spec.content_based_deduplication:
        attributes["ContentBasedDeduplication"] = "true"
    url = _new_queue(sqs, f"{prefix}-{spec.name}{fifo}", attributes, QUEUE_RETENTION_DAYS)
    return LocalQueue(spec=spec, url=url, arn=_queue_arn(sqs, url), dlq_url=dlq_url)


def _new_queue(sqs: SQSClient, name: str, attributes: dict[Any, str], retention_days: int) -> str:
    retention = {"MessageRetentionPeriod": str(retention_days * 86_400)}
    return sqs.create_queue(QueueName=name, Attributes=attributes | retention)["QueueUrl"]


def _queue_arn(sqs: SQSClient, url: str) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return attributes["Attributes"]["QueueArn"]


def _create_table(dynamodb: DynamoDBClient, name: str) -> str:
    keys: dict[str, Literal["HASH", "RANGE"]] = {
        TABLE.partition_key: "HASH",
        TABLE.sort_key: "RANGE",
    }
    index: Any = {
        "IndexName": TABLE.shard_index,
        "KeySchema": [{"AttributeName": TABLE.shard_attribute, "KeyType": "HASH"}],
        "Projection": {
            "ProjectionType": "INCLUDE",
            "NonKeyAttributes": list(TABLE.shard_index_attributes),
        },
    }
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": key, "AttributeType": "S"} for key in (*keys, TABLE.shard_attribute)
        ],
        KeySchema=[{"AttributeName": key, "KeyType": kind} for key, kind in keys.items()],
        GlobalSecondaryIndexes=[index],
    )
    dynamodb.update_time_to_live(
        TableName=name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TABLE.ttl_attribute},
    )
    return name


def _urls(queues: dict[str, LocalQueue]) -> dict[str, tuple[str, str]]:
    return {name: (queue.url, queue.dlq_url) for name, queue in queues.items()}


def use_endpoint(endpoint_url: str) -> None:
    """Point every boto3 client this process creates at the local server, never at AWS."""
    os.environ.pop("AWS_PROFILE", None)
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": endpoint_url,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
        }
    )


def stack_outputs(stack: LocalStack) -> dict[str, str]:
    """The outputs the deployed stack has: every settings variable, and the operator ones."""
    outputs = {output_key(name): value for name, value in stack.settings.to_env().items()}
    return outputs | queue_urls(QUEUE_OUTPUTS, _urls(stack.queues))


def register_stack(stack: LocalStack, name: str = LOCAL_STACK_NAME) -> None:
    """A CloudFormation stack whose outputs name the local resources, so that the operator
    commands' ``--stack NAME --endpoint-url ...`` resolve them as a deployment's."""
    template = {
        "Description": "sitemap-updater local runtime: outputs only",
        "Resources": {"Placeholder": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {key: {"Value": value} for key, value in stack_outputs(stack).items()},
    }
    cloudformation = boto3.session.Session(region_name=REGION).client("cloudformation")
    with warnings.catch_warnings():  # moto: "WaitConditionHandle ... not supported"
        warnings.simplefilter("ignore", UserWarning)
        cloudformation.create_stack(StackName=name, TemplateBody=json.dumps(template))
