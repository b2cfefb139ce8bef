"""The functions, their SQS event sources, and exactly the permissions each one's adapters use,
on that function's own resources only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from constructs import Construct

from sitemap_infra.bundling import ARCHITECTURE, PYTHON_VERSION, RUNTIME
from sitemap_infra.nag import acknowledge
from sitemap_infra.queues import Queues
from sitemap_infra.storage import Storage
from sitemap_updater.bootstrap import site_file_keys
from sitemap_updater.domain.sharding import INDEX_KEY, ROBOTS_KEY
from sitemap_updater.resources import (
    INDEX,
    INDEXNOW,
    INGEST,
    METRICS_NAMESPACE,
    REBUILD,
    RECONCILE,
    FunctionSpec,
)
from sitemap_updater.settings import Settings

# Object keys each function writes and deletes (domain/sharding.py).
SHARD_KEYS = ("sitemap-*",)
WRITTEN_KEYS = {
    REBUILD.name: SHARD_KEYS,
    RECONCILE.name: SHARD_KEYS,
    INDEX.name: (INDEX_KEY, "sitemap-index-*"),
}
OBJECT_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject")
REBUILD_TABLE_ACTIONS = ("GetItem", "BatchGetItem", "Query", "UpdateItem")
TABLE_ACTIONS = {
    # BatchGetItem: hreflang clusters and their members; BatchWriteItem: the pending markers
    # of a cluster's other shards.
    INGEST.name: (
        "GetItem",
        "BatchGetItem",
        "BatchWriteItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
    ),
    # BatchWriteItem: the pending markers it applied, deleted.
    REBUILD.name: (*REBUILD_TABLE_ACTIONS, "BatchWriteItem"),
    # BatchGetItem: the index file's record with the changed shards' (the patch).
    INDEX.name: ("BatchGetItem", "Query", "UpdateItem", "DeleteItem"),
    # The rebuild's reads (it rebuilds with restore, which applies no marker), the by-shard
    # index, and an entry repaired in a transaction conditional on its URL record.
    RECONCILE.name: (*REBUILD_TABLE_ACTIONS, "PutItem", "DeleteItem", "ConditionCheckItem"),
}


def table_actions(name: str, feed: bool) -> tuple[str, ...]:
    actions = TABLE_ACTIONS.get(name, ())
    if name == INDEX.name and feed:  # the feed's one item, read to publish it
        actions = (*actions, "GetItem")
    return actions


OLDER_RUNTIME = (
    f"python{PYTHON_VERSION} (supported until 2028) rather than the newest runtime: the asset "
    "ships bytecode compiled by an interpreter of the runtime's version, which the build "
    "machines have for this one; without it every cold start compiles its imports "
    "(bench/coldstart.py)."
)
XRAY_ANY_RESOURCE = (
    "X-Ray's PutTraceSegments and PutTelemetryRecords support no resource other than '*' "
    "(added by active tracing)."
)
KEYS_KNOWN_AT_RUN_TIME = (
    "Scoped to the object keys this function writes: shards (sitemap-<group>-<NNNNN>.xml[.gz]) "
    "or index files (sitemap-index-<n>.xml), whose names are only known at run time."
)


def powertools_environment(service: str) -> dict[str, str]:
    return {
        "POWERTOOLS_SERVICE_NAME": service,
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }


def new_function(
    scope: Construct,
    prefix: str,
    function_id: str,
    *,
    label: str,
    environment: Mapping[str, str],
    service: str,
    **options: Any,
) -> lambda_.Function:
    """A function with a role and a log group of its own (``<prefix>Role``, ``<prefix>Logs``);
    ``options``: the rest of ``lambda_.Function``'s (handler, code, timeout...)."""
    log_group = logs.LogGroup(
        scope,
        f"{prefix}Logs",
        retention=logs.RetentionDays.ONE_MONTH,
        removal_policy=RemovalPolicy.DESTROY,
    )
    role = iam.Role(
        scope,
        f"{prefix}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"sitemap-updater {label} function",
    )
    function = lambda_.Function(
        scope,
        function_id,
        runtime=RUNTIME,
        architecture=ARCHITECTURE,
        environment={**environment, **powertools_environment(service)},
        role=role,
        log_group=log_group,
        **options,
        # No START/END/REPORT lines (~350 bytes an invocation; Lambda's metrics keep the
        # durations and errors). Ours at INFO: EMF lines carry no level and count as INFO.
        logging_format=lambda_.LoggingFormat.JSON,
        system_log_level_v2=lambda_.SystemLogLevel.WARN,
        application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
        tracing=lambda_.Tracing.ACTIVE,
        # Lambda's default, chosen: no chain of the functions' own requests comes near
        # the 16 invocations it stops a loop after (docs/RELIABILITY.md#no-runaway-chains).
        recursive_loop=lambda_.RecursiveLoop.TERMINATE,
    )
    acknowledge(function, "AwsSolutions-L1", OLDER_RUNTIME)
    policy = role.node.find_child("DefaultPolicy")  # made by active tracing
    acknowledge(policy, "AwsSolutions-IAM5[Resource::*]", XRAY_ANY_RESOURCE)
    # CDK lists the role in DependsOn beside its policy (which the GetAtt of the role
    # does not imply); naming it twice is harmless.
    function.node.default_child.add_metadata(  # type: ignore[union-attr]
        "cfn-lint", {"config": {"ignore_checks": ["W3005"]}}
    )
    log_group.grant_write(role)
    return function


