"""The registry table (the source of truth), the bucket CloudFront serves, and a bucket for
access logs. Table and site bucket are retained when the stack is deleted: the registry
cannot be rebuilt from anything else, and robots.txt in the bucket is the site owner's."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from sitemap_updater.resources import TABLE

ABORT_UPLOADS_AFTER = Duration.days(1)


class Storage(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        string = dynamodb.AttributeType.STRING
        self.table = dynamodb.Table(
            self,
            "Registry",
            partition_key=dynamodb.Attribute(name=TABLE.partition_key, type=string),
            sort_key=dynamodb.Attribute(name=TABLE.sort_key, type=string),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=TABLE.ttl_attribute,
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.table.add_global_secondary_index(
            index_name=TABLE.shard_index,
            partition_key=dynamodb.Attribute(name=TABLE.shard_attribute, type=string),
            projection_type=dynamodb.ProjectionType.INCLUDE,
            non_key_attributes=list(TABLE.shard_index_attributes),
        )
        self.logs = self._bucket(
            "Logs",
            s3.LifecycleRule(
                expiration=Duration.days(90),
                abort_incomplete_multipart_upload_after=ABORT_UPLOADS_AFTER,
            ),
            # CloudFront's standard logs are delivered with an ACL grant.
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
        )
        self.bucket = self._bucket(
            "Site",
            s3.LifecycleRule(
                noncurrent_version_expiration=Duration.days(30),
                expired_object_delete_marker=True,
                abort_incomplete_multipart_upload_after=ABORT_UPLOADS_AFTER,
            ),
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            server_access_logs_bucket=self.logs,
            server_access_logs_prefix="s3/",
        )

    def _bucket(self, construct_id: str, rule: s3.LifecycleRule, **options: Any) -> s3.Bucket:
        return s3.Bucket(
            self,
            construct_id,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            lifecycle_rules=[rule],
            removal_policy=RemovalPolicy.RETAIN,
            **options,
        )
