"""The functions, their SQS event sources, and exactly the permissions each one's code uses
(read the adapters: every action below is a call they make, on that function's own resources
only)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from constructs import Construct

from sitemap_infra.bundling import ARCHITECTURE, PYTHON_VERSION, RUNTIME
from sitemap_infra.nag import acknowledge
from sitemap_infra.queues import Queues
from sitemap_infra.storage import Storage
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

LOG_RETENTION = logs.RetentionDays.ONE_MONTH
LOG_LEVEL = "INFO"
# Object keys each function writes and deletes (domain/sharding.py): shards are
# sitemap-<group>-<NNNNN>.xml[.gz]; index files sitemap.xml and sitemap-index-<n>.xml.
SHARD_KEYS = ("sitemap-*",)
INDEX_KEYS = (INDEX_KEY, "sitemap-index-*", ROBOTS_KEY)
WRITTEN_KEYS = {REBUILD.name: SHARD_KEYS, RECONCILE.name: SHARD_KEYS, INDEX.name: INDEX_KEYS}
OBJECT_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject")
TABLE_ACTIONS = {
    INGEST.name: (
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",  # hreflang clusters and their members
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
    ),
    REBUILD.name: (
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",  # the hreflang clusters of its entries
        "dynamodb:Query",
        "dynamodb:UpdateItem",
    ),
    INDEX.name: ("dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
    # The rebuild's reads and writes, the by-shard index, and an entry repaired in a
    # transaction conditional on its URL record.
    RECONCILE.name: (
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        "dynamodb:PutItem",
        "dynamodb:DeleteItem",
        "dynamodb:ConditionCheckItem",
    ),
}


# Why cdk-nag's findings on the functions and their policies are accepted.
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
        "POWERTOOLS_LOG_LEVEL": LOG_LEVEL,
    }


class Functions(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        environment: Mapping[str, str],
        storage: Storage,
        queues: Queues,
        distribution_arn: str | None,
        site_file_keys: Sequence[str] = (),
        feed: bool = False,
        service: str,
        max_concurrency: Mapping[str, int] | None = None,
    ) -> None:
        """``distribution_arn``: grant CreateInvalidation on it (only when invalidation is on).
        ``site_file_keys``: the files the index function serves (the human view's
        stylesheet, the IndexNow key file, the feed), each written by exact key. ``feed``:
        the feed of recent changes is on. ``service``: see ``updater.deployment_service``.
        ``max_concurrency``: function name -> its event source mapping's, where not the
        spec's default."""
        super().__init__(scope, construct_id)
        self.max_concurrency = dict(max_concurrency or {})
        self.storage = storage
        self.queues = queues
        self.distribution_arn = distribution_arn
        self.site_file_keys = tuple(site_file_keys)
        self.feed = feed
        env = {**environment, **powertools_environment(service)}
        # One function per queue: the three, and IndexNow's when its queue exists.
        specs = [pair.spec for pair in queues.pairs.values()]
        self.functions = {spec.name: self._function(spec, code, env) for spec in specs}
        # And the reconciler, on a schedule (updater.py).
        self.functions[RECONCILE.name] = self._function(RECONCILE, code, env)

    def __getitem__(self, name: str) -> lambda_.Function:
        return self.functions[name]

    def permissions(self, spec: FunctionSpec) -> list[iam.PolicyStatement]:
        name = spec.name
        grants: list[tuple[Sequence[str], Sequence[str]]] = []
        if name in TABLE_ACTIONS:
            table = self.storage.table.table_arn
            tables = [table, f"{table}/index/*"] if name == RECONCILE.name else [table]
            grants.append((TABLE_ACTIONS[name], tables))
        if name in WRITTEN_KEYS:
            # HeadObject of a missing key answers 404 only with s3:ListBucket (403 without it),
            # and the store treats only 404 as "absent".
            grants.append((OBJECT_ACTIONS, self._objects(WRITTEN_KEYS[name])))
            grants.append((["s3:ListBucket"], [self.storage.bucket.bucket_arn]))
        grants += [(["sqs:SendMessage"], arns) for arns in self._sends_to(name)]
        if self.feed and name == INDEX.name:  # the feed's one item, read to publish it
            grants.append((["dynamodb:GetItem"], [self.storage.table.table_arn]))
        if self.site_file_keys and name == INDEX.name:
            # HEAD (s3:GetObject) to compare, PUT when different; never deleted.
            grants.append((["s3:GetObject", "s3:PutObject"], self._objects(self.site_file_keys)))
        if self.distribution_arn is not None and name in (REBUILD.name, RECONCILE.name, INDEX.name):
            grants.append((["cloudfront:CreateInvalidation"], [self.distribution_arn]))
        return [iam.PolicyStatement(actions=list(a), resources=list(r)) for a, r in grants]

    def _objects(self, keys: Sequence[str]) -> tuple[str, ...]:
        return tuple(self.storage.bucket.arn_for_objects(key) for key in keys)

    def _sends_to(self, name: str) -> list[tuple[str, ...]]:
        """The queues each function sends to, one statement per group."""
        queues = self.queues
        sends: dict[str, list[tuple[str, ...]]] = {
            INGEST.name: [
                (queues[REBUILD.name].queue.queue_arn, queues[INGEST.name].dead_letter.queue_arn)
            ],
            REBUILD.name: [(queues[INDEX.name].queue.queue_arn,)],
            RECONCILE.name: [(queues[INDEX.name].queue.queue_arn,)],
            INDEX.name: [(queues[REBUILD.name].queue.queue_arn,)],
        }
        if self.feed:  # a changed feed asks the index function to publish it
            sends[INGEST.name].append((queues[INDEX.name].queue.queue_arn,))
        if INDEXNOW.name in queues.pairs:
            indexnow = queues[INDEXNOW.name]
            sends[INGEST.name].append((indexnow.queue.queue_arn,))
            # Dead-letters what IndexNow refused (400/422) at once; no table, no bucket.
            sends[INDEXNOW.name] = [(indexnow.dead_letter.queue_arn,)]
        return sends[name]

    def _function(
        self, spec: FunctionSpec, code: lambda_.Code, environment: Mapping[str, str]
    ) -> lambda_.Function:
        name = spec.name.capitalize()
        log_group = logs.LogGroup(
            self,
            f"{name}Logs",
            retention=LOG_RETENTION,
            removal_policy=RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            self,
            f"{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"sitemap-updater {spec.name} function",
        )
        function = lambda_.Function(
            self,
            name,
            description=f"sitemap-updater: {spec.name} "
            + (f"({spec.queue} queue)" if spec.name in self.queues.pairs else "(schedule)"),
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=spec.handler,
            code=code,
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
            environment=dict(environment),
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE,
            # Lambda's default, chosen: no chain of the functions' own requests comes near
            # the 16 invocations it stops a loop after (docs/RELIABILITY.md#no-runaway-chains).
            recursive_loop=lambda_.RecursiveLoop.TERMINATE,
        )
        acknowledge(function, "AwsSolutions-L1", OLDER_RUNTIME)
        # CDK lists the role in DependsOn beside its policy (which the GetAtt of the role
        # does not imply); naming it twice is harmless.
        function.node.default_child.add_metadata(  # type: ignore[union-attr]
            "cfn-lint", {"config": {"ignore_checks": ["W3005"]}}
        )
        log_group.grant_write(role)
        for statement in self.permissions(spec):
            role.add_to_principal_policy(statement)
        if spec.name in self.queues.pairs:
            self._event_source(function, spec)
        self._acknowledge(role, spec)
        return function

    def _event_source(self, function: lambda_.Function, spec: FunctionSpec) -> None:
        pair = self.queues[spec.name]
        window = spec.batching_window_seconds
        function.add_event_source(
            sources.SqsEventSource(
                pair.queue,
                batch_size=spec.batch_size,
                # Lambda rejects a batching window on a FIFO queue.
                max_batching_window=Duration.seconds(window) if window and not spec.fifo else None,
                max_concurrency=self.max_concurrency.get(spec.name, spec.max_concurrency),
                report_batch_item_failures=True,
            )
        )

    def _acknowledge(self, role: iam.Role, spec: FunctionSpec) -> None:
        policy = role.node.find_child("DefaultPolicy")
        acknowledge(policy, "AwsSolutions-IAM5[Resource::*]", XRAY_ANY_RESOURCE)
        bucket = Stack.of(self).get_logical_id(self.storage.bucket.node.default_child)  # type: ignore[arg-type]
        if spec.name == RECONCILE.name:
            table = Stack.of(self).get_logical_id(self.storage.table.node.default_child)  # type: ignore[arg-type]
            finding = f"AwsSolutions-IAM5[Resource::<{table}.Arn>/index/*]"
            acknowledge(policy, finding, "The registry's by-shard index (its only index).")
        for key in WRITTEN_KEYS.get(spec.name, ()):
            if "*" in key:
                finding = f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/{key}]"
                acknowledge(policy, finding, KEYS_KNOWN_AT_RUN_TIME)
