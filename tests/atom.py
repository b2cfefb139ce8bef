"""Atom 1.0 as RFC 4287 defines it: its RELAX NG grammar (Appendix B, ``schemas/atom.rnc``),
its two Schematron rules, and a third-party reader (feedparser)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import feedparser
import rnc2rng
from lxml import etree

ATOM = {"atom": "http://www.w3.org/2005/Atom"}


@cache
def atom_schema() -> etree.RelaxNG:
    grammar = rnc2rng.dumps(rnc2rng.load(str(Path(__file__).parent / "schemas" / "atom.rnc")))
    # rnc2rng declares the empty namespace as a prefix, which XML forbids; it is not used.
    return etree.RelaxNG(etree.fromstring(grammar.replace(' xmlns:local=""', "").encode()))


def read_atom(body: bytes) -> Any:
    """The feed as feedparser reads it, once it is valid Atom 1.0."""
    document = etree.fromstring(body)
    schema = atom_schema()
    assert schema.validate(document), schema.error_log
    # The grammar's Schematron rules: an author for every entry, a link or content in each.
    assert document.find("atom:author", ATOM) is not None
    for entry in document.findall("atom:entry", ATOM):
        assert entry.xpath(
            "atom:link[not(@rel) or @rel='alternate'] or atom:content", namespaces=ATOM
        )
    parsed = feedparser.parse(body)
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    return parsed
