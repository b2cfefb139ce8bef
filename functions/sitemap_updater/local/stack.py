"""The embedded stack: moto's server on 127.0.0.1 holding the resources the CDK stack creates.

The table, bucket and queues come from :mod:`sitemap_updater.resources`, the same values
``infra/`` deploys. Everything talks to it through boto3 with ``AWS_ENDPOINT_URL`` set, so
the handlers and the CLI run here exactly as they run against AWS.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import os
import socket
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import boto3

from sitemap_updater.resources import (
    DLQ_RETENTION_DAYS,
    MAX_MESSAGE_BYTES,
    METRICS_NAMESPACE,
    QUEUE_RETENTION_DAYS,
    SERVICE_NAME,
    TABLE,
    FunctionSpec,
    functions_for,
    output_key,
)
from sitemap_updater.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

REGION = "us-east-1"
LOCAL_PREFIX = "sitemap-updater-local"
LOCAL_STACK_NAME = LOCAL_PREFIX  # the CloudFormation stack the operator commands resolve
# Settings and stack outputs that name a queue: (function, "url" or "dlq_url").
QUEUE_SETTINGS = {
    "REBUILD_QUEUE_URL": ("rebuild", "url"),
    "INDEX_QUEUE_URL": ("index", "url"),
    "INGEST_QUEUE_URL": ("ingest", "url"),
    "INGEST_DLQ_URL": ("ingest", "dlq_url"),
    "INDEXNOW_QUEUE_URL": ("indexnow", "url"),
    "INDEXNOW_DLQ_URL": ("indexnow", "dlq_url"),
}
OPERATOR_OUTPUTS = {
    "IngestQueueUrl": ("ingest", "url"),
    "RebuildDeadLetterQueueUrl": ("rebuild", "dlq_url"),
    "IndexDeadLetterQueueUrl": ("index", "dlq_url"),
}
# The settings create_resources fills in: the local stack's own resources.
STACK_SETTINGS = frozenset({"SITE_URL", "TABLE_NAME", "BUCKET_NAME", *QUEUE_SETTINGS})


@dataclass
class LocalQueue:
    spec: FunctionSpec
    url: str
    arn: str
    dlq_url: str


@dataclass
class LocalStack:
    settings: Settings
    queues: dict[str, LocalQueue] = field(default_factory=dict)


def release_moto_history() -> None:
    """Let go of every model instance moto keeps for its dashboard. moto tracks each one it
    ever made, and a DynamoDB transaction deep-copies the table each time: over a long
    ``local --serve`` (a backfill into it, say) that is gigabytes. Nothing here uses the
    dashboard; the data itself is untouched."""
    from moto.core.model_instances import reset_model_data  # noqa: PLC0415 - the local extra

    reset_model_data()


def tune_moto() -> None:
    """Make moto keep up with a real site's stream, and keep every accepted event, under
    concurrent requests (its server answers each on a thread of its own). Idempotent; for
    this process's moto only.

    * DynamoDB: before each TransactWriteItems moto deep-copies every table it names, to
      roll back on failure: O(registry) per event, and torn by a concurrent write (the copy
      fails with "dictionary changed size", or a rollback to it undoes another request's
      commit, leaving a live URL record without its entry). Here every DynamoDB request
      runs under one lock, as DynamoDB isolates a transaction, and a transaction keeps only
      the items it touches, to put them back if it fails.
    * DynamoDB: a Query sorts and filters every item of the table. Here it reads its
      partition, as DynamoDB does.
    * Its server lists moto's package folder, a system call per entry, for every request.
      Here once.
    * SQS: each message sent or received reads every attribute of its queue, message counts
      included, a delete searches the queue twice, and every clock reading builds
      datetimes: O(queue) per message. Here an attribute is computed when read, a receipt
      handle finds its message at once, and the clock is time.time().
    """
    from moto.dynamodb.responses import DynamoHandler  # noqa: PLC0415 - the local extra

    if not getattr(DynamoHandler.call_action, "tuned", False):
        _isolate_transactions()
        _partition_queries()
        backends: Any = importlib.import_module("moto.backends")
        backends.list_of_moto_modules = functools.cache(
            lambda listed=backends.list_of_moto_modules: tuple(listed())
        )
        _cheap_sqs_clock()
        _sqs_in_constant_time()


def _isolate_transactions() -> None:
    import copy  # noqa: PLC0415
    import types  # noqa: PLC0415

    from moto.dynamodb import models  # noqa: PLC0415
    from moto.dynamodb.models.dynamo_type import DynamoType  # noqa: PLC0415
    from moto.dynamodb.models.table import Table  # noqa: PLC0415
    from moto.dynamodb.responses import DynamoHandler  # noqa: PLC0415

    lock = threading.RLock()
    call_action, transact = DynamoHandler.call_action, models.DynamoDBBackend.transact_write_items

    def locked_call(self: Any) -> Any:
        with lock:
            return call_action(self)

    def kept_items(backend: Any, actions: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        kept = []
        for action in actions:
            ((kind, request),) = action.items()
            table = backend.tables.get(request.get("TableName"))
            if table is None:
                continue
            key = request["Item"] if kind == "Put" else request.get("Key", {})
            hash_key = DynamoType(key[table.hash_key_attr])
            range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
            item = copy.deepcopy(table.get_item(hash_key, range_key))
            kept.append((table, hash_key, range_key, item))
        return kept

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        kept = kept_items(self, transact_items)
        try:
            transact(self, transact_items)
        except Exception:
            for table, hash_key, range_key, item in reversed(kept):
                partition = table.items if range_key is None else table.items[hash_key]
                held = hash_key if range_key is None else range_key
                if item is None:
                    partition.pop(held, None)
                else:
                    partition[held] = item
            raise

    def snapshot(value: Any, memo: Any = None) -> Any:  # the table itself: see kept_items
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    locked_call.tuned = True  # type: ignore[attr-defined]
    models.copy = types.SimpleNamespace(deepcopy=snapshot, copy=copy.copy)  # type: ignore[assignment,attr-defined]
    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    DynamoHandler.call_action = locked_call  # type: ignore[method-assign]


def _partition_queries() -> None:
    from moto.dynamodb.models.table import Table  # noqa: PLC0415

    query = Table.query

    def partition_query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name is not None or hash_key is None or not self.range_key_attr:
            return query(self, hash_key, *args, **kwargs)
        items = list(self.items.get(hash_key, {}).values())
        self.all_items = lambda: items  # for this call: DynamoDB requests run one at a time
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    Table.query = partition_query  # type: ignore[method-assign]


def _cheap_sqs_clock() -> None:
    from moto.sqs import models  # noqa: PLC0415

    def retained(backend: Any, queue_name: str, message: Any) -> bool:
        period = int(backend.get_queue(queue_name).message_retention_period)
        return bool(period + message.sent_timestamp / 1000 > time.time())

    models.unix_time = lambda dt=None: time.time()  # type: ignore[attr-defined]
    models.unix_time_millis = lambda dt=None: time.time() * 1000  # type: ignore[attr-defined]
    models.SQSBackend.is_message_valid_based_on_retention_period = retained  # type: ignore[assignment]


_SQS_COUNTS = frozenset(
    {
        "approximate_number_of_messages",
        "approximate_number_of_messages_not_visible",
        "approximate_number_of_messages_delayed",
    }
)


class _WithoutCounts:
    """A queue whose message counts read 0: its other attributes, without a pass over it."""

    def __init__(self, queue: Any):
        self._queue = queue

    def __getattr__(self, name: str) -> Any:
        return 0 if name in _SQS_COUNTS else getattr(self._queue, name)


class _QueueAttributes(Mapping[str, Any]):
    """A queue's attributes, each computed when it is read."""

    def __init__(self, queue: Any, everything: Callable[[Any], dict[str, Any]]):
        self._queue, self._everything = queue, everything

    def __getitem__(self, name: str) -> Any:
        from moto.core.utils import camelcase_to_underscores  # noqa: PLC0415

        if camelcase_to_underscores(name) in _SQS_COUNTS:
            return getattr(self._queue, camelcase_to_underscores(name))
        return self._everything(_WithoutCounts(self._queue))[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._everything(self._queue))

    def __len__(self) -> int:
        return len(self._everything(self._queue))


