"""CloudFront: invalidate exactly the paths a write changed (optional, off by default). The
objects carry a short ``Cache-Control``, so an invalidation only makes a change visible
sooner: a failure is logged and counted, never raised (it must not fail, block or retry the
sitemap update that caused it).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

from botocore.exceptions import BotoCoreError, ClientError

from sitemap_updater.observability import Metric, logger, metrics

if TYPE_CHECKING:
    from mypy_boto3_cloudfront import CloudFrontClient


@dataclass
class Cdn:
    distribution_id: str
    client: CloudFrontClient

    def invalidate(self, keys: Sequence[str]) -> bool:
        """Invalidate the paths of ``keys``; True if CloudFront accepted the request."""
        paths = sorted({"/" + quote(key, safe="/-_.~") for key in keys})  # root-relative
        if not paths:
            return True
        try:
            self.client.create_invalidation(
                DistributionId=self.distribution_id,
                InvalidationBatch={
                    "Paths": {"Quantity": len(paths), "Items": paths},
                    "CallerReference": uuid.uuid4().hex,
                },
            )
        except (ClientError, BotoCoreError) as exc:
            metrics.add_metric(name=Metric.INVALIDATIONS_FAILED, unit="Count", value=1)
            logger.warning("invalidation failed", paths=paths, reason=str(exc))
            return False
        metrics.add_metric(name=Metric.PATHS_INVALIDATED, unit="Count", value=len(paths))
        return True
