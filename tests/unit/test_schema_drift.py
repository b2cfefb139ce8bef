"""events/schema.json is generated from the code's models; the sample events obey it."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from sitemap_updater.cli import main
from sitemap_updater.domain.events import Event, event_json_schema
from sitemap_updater.local.feeder import read_paths

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "events"
SCHEMA_FILE = EVENTS / "schema.json"
REGENERATE = "sitemap-updater schema --out events/schema.json"
BAD_SAMPLES = {"90-rejected-examples.jsonl"}  # wrong on purpose


def committed() -> bytes:
    return SCHEMA_FILE.read_bytes()


def stale(generated: bytes) -> str:
    diff = difflib.unified_diff(
        committed().decode("utf-8").splitlines(),
        generated.decode("utf-8").splitlines(),
        "events/schema.json (committed)",
        "generated from the models",
        lineterm="",
    )
    return (
        "events/schema.json has drifted from the event models; regenerate it with "
        f"`{REGENERATE}` and commit the result:\n" + "\n".join(list(diff)[:40])
    )


def test_the_cli_regenerates_events_schema_json_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "schema.json"

    assert main(["schema", "--out", str(out)]) == 0

    assert out.read_bytes() == committed(), stale(out.read_bytes())


def test_schema_on_stdout_is_the_same_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0

    printed = capsys.readouterr().out.encode("utf-8")
    assert printed == committed(), stale(printed)


def test_the_committed_file_is_the_models_schema() -> None:
    generated = json.dumps(event_json_schema(), indent=2, sort_keys=True) + "\n"
    assert json.loads(committed()) == event_json_schema(), stale(generated.encode("utf-8"))


# --- the sample events against the schema, checked by hand (no jsonschema package) ---


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    assert ref.startswith("#/$defs/"), ref
    return schema["$defs"][ref.removeprefix("#/$defs/")]  # type: ignore[no-any-return]


def _type_ok(kind: str, value: Any) -> bool:
    checks = {
        "string": lambda v: isinstance(v, str),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
    }
    return bool(checks[kind](value))


def violations(schema: dict[str, Any], node: dict[str, Any], value: Any, at: str) -> list[str]:
    """The keywords events/schema.json uses: enough to check the samples' shape."""
    node = _resolve(schema, node)
    problems: list[str] = []
    if "anyOf" in node:
        if all(violations(schema, branch, value, at) for branch in node["anyOf"]):
            problems.append(f"{at}: matches no anyOf branch")
        if "type" not in node:  # an object's anyOf adds to its other keywords
            return problems
    if "oneOf" in node:
        matching = [b for b in node["oneOf"] if not violations(schema, b, value, at)]
        if len(matching) != 1:
            problems.append(f"{at}: matches {len(matching)} oneOf branches, not exactly 1")
        return problems
    if "type" in node and not _type_ok(node["type"], value):
        return [f"{at}: {value!r} is not of type {node['type']}"]
    if "const" in node and value != node["const"]:
        problems.append(f"{at}: {value!r} is not {node['const']!r}")
    if "enum" in node and value not in node["enum"]:
        problems.append(f"{at}: {value!r} is not one of {node['enum']}")
    if "minimum" in node and value < node["minimum"]:
        problems.append(f"{at}: {value!r} < {node['minimum']}")
    if "maximum" in node and value > node["maximum"]:
        problems.append(f"{at}: {value!r} > {node['maximum']}")
    if "minLength" in node and len(value) < node["minLength"]:
        problems.append(f"{at}: shorter than {node['minLength']}")
    if "maxLength" in node and len(value) > node["maxLength"]:
        problems.append(f"{at}: longer than {node['maxLength']}")
    if "pattern" in node and not re.search(node["pattern"], value):
        problems.append(f"{at}: {value!r} does not match {node['pattern']}")
    if node.get("type") == "array":
        if "minItems" in node and len(value) < node["minItems"]:
            problems.append(f"{at}: fewer than {node['minItems']} items")
        if "maxItems" in node and len(value) > node["maxItems"]:
            problems.append(f"{at}: more than {node['maxItems']} items")
        for number, item in enumerate(value):
            problems += violations(schema, node.get("items", {}), item, f"{at}[{number}]")
    if isinstance(value, dict):
        required = node.get("required", [])
        problems += [f"{at}: {name} is required" for name in required if name not in value]
    if node.get("type") == "object":
        properties = node.get("properties", {})
        if node.get("additionalProperties") is False:
            problems += [f"{at}: {name} is not allowed" for name in value if name not in properties]
        for name, item in value.items():
            if name in properties:
                problems += violations(schema, properties[name], item, f"{at}.{name}")
    return problems


def unwrap(document: Any) -> Any:
    """The event inside an SNS notification and/or an EventBridge event."""
    if isinstance(document, dict) and document.get("Type") == "Notification":
        document = json.loads(document["Message"])
    if isinstance(document, dict) and "detail-type" in document:
        document = document["detail"]
    return document