def _sqs_in_constant_time() -> None:
    models: Any = importlib.import_module("moto.sqs.models")  # patched: typed as Any
    everything = models.Queue.attributes.fget
    by_handle: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
    mark_received = models.Message.mark_received

    def received(message: Any, *args: Any, **kwargs: Any) -> None:
        mark_received(message, *args, **kwargs)
        by_handle[message.receipt_handle] = message

    def delete_message(queue: Any, receipt_handle: str) -> None:
        if receipt_handle in queue.deleted_messages:
            return  # deleted before: as SQS, not an error
        message: Any = by_handle.get(receipt_handle)
        try:
            queue._messages.remove(message)  # by identity: a Message has no __eq__
        except ValueError:
            raise models.ReceiptHandleIsInvalid from None
        queue.pending_messages.discard(message)
        queue.deleted_messages.update(message.all_receipt_handles)

    def visible(queue: Any) -> list[Any]:
        now = time.time() * 1000
        return [m for m in queue._messages if m.visible_at < now and m.delayed_until <= now]

    models.Queue.attributes = property(lambda queue: _QueueAttributes(queue, everything))
    models.Queue.messages = property(visible)
    models.Queue.delete_message = delete_message
    models.Message.mark_received = received


def local_environment() -> dict[str, str]:
    """Powertools settings for running the handlers in this process (set before importing them)."""
    return {
        "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        "POWERTOOLS_METRICS_DISABLED": "true",
    }


