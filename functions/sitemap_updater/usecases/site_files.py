"""Files served next to the sitemaps: ``/sitemap.xsl``, the IndexNow key file and the feed
(``/feed.atom``, rendered for each run), published by the index function before the index
that references them. A file is written (conditionally) only when its object's ``sha256``
metadata differs: one HEAD per version of a file per execution environment.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.usecases.ports import ObjectStore


@dataclass(frozen=True)
class SiteFile:
    key: str
    body: bytes
    content_type: str

    @property
    def digest(self) -> str:  # what the object's metadata must say it holds
        return hashlib.sha256(self.content_type.encode() + b"\0" + self.body).hexdigest()


@dataclass
class PublishSiteFiles:
    files: Sequence[SiteFile]
    store: ObjectStore
    cache_control: str
    feed: Callable[[], SiteFile] | None = None  # rendered for each run
    # Each key's digest as last checked or written (the feed may go back to earlier bytes).
    _current: dict[str, str] = field(default_factory=dict, init=False)

    def __call__(self, *, verify: bool = False) -> list[str]:
        """The keys written. ``verify`` checks every file again (the operators' restore)."""
        written = []
        for file in [*self.files, *([self.feed()] if self.feed is not None else [])]:
            if self._current.get(file.key) == file.digest and not verify:
                continue
            found = self.store.head(file.key)
            if found is None or found.metadata.get("sha256") != file.digest:
                self.store.put(
                    file.key,
                    file.body,
                    content_type=file.content_type,
                    cache_control=self.cache_control,
                    expected_etag=found.etag if found is not None else None,
                    metadata={"sha256": file.digest},
                )
                written.append(file.key)
            self._current[file.key] = file.digest
        if written:
            metrics.add_metric(name=Metric.SITE_FILES_WRITTEN, unit="Count", value=len(written))
            logger.info("site files written", keys=written)
        return written
