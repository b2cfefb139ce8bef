"""Static files the site serves next to its sitemaps: the human view's stylesheet
(``/sitemap.xsl``) and the IndexNow key file (``/<key>.txt``).

Their bytes come from the settings and the package, not from the registry. The index
function publishes them (before the index that references the stylesheet), writing a file
only when its stored bytes differ: the object's ``sha256`` metadata is compared with what
it should hold (body and Content-Type), so an unchanged file costs one HEAD per file per
execution environment, and nothing at all afterwards. The write is conditional on the
ETag the HEAD saw (or on there being no object), like every other write of the updater.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.usecases.ports import ObjectStore


@dataclass(frozen=True)
class SiteFile:
    key: str
    body: bytes
    content_type: str

    @property
    def digest(self) -> str:
        """What the stored object must say it holds: its Content-Type and bytes."""
        return hashlib.sha256(self.content_type.encode() + b"\0" + self.body).hexdigest()


class PublishSiteFiles:
    """Write each file whose object is missing or differs; remember the ones that are right."""

    def __init__(self, files: Sequence[SiteFile], store: ObjectStore, cache_control: str):
        self.files = tuple(files)
        self.store = store
        self.cache_control = cache_control
        self._current: set[str] = set()  # keys checked (or written) by this process

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