class MotoServer:
    """moto's threaded server on 127.0.0.1 (a free port unless one is given)."""

    def __init__(self, port: int = 0):
        from moto.server import ThreadedMotoServer  # noqa: PLC0415 - only the local extra has it

        self._port = port
        self.url: str | None = None  # once started
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log per request

    def start(self) -> str:
        """Start the server; OSError when its port cannot be had. moto binds on a thread of
        its own and waits for it without end, so a port in use (or out of range) would hang
        here: the port is tried first, as the server will bind it (address reuse on)."""
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
    """Create the table, bucket and queues wherever boto3 points (moto's server or mock);
    IndexNow's queue too when the overrides set INDEXNOW_KEY.

    ``visibility_timeout`` shortens the queues' visibility timeout so that a failed message
    comes back in seconds rather than minutes; everything else is as deployed.
    """
    session = session or boto3.session.Session(region_name=REGION)
    overrides = settings_overrides or {}
    table = _create_table(session.client("dynamodb"), f"{prefix}-registry")
    bucket = f"{prefix}-site"
    session.client("s3").create_bucket(Bucket=bucket)
    sqs = session.client("sqs")
    specs = functions_for(bool(overrides.get("INDEXNOW_KEY") or overrides.get("indexnow_key")))
    queues = {spec.name: _create_queue(sqs, prefix, spec, visibility_timeout) for spec in specs}
    resources = {"SITE_URL": site_url, "TABLE_NAME": table, "BUCKET_NAME": bucket}
    settings = Settings.model_validate(resources | _queue_urls(queues, QUEUE_SETTINGS) | overrides)
    return LocalStack(settings=settings, queues=queues)


def _create_queue(
    sqs: SQSClient, prefix: str, spec: FunctionSpec, visibility_timeout: int | None
) -> LocalQueue:
    fifo = ".fifo" if spec.fifo else ""
    shared: dict[Any, str] = {"MaximumMessageSize": str(MAX_MESSAGE_BYTES)}
    if spec.fifo:
        shared["FifoQueue"] = "true"
    dlq_url = _new_queue(sqs, f"{prefix}-{spec.queue}-dlq{fifo}", shared, DLQ_RETENTION_DAYS)
    timeout = spec.visibility_timeout_seconds if visibility_timeout is None else visibility_timeout
    arn = _queue_arn(sqs, dlq_url)
    redrive = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": spec.max_receive_count})
    attributes = shared | {"VisibilityTimeout": str(timeout), "RedrivePolicy": redrive}
    if spec.content_based_deduplication:
        attributes["ContentBasedDeduplication"] = "true"
    url = _new_queue(sqs, f"{prefix}-{spec.queue}{fifo}", attributes, QUEUE_RETENTION_DAYS)
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


def _queue_urls(queues: dict[str, LocalQueue], names: dict[str, tuple[str, str]]) -> dict[str, str]:
    """``names`` (a setting or output -> its queue's url or dlq_url) for the queues there are."""
    return {
        name: getattr(queues[function], which)
        for name, (function, which) in names.items()
        if function in queues
    }


def use_endpoint(endpoint_url: str) -> None:
    """Point every boto3 client this process creates at the local server, never at a real
    account."""
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
    return outputs | _queue_urls(stack.queues, OPERATOR_OUTPUTS)


def register_stack(stack: LocalStack, name: str = LOCAL_STACK_NAME) -> None:
    """Register a CloudFormation stack whose outputs describe the local resources, so that
    ``sitemap-updater status --stack NAME --endpoint-url ...`` resolves them as it would a
    deployment. The stack holds one placeholder resource (moto only records it)."""
    template = {
        "Description": "sitemap-updater local runtime: outputs only",
        "Resources": {"Placeholder": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {key: {"Value": value} for key, value in stack_outputs(stack).items()},
    }
    cloudformation = boto3.session.Session(region_name=REGION).client("cloudformation")
    with warnings.catch_warnings():  # moto: "WaitConditionHandle ... not supported"
        warnings.simplefilter("ignore", UserWarning)
        cloudformation.create_stack(StackName=name, TemplateBody=json.dumps(template))
