"""The official sitemap XSDs (see README.md for provenance) and a cached validator."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).parent
ALL_XSD = SCHEMA_DIR / "all.xsd"


@cache
def sitemap_schema() -> Any:
    """An lxml XMLSchema for <urlset> and <sitemapindex> with the Google extensions.

    lxml is imported here, not at module import: the Lambda functions never validate.
    """
    from lxml import etree  # noqa: PLC0415

    return etree.XMLSchema(etree.parse(str(ALL_XSD)))
