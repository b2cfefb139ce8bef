"""A sitemap ``<url>``'s image, video, news and hreflang extensions as the event contract's
fields, for ``backfill``; what the contract cannot carry is named in ``dropped``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any

from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.urls import Site, normalise_url
from sitemap_updater.ops.crawl import PAGE_FIELDS, local_name

XML_SPACE = " \t\r\n"
_ELSEWHERE = ("_wrong_scheme", "_foreign_host", "_foreign_port")
_YES_NO = {"yes": True, "no": False, "true": True, "false": False}  # plugins write true
# The attributes the contract carries; any other is named as dropped.
_ATTRIBUTES = {"restriction": {"relationship"}, "platform": {"relationship"}, "uploader": {"info"}}

Read = Callable[[Any], Any]


def text(element: Any) -> str:
    return "".join(element.itertext()).strip(XML_SPACE)


def _number(element: Any) -> Any:
    value = text(element)
    try:
        return Decimal(value)  # as JSON's number would be; not one: the contract says why
    except InvalidOperation:
        return value


def _yes_no(element: Any) -> Any:
    value = text(element)
    return _YES_NO.get(value.lower(), value)


def _choice(items: str) -> Read:
    """``<video:restriction relationship="allow">IE GB</video:restriction>`` and the like."""

    def read(element: Any) -> dict[str, Any]:
        relationship = element.get("relationship")
        chosen = {items: text(element).split()}
        return chosen if relationship is None else {"relationship": relationship.strip()} | chosen

    return read


# A video's children; its uploader is Extensions._uploader's (its info must be on the site).
_VIDEO: dict[str, Read] = {
    **dict.fromkeys(("thumbnail_loc", "title", "description", "content_loc", "player_loc"), text),
    **dict.fromkeys(("tag", "expiration_date", "publication_date"), text),
    **dict.fromkeys(("duration", "rating", "view_count"), _number),
    **dict.fromkeys(("family_friendly", "requires_subscription", "live"), _yes_no),
    "restriction": _choice("countries"),
    "platform": _choice("platforms"),
}


def _written(element: Any) -> str:
    name = local_name(element.tag)
    return f"{element.prefix}:{name}" if element.prefix else str(name)


@dataclass
class Extensions:
    """Reads the extensions of ``<url>`` elements of one site; ``dropped`` names, for the
    last element read, what was not carried."""

    site: Site
    dropped: list[str] = field(default_factory=list)

    def read(self, url: Any) -> dict[str, Any]:
        self.dropped = []
        record: dict[str, Any] = {}
        news: dict[str, Read] = {
            "publication_date": text,
            "title": text,
            "publication": partial(self.fields, readers={"name": text, "language": text}),
        }
        page_fields: set[str] = set()  # the crawl keeps the first of each
        for child in url:
            name = local_name(child.tag)
            if name in PAGE_FIELDS and name in page_fields:
                self.dropped.append(_written(child))
            if name is None or name in PAGE_FIELDS:
                page_fields.add(name or "")
                continue
            if name == "image":
                record.setdefault("images", []).append(self.fields(child, {"loc": text}))
            elif name == "video":
                readers = _VIDEO | {"uploader": self._uploader}
                record.setdefault("videos", []).append(self.fields(child, readers))
            elif name == "news" and "news" not in record:
                record["news"] = self.fields(child, news)
            elif name == "link" and child.get("rel") == "alternate":
                self._alternate(child, record)
            else:
                self.dropped.append(_written(child))
        return record

    def fields(self, block: Any, readers: dict[str, Read]) -> dict[str, Any]:
        """The children ``readers`` know, each read once; the others named as dropped."""
        values: dict[str, Any] = {}
        for child in block:
            name = local_name(child.tag)
            if name is None:
                continue
            if name == "tag" and "tag" in readers:
                values.setdefault("tags", []).append(text(child))
            elif name in readers and name not in values:
                values[name] = readers[name](child)
            else:
                self.dropped.append(_written(child))
                continue
            kept = _ATTRIBUTES.get(name, set())
            self.dropped += [f"{_written(child)} @{key}" for key in child.attrib if key not in kept]
        return values

    def _uploader(self, element: Any) -> dict[str, Any]:
        uploader = {"name": text(element)}
        info = (element.get("info") or "").strip(XML_SPACE)
        if info and self._elsewhere(info):
            self.dropped.append(f"{_written(element)} info {info} (on another site)")
        elif info:
            uploader["info"] = info
        return uploader

    def _alternate(self, link: Any, record: dict[str, Any]) -> None:
        lang, href = ((link.get(key) or "").strip(XML_SPACE) for key in ("hreflang", "href"))
        if not lang or link.get("media") is not None:
            self.dropped.append(f"{_written(link)} {href} (not an hreflang alternate)")
        elif self._elsewhere(href):
            self.dropped.append(f"{_written(link)} hreflang {lang} {href} (on another site)")
        else:
            record.setdefault("alternates", []).append({"hreflang": lang, "href": href})

    def _elsewhere(self, url: str) -> bool:
        """On another origin than the site, by the contract's own URL rules."""
        try:
            normalise_url(url, self.site, "alternate")
        except InvalidEvent as refused:
            return refused.code.endswith(_ELSEWHERE)
        return False
