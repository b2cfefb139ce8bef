"""Static files served next to the sitemaps: the human view's stylesheet (``/sitemap.xsl``)
and the IndexNow key file (``/<key>.txt``), from the settings and the package.

The index function publishes them before the index that references the stylesheet. A file
is written (conditionally, as every write) only when its object's ``sha256`` metadata
differs from its body and Content-Type: one HEAD per file per execution environment.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.usecases.ports import ObjectStore


@dataclass(frozen=True)
class SiteFile:
    key: str
    body: bytes
    content_type: str

    @property
    def digest(self) -> str:  # what the object must say it holds
        return hashlib.sha256(self.content_type.encode() + b"\0" + self.body).hexdigest()


@dataclass
class PublishSiteFiles:
    files: Sequence[SiteFile]
    store: ObjectStore
    cache_control: str
    _current: set[str] = field(default_factory=set, init=False)  # keys checked or written

    def __call__(self, *, verify: bool = False) -> list[str]:
        """The keys written. ``verify`` checks every file again (the operators' restore)."""
        written = []
        for file in self.files:
            if file.key in self._current and not verify:
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
            self._current.add(file.key)
        if written:
            metrics.add_metric(name=Metric.SITE_FILES_WRITTEN, unit="Count", value=len(written))
            logger.info("site files written", keys=written)
        return written