class Functions(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        settings: Settings,
        storage: Storage,
        queues: Queues,
        distribution: cloudfront.IDistribution,
        service: str,
        max_concurrency: Mapping[str, int],
    ) -> None:
        super().__init__(scope, construct_id)
        self.max_concurrency = max_concurrency
        self.storage = storage
        self.queues = queues
        self.invalidated = distribution.distribution_arn if settings.invalidate_paths else None
        self.site_file_keys = site_file_keys(settings)  # written by the index function
        self.feed = bool(settings.feed_entries)
        environment = settings.to_env()
        specs = [*(pair.spec for pair in queues.pairs.values()), RECONCILE]
        self.functions = {
            spec.name: self._function(spec, code, environment, service) for spec in specs
        }

    def __getitem__(self, name: str) -> lambda_.Function:
        return self.functions[name]

    def _permissions(self, name: str) -> list[iam.PolicyStatement]:
        table, bucket = self.storage.table.table_arn, self.storage.bucket
        grants: list[tuple[Sequence[str], Sequence[str]]] = []
        if actions := table_actions(name, self.feed):
            tables = [table, f"{table}/index/*"] if name == RECONCILE.name else [table]
            grants.append(([f"dynamodb:{action}" for action in actions], tables))
        if name in WRITTEN_KEYS:
            # HeadObject of a missing key answers 404 only with s3:ListBucket (403 without it),
            # and the store treats only 404 as "absent".
            grants.append((OBJECT_ACTIONS, self._objects(WRITTEN_KEYS[name])))
            grants.append((["s3:ListBucket"], [bucket.bucket_arn]))
        grants += [(["sqs:SendMessage"], arns) for arns in self._sends_to(name)]
        if name == INDEX.name:
            # HEAD (s3:GetObject) to compare, PUT when different; never deleted (robots.txt
            # is the owner's).
            site_files = self._objects((ROBOTS_KEY, *self.site_file_keys))
            grants.append((["s3:GetObject", "s3:PutObject"], site_files))
        if self.invalidated is not None and name in (REBUILD.name, RECONCILE.name, INDEX.name):
            grants.append((["cloudfront:CreateInvalidation"], [self.invalidated]))
        return [iam.PolicyStatement(actions=list(a), resources=list(r)) for a, r in grants]

    def _objects(self, keys: Sequence[str]) -> list[str]:
        return [self.storage.bucket.arn_for_objects(key) for key in keys]

    def _sends_to(self, name: str) -> list[list[str]]:
        """The queues a function sends to, one statement per group."""
        queue = {name: pair.queue.queue_arn for name, pair in self.queues.pairs.items()}
        sends = {
            INGEST.name: [[queue[REBUILD.name], self.queues[INGEST.name].dead_letter.queue_arn]],
            REBUILD.name: [[queue[INDEX.name]]],
            RECONCILE.name: [[queue[INDEX.name]]],
            INDEX.name: [[queue[REBUILD.name]]],
        }
        if self.feed:  # a changed feed asks the index function to publish it
            sends[INGEST.name].append([queue[INDEX.name]])
        if INDEXNOW.name in queue:
            sends[INGEST.name].append([queue[INDEXNOW.name]])
            # Dead-letters what IndexNow refused (400/422) at once; no table, no bucket.
            sends[INDEXNOW.name] = [[self.queues[INDEXNOW.name].dead_letter.queue_arn]]
        return sends[name]

    def _function(
        self, spec: FunctionSpec, code: lambda_.Code, environment: Mapping[str, str], service: str
    ) -> lambda_.Function:
        consumes = spec.name in self.queues.pairs
        function = new_function(
            self,
            spec.name.capitalize(),
            spec.name.capitalize(),
            label=spec.name,
            environment=environment,
            service=service,
            description=f"sitemap-updater: {spec.name} "
            + (f"({spec.name} queue)" if consumes else "(schedule)"),
            handler=spec.handler,
            code=code,
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
        )
        for statement in self._permissions(spec.name):
            function.add_to_role_policy(statement)
        if consumes:
            window = spec.batching_window_seconds
            function.add_event_source(
                sources.SqsEventSource(
                    self.queues[spec.name].queue,
                    batch_size=spec.batch_size,
                    # Lambda rejects a batching window on a FIFO queue.
                    max_batching_window=Duration.seconds(window)
                    if window and not spec.fifo
                    else None,
                    max_concurrency=self.max_concurrency.get(spec.name, spec.max_concurrency),
                    report_batch_item_failures=True,
                )
            )
        self._acknowledge(function.role, spec.name)  # type: ignore[arg-type]
        return function

    def _acknowledge(self, role: iam.IRole, name: str) -> None:
        policy = role.node.find_child("DefaultPolicy")
        stack = Stack.of(self)
        if name == RECONCILE.name:
            table = stack.get_logical_id(self.storage.table.node.default_child)  # type: ignore[arg-type]
            finding = f"AwsSolutions-IAM5[Resource::<{table}.Arn>/index/*]"
            acknowledge(policy, finding, "The registry's by-shard index (its only index).")
        bucket = stack.get_logical_id(self.storage.bucket.node.default_child)  # type: ignore[arg-type]
        for key in WRITTEN_KEYS.get(name, ()):
            if "*" in key:
                finding = f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/{key}]"
                acknowledge(policy, finding, KEYS_KNOWN_AT_RUN_TIME)
