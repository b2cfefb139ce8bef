"""The connectors' configuration: one TOML file, shared by the stack and the local runtime
(docs/CONNECTORS.md#the-configuration-file). TOML because people write it: comments, a table
per connector and content type, and ``tomllib`` reads it without a dependency.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CMSES = ("native", "wp-webhooks", "ghost", "strapi", "contentful", "sanity", "shopify")
_NEEDS_TEMPLATE = {"strapi", "contentful", "sanity", "shopify"}
_LOCALISED = {"strapi", "contentful", "sanity"}  # the others' payloads name no locale
_DEFAULT_TYPES = {"ghost": ("post", "page"), "wp-webhooks": ("post", "page")}
_KEYS = {"name", "cms", "secret", "secrets", "secret_arn", "content_types", "tolerance_seconds"}
_EXTRA_KEYS = {
    "strapi": {"auth_header"},
    "wp-webhooks": {"signature"},
    "shopify": {"event_source"},
    "contentful": {"locale_based_publishing"},
}
_TYPE_KEYS = {"url_template", "slug_field", "locale_field", "title_field", "locales"}
_TITLE_FIELDS = {"wp-webhooks": "post_title"}  # everywhere else: "title"
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}", re.ASCII)
_ARN = re.compile(r"arn:aws[a-z-]*:(secretsmanager|ssm):[a-z0-9-]+:[0-9]{12}:\S+", re.ASCII)
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_FIELD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*(\.[A-Za-z_$][A-Za-z0-9_$-]*)*", re.ASCII)
MAX_SECRETS = 8  # rotating, the new and the old; WP Webhooks 4.x: one token per trigger


class ConfigError(ValueError):
    """The file cannot be used; the message says where and why."""


@dataclass(frozen=True)
class ContentType:
    """A content type whose entries are pages, and how its URLs are made."""

    url_template: str | None = None  # None: the CMS sends the URL (Ghost, WordPress)
    slug_field: str = "slug"
    locale_field: str = "locale"
    title_field: str = "title"  # the feed's entry title (FEED_ENTRIES); a page without: its URL
    locales: tuple[tuple[str, str], ...] = ()  # (CMS locale, its {locale} in URLs), in order

    @property
    def localised(self) -> bool:
        return self.url_template is not None and "{locale}" in self.url_template

    def url_locale(self, cms_locale: str) -> str | None:
        """The ``{locale}`` for a CMS locale; None for a locale the site does not serve."""
        return dict(self.locales).get(cms_locale) if self.locales else cms_locale


@dataclass(frozen=True)
class Connector:
    name: str
    cms: str
    secrets: tuple[str, ...] = ()  # in clear: the local runtime only
    secret_arn: str | None = None  # Secrets Manager or SSM SecureString: the stack
    content_types: Mapping[str, ContentType] = field(default_factory=dict)
    tolerance_seconds: int = 300  # how far a signed timestamp may be from the receiver's clock
    auth_header: str = "authorization"  # Strapi: the header that carries the shared secret
    signature: str = "body"  # WP Webhooks: "body" (3.x signs the body), "static" (4.x and later)
    event_source: str | None = None  # Shopify: the partner event source name to accept
    # Contentful: the site's delivery follows each locale's own state (sys.fieldStatus).
    locale_based_publishing: bool = False


def read(path: str | Path) -> dict[str, Any]:
    """The file's document, checked (:func:`parse`): what the stack and the local runtime
    pass to the endpoint as JSON (the ``CONNECTORS`` setting)."""
    origin = str(path)
    try:
        document = tomllib.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{origin}: cannot read it: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{origin}: not UTF-8 text (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{origin}: not TOML: {exc}") from exc
    parse(document, origin)
    return document


def parse(document: Mapping[str, Any], origin: str = "connectors") -> tuple[Connector, ...]:
    unknown = set(document) - {"connector"}
    if unknown:
        raise ConfigError(f"{origin}: unknown key {sorted(unknown)[0]!r} (expected [[connector]])")
    entries = document.get("connector", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(f"{origin}: 'connector' must be an array of tables ([[connector]])")
    connectors: list[Connector] = []
    for number, entry in enumerate(entries, 1):
        try:
            connectors.append(_connector(entry))
        except ConfigError as exc:
            name = f" ({entry['name']})" if isinstance(entry.get("name"), str) else ""
            raise ConfigError(f"{origin}: connector {number}{name}: {exc}") from None
    names = [c.name for c in connectors]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"{origin}: the name {twice[0]!r} is used twice (one path per name)")
    return tuple(connectors)


def _connector(entry: dict[str, Any]) -> Connector:
    cms = _string(entry, "cms")
    if cms not in CMSES:
        raise ConfigError(f"unknown cms {cms!r} (one of {', '.join(CMSES)})")
    unknown = set(entry) - _KEYS - _EXTRA_KEYS.get(cms, set())
    if unknown:
        raise ConfigError(f"unknown key {sorted(unknown)[0]!r} for cms {cms!r}")
    name = _string(entry, "name")
    if not _NAME.fullmatch(name):
        raise ConfigError(f"name {name!r}: lower-case letters, digits and '-', at most 63")
    tolerance = entry.get("tolerance_seconds", 300)
    if not isinstance(tolerance, int) or isinstance(tolerance, bool) or not 1 <= tolerance <= 3600:
        raise ConfigError("tolerance_seconds: a whole number of seconds from 1 to 3600")
    arn = _string(entry, "secret_arn", None)
    if arn is not None and not _ARN.fullmatch(arn):
        raise ConfigError(f"secret_arn {arn!r} is not a Secrets Manager or SSM parameter ARN")
    signature = _string(entry, "signature", "body")
    if signature not in ("body", "static"):
        raise ConfigError(f"signature {signature!r}: one of body, static")
    if not isinstance(by_locale := entry.get("locale_based_publishing", False), bool):
        raise ConfigError("locale_based_publishing: true or false")
    return Connector(
        name=name,
        cms=cms,
        secrets=_secrets(entry, cms),
        secret_arn=arn,
        content_types=_content_types(entry, cms),
        tolerance_seconds=tolerance,
        auth_header=_string(entry, "auth_header", "authorization").lower(),
        signature=signature,
        event_source=_string(entry, "event_source", None),
        locale_based_publishing=by_locale,
    )


def _secrets(entry: dict[str, Any], cms: str) -> tuple[str, ...]:
    if "secret" in entry and "secrets" in entry:
        raise ConfigError("give 'secret' or 'secrets', not both")
    given = [entry["secret"]] if "secret" in entry else entry.get("secrets", [])
    if not isinstance(given, list) or not all(isinstance(s, str) and s for s in given):
        raise ConfigError("secrets: a list of non-empty strings")
    if len(given) > MAX_SECRETS:
        raise ConfigError(f"secrets: at most {MAX_SECRETS}")
    if not given and "secret_arn" not in entry and cms != "shopify":
        raise ConfigError("no secret: give secret_arn (the stack) or secrets (the local runtime)")
    return tuple(given)


def _content_types(entry: dict[str, Any], cms: str) -> dict[str, ContentType]:
    given = entry.get("content_types")
    if cms == "native":
        if given is not None:
            raise ConfigError("cms 'native' sends whole events: it takes no content_types")
        return {}
    if given is None:
        if cms in _NEEDS_TEMPLATE:
            raise ConfigError(f"cms {cms!r} needs [connector.content_types.<type>] url_template")
        title = _TITLE_FIELDS.get(cms, "title")
        return {name: ContentType(title_field=title) for name in _DEFAULT_TYPES[cms]}
    if not (isinstance(given, dict) and given and all(isinstance(t, dict) for t in given.values())):
        raise ConfigError("content_types: a table of tables, one per content type that is a page")
    types = {}
    for name, table in given.items():
        try:
            types[name] = _content_type(table, cms)
        except ConfigError as exc:
            raise ConfigError(f"content type {name!r}: {exc}") from None
    return types


def _content_type(table: dict[str, Any], cms: str) -> ContentType:
    unknown = set(table) - _TYPE_KEYS
    if unknown:
        raise ConfigError(f"unknown key {sorted(unknown)[0]!r}")
    template = _template(table, cms)
    names = ("slug_field", "locale_field", "title_field")
    fields = {key: _string(table, key, None) for key in names}
    for key, value in fields.items():
        if value is not None and not _FIELD.fullmatch(value):
            raise ConfigError(f"{key} {value!r}: a field name, or a dotted path (seo.slug)")
    if template and "{locale}" in template and cms not in _LOCALISED:
        raise ConfigError(f"{cms} names no locale: url_template cannot hold {{locale}}")
    locales = _locales(table)
    if cms == "contentful" and template and "{locale}" in template and not locales:
        raise ConfigError("a {locale} template needs locales (an unpublish names no locale)")
    return ContentType(
        url_template=template,
        slug_field=fields["slug_field"] or ("handle" if cms == "shopify" else "slug"),
        locale_field=fields["locale_field"] or ("language" if cms == "sanity" else "locale"),
        title_field=fields["title_field"] or _TITLE_FIELDS.get(cms, "title"),
        locales=locales,
    )


def _template(table: dict[str, Any], cms: str) -> str | None:
    template: str | None = _string(table, "url_template", None)
    if template is None:
        if cms in _NEEDS_TEMPLATE:
            raise ConfigError("url_template is required")
        return None
    if not template.startswith(("https://", "http://")):
        raise ConfigError(f"url_template {template!r}: an absolute http(s) URL")
    placeholders = set(_PLACEHOLDER.findall(template))
    if "{slug}" not in placeholders or placeholders - {"{slug}", "{locale}"}:
        raise ConfigError(f"url_template {template!r}: holds {{slug}}, and may hold {{locale}}")
    return template


def _locales(table: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    given = table.get("locales", {})
    if not isinstance(given, dict) or not all(
        isinstance(v, str) and v and k for k, v in given.items()
    ):
        raise ConfigError('locales: a table of CMS locale = "URL locale" ("en-US" = "en")')
    return tuple(given.items())


def _string(entry: dict[str, Any], key: str, default: Any = ...) -> Any:
    if key not in entry:
        if default is ...:
            raise ConfigError(f"{key!r} is required")
        return default
    value = entry[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key}: a non-empty string")
    return value


def parse_secret_string(value: str) -> tuple[str, ...]:
    """A Secrets Manager value: the secret itself, or a JSON array of one or two secrets (the
    new one first, the old one while a rotation is under way)."""
    stripped = value.strip()
    if not stripped.startswith("["):
        if not stripped:
            raise ConfigError("the secret is empty")
        return (stripped,)
    try:
        secrets = json.loads(stripped)
    except ValueError as exc:
        raise ConfigError(f"the secret is not a JSON array: {exc}") from None
    if (
        not isinstance(secrets, list)
        or not 1 <= len(secrets) <= MAX_SECRETS
        or not all(isinstance(s, str) and s for s in secrets)
    ):
        raise ConfigError(f"the secret: a JSON array of 1 to {MAX_SECRETS} non-empty strings")
    return tuple(secrets)
