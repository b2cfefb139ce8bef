"""The bucket CloudFront serves: shards, index files, robots.txt.

Every write is a whole-object PutObject (a reader sees the old bytes or the new, never a
part) and conditional: ``If-Match`` the ETag the writer last saw, or ``If-None-Match: *``
when it believes there is no object. A lost condition becomes WriteConflict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from sitemap_updater.domain.errors import WriteConflict
from sitemap_updater.usecases.ports import StoredObject

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_CONFLICTS = {"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "412", "409"}
_MISSING = {"404", "NoSuchKey", "NotFound"}


@dataclass
class SitemapStore:
    bucket: str
    client: S3Client

    def put(
        self,
        key: str,
        body: bytes,
        *,
        content_type: str,
        cache_control: str,
        expected_etag: str | None,
        metadata: dict[str, str] | None = None,
    ) -> str:
        """Write ``key`` whole if it still holds ``expected_etag`` (None: if it does not
        exist); returns the new ETag."""
        condition: Any = {"IfMatch": expected_etag} if expected_etag else {"IfNoneMatch": "*"}
        try:
            response = self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=body,
                ContentType=content_type,
                CacheControl=cache_control,
                Metadata=metadata or {},
                **condition,
            )
        except ClientError as exc:
            if _code(exc) in _CONFLICTS:
                raise WriteConflict(f"{key} changed since it was read") from exc
            raise
        return response["ETag"]

    def head(self, key: str) -> StoredObject | None:
        return self._fetch(key, self.client.head_object)

    def get(self, key: str) -> StoredObject | None:
        return self._fetch(key, self.client.get_object)

    def delete(self, key: str, expected_etag: str | None = None) -> None:
        """Delete ``key`` (only if it still holds ``expected_etag``, when given). An object
        that is already gone is not an error."""
        condition: Any = {"IfMatch": expected_etag} if expected_etag else {}
        try:
            self.client.delete_object(Bucket=self.bucket, Key=key, **condition)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                return
            if _code(exc) in _CONFLICTS:
                raise WriteConflict(f"{key} changed since it was read") from exc
            raise

    def _fetch(self, key: str, request: Any) -> StoredObject | None:
        try:
            response = request(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                return None
            raise
        body = response["Body"].read() if "Body" in response else None
        return StoredObject(response["ETag"], response.get("Metadata", {}), body)


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