def sample_events(names: set[str] | None = None) -> list[tuple[str, Any]]:
    """(origin, event) for every message body in events/, envelopes removed."""
    found: list[tuple[str, Any]] = []
    for message in read_paths([EVENTS]):
        file = Path(message.origin.split("#")[0].rsplit(":", 1)[0]).name
        if names is not None and file not in names:
            continue
        try:
            document = json.loads(message.body)
        except ValueError:
            found.append((message.origin, message.body))
            continue
        found.append((message.origin, unwrap(document)))
    return found


def good_samples() -> list[tuple[str, Any]]:
    names = {p.name for p in EVENTS.iterdir() if p.name != "schema.json"} - BAD_SAMPLES
    return sample_events(names)


def test_the_schema_uses_only_keywords_this_checker_knows() -> None:
    known = {
        "$schema", "$id", "$defs", "$ref", "title", "description", "discriminator", "oneOf",
        "anyOf", "type", "const", "enum", "minimum", "maximum", "minLength", "maxLength",
        "pattern", "format", "properties", "required", "additionalProperties", "default",
        "examples", "mapping", "propertyName", "items", "minItems", "maxItems",
    }  # fmt: skip
    used: set[str] = set()

    def walk(node: Any, names: bool = False) -> None:  # names: a map of names to schemas
        if isinstance(node, dict):
            for key, value in node.items():
                if not names:
                    used.add(key)
                walk(value, names=not names and key in {"properties", "$defs", "mapping"})
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(json.loads(committed()))

    assert used <= known, f"teach violations() these keywords: {sorted(used - known)}"


def test_every_good_sample_event_satisfies_the_schema() -> None:
    schema = json.loads(committed())
    samples = good_samples()

    assert len(samples) == 22  # 01..07: 1 + 5 + 1 + 1 + 1 + 1 + 3; 09..13: 1 + 1 + 3 + 1 + 3
    for origin, document in samples:
        assert violations(schema, schema, document, "$") == [], origin
        assert type(msgspec.convert(document, Event)).__name__.lower() == document["type"]


def test_the_samples_cover_both_event_types_and_every_optional_field() -> None:
    events = [document for _, document in good_samples()]

    assert {e["type"] for e in events} == {"publish", "unpublish"}
    for name in ("lastmod", "changefreq", "priority"):
        assert any(name in e for e in events), name


def test_the_rejected_examples_are_bad_for_the_reasons_they_show() -> None:
    schema = json.loads(committed())
    (_, foreign), (_, stale), (_, malformed) = sample_events(BAD_SAMPLES)

    # the schema cannot know the site's host: that one is the ingest handler's to reject
    assert violations(schema, schema, foreign, "$") == []
    assert "evil.example.net" in foreign["url"]
    assert violations(schema, schema, stale, "$") == ["$: matches 0 oneOf branches, not exactly 1"]
    assert violations(schema, _resolve(schema, schema["oneOf"][0]), stale, "$") == [
        "$.version: matches no anyOf branch"
    ]
    assert isinstance(malformed, str)
    with pytest.raises(ValueError, match="delimiter"):
        json.loads(malformed)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"type": "publish", "url": "https://www.example.com/a"}, "version is required"),
        ({"type": "publish", "url": "u", "version": 1, "colour": "red"}, "colour is not allowed"),
        ({"type": "publish", "url": "u", "version": -1}, "anyOf"),
        ({"type": "publish", "url": "u", "version": "7"}, "anyOf"),
        ({"type": "unpublish", "version": 1}, "anyOf"),
        ({"type": "publish", "url": "u", "version": 1, "priority": 1.5}, "matches no anyOf"),
        ({"type": "publish", "url": "u", "version": 1, "changefreq": "often"}, "anyOf"),
        ({"type": "publish", "url": "u", "version": 1, "lastmod": "2026-11"}, "anyOf"),
        ({"type": "unpublish", "url": "u", "version": 1, "priority": 0.5}, "not allowed"),
        ({"type": "publish", "url": "u" * 2049, "version": 1}, "longer than 2048"),
    ],
)
def test_the_checker_catches_what_the_schema_forbids(
    document: dict[str, Any], problem: str
) -> None:
    """The hand-written checker is only worth its passes if it can also fail."""
    schema = json.loads(committed())
    branch = _resolve(schema, schema["oneOf"][0 if document["type"] == "publish" else 1])

    assert violations(schema, schema, document, "$")
    assert any(problem in found for found in violations(schema, branch, document, "$")), problem


def test_every_pattern_in_the_schema_is_in_the_syntax_json_schema_validators_read() -> None:
    """ECMA-262 regular expressions: JavaScript validators (Ajv) throw on Python's named
    groups, ``(?P<name>...)``."""
    patterns: list[str] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            patterns.extend(v for k, v in node.items() if k == "pattern" and isinstance(v, str))
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(event_json_schema())
    assert patterns
    assert [p for p in patterns if "(?P" in p or "(?<" in p] == []
