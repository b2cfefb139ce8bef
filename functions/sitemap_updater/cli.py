"""The ``sitemap-updater`` console script.

Errors a user can fix are one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from sitemap_updater.ops.errors import UserError, aws_error_message, log_to_stderr
from sitemap_updater.ops.flags import SETTING_OPTIONS, add_deployment_arguments, setting_pairs
from sitemap_updater.ops.progress import print_lines, print_summary

if TYPE_CHECKING:
    from sitemap_updater.domain.urls import Site
    from sitemap_updater.local.runtime import Pipeline, Summary
    from sitemap_updater.local.stack import MotoServer

    Commands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

Argument: TypeAlias = tuple[str, dict[str, Any]]
AddCommand: TypeAlias = Callable[["Commands"], None]


def _arg(name: str, help_text: str, **options: Any) -> Argument:
    return name, {**options, "help": help_text}


def _flag(name: str, help_text: str) -> Argument:
    return _arg(name, help_text, action="store_true")


def _int(name: str, help_text: str, default: int | None = None) -> Argument:
    return _arg(name, help_text, type=int, default=default)


def _json(help_text: str = "end with the summary as JSON") -> Argument:
    return _flag("--json", help_text)


def _events(nargs: str, help_text: str) -> Argument:
    return _arg("events", help_text, nargs=nargs, type=Path, metavar="EVENTS")


TIMEOUT = _arg(
    "--timeout",
    "seconds allowed per document, redirects included (default 30)",
    type=float,
    default=30.0,
)


def _command(
    name: str,
    help_text: str,
    example: str,
    description: str | None,
    *arguments: Argument,
    aws: bool = False,
    one_of: Sequence[Argument] = (),
) -> AddCommand:
    """A subcommand: ``aws`` ones take the deployment flags (--stack, ...) first; exactly one
    of ``one_of`` is required."""

    def add(commands: Commands) -> None:
        parser = commands.add_parser(
            name,
            help=help_text,
            description=description,
            epilog=f"example: sitemap-updater {example}",
        )
        if aws:
            add_deployment_arguments(parser)
        group = parser.add_mutually_exclusive_group(required=True) if one_of else parser
        for flag, options in one_of:
            group.add_argument(flag, **options)
        for flag, options in arguments:
            parser.add_argument(flag, **options)

    return add


LOCAL = _command(
    "local",
    "run the whole pipeline on this machine (moto) over event files",
    "local events/ --site-url https://www.example.com --out site/",
    "Start an embedded moto stack, feed the events into the ingest queue, drive the ingest, "
    "rebuild and index handlers until the queues are drained, then copy the bucket into --out and "
    "print a summary. Exits 0 when the pipeline ran, even if events were rejected.",
    _events(
        "*",
        "files (one event, a JSON array, JSON Lines, an SQS batch) or folders; none with --serve "
        "starts an empty site",
    ),
    _arg("--site-url", "the site's origin, e.g. https://www.example.com", required=True),
    _arg(
        "--out", "folder to copy the bucket into (default: site)", type=Path, default=Path("site")
    ),
    _json("end with the summary as one JSON line"),
    _flag("--serve", "keep running and serve the site over HTTP as CloudFront would"),
    _int("--port", "port for --serve (default: the --site-url port if it is local, else 8080)"),
    _int(
        "--moto-port",
        "fixed port for the moto server, so the operator commands can reach it with "
        "--endpoint-url (default: a free port, printed with --serve)",
        0,
    ),
    _int("--max-urls-per-shard", "shard size (default 10000, at most 50000)"),
    _arg(
        "--connectors",
        "with --serve: a connectors file (docs/CONNECTORS.md); each is served at "
        "/hooks/<name> on the site's port",
        type=Path,
    ),
    _arg(
        "--setting",
        "any other settings variable, e.g. STYLESHEET=true, INDEXNOW_KEY=... with "
        "INDEXNOW_ENDPOINT=... (repeatable; see the configuration table in docs/DEPLOY.md)",
        **SETTING_OPTIONS,
    ),
    _arg(
        "--log-level",
        "handler log level on stderr (default ERROR; INFO shows every step)",
        default="ERROR",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
    ),
)
SCHEMA = _command(
    "schema",
    "print or write the JSON Schema of the event contract",
    "schema --out events/schema.json",
    None,
    _arg("--out", "write to this file instead of stdout", type=Path),
)
BUILD = _command(
    "build",
    "turn page records into a complete site offline (shards, index, robots.txt)",
    "build pages.jsonl --site-url https://www.example.com --out site/",
    "Validate each page record as its publish event, place the pages into shards, render and gzip "
    "them, write the index and robots.txt into --out: the same code and limits as the functions, "
    "so the files are what the pipeline would serve. The same input gives byte-identical files. A "
    "URL given twice: the greater version wins, else the later record. A shard's lastmod in the "
    "index is its newest entry's lastmod (or --lastmod). Exits 0 even if records were rejected (1 "
    "with --strict); 1, writing nothing, when no record is a valid page.",
    _arg(
        "pages",
        "page records: JSON Lines (.jsonl), a JSON array (.json) or CSV with a header",
        nargs="+",
        type=Path,
        metavar="PAGES",
    ),
    _arg("--site-url", "the site's origin", required=True),
    _arg("--out", "folder to write the site into", type=Path, required=True),
    _int("--max-urls-per-shard", "default 10000, at most 50000", 10_000),
    _int(
        "--max-shard-bytes",
        "uncompressed bytes per shard (default and maximum 52428800)",
        52_428_800,
    ),
    _int("--max-sitemaps-per-index", "shards per index file (default and maximum 50000)", 50_000),
    _flag("--no-compress", "write shards as .xml, not .xml.gz"),
    _arg(
        "--format",
        "xml (default) or txt: text shards of one URL per line (.txt), as SITEMAP_FORMAT does",
        choices=["xml", "txt"],
        default="xml",
    ),
    _arg("--lastmod", "W3C datetime to give every shard in the index"),
    _arg(
        "--robots",
        "the owner's robots.txt: kept byte for byte, with our Sitemap line(s) set (default: the "
        "robots.txt already in --out, if any)",
        type=Path,
    ),
    _arg(
        "--group-rules",
        "path prefixes that give pages their own shards, as the GROUP_RULES setting: "
        "'/news/=news,/shop/=shop' (a record's 'sitemap' field overrides)",
        default="",
    ),
    _arg("--news-groups", "groups held to Google News's 1,000-URL limit", default="news"),
    _arg(
        "--now",
        "the moment news ages against (W3C datetime; default: the time of the build). Only pages "
        "with news depend on it; give it for byte-identical rebuilds of such sites",
    ),
    _flag(
        "--stylesheet",
        "the human view: write sitemap.xsl and reference it from the index and shards (as the "
        "STYLESHEET setting does)",
    ),
    _arg(
        "--extra-sitemap",
        "a sitemap or feed on the site, made elsewhere, that the index lists after ours (as the "
        "EXTRA_SITEMAPS setting does); repeat it for more, in order",
        action="append",
        default=[],
        metavar="URL",
    ),
    _arg(
        "--feed-entries",
        "write feed.atom, an Atom feed of the N pages with the newest lastmod, listed in the "
        "index (as the FEED_ENTRIES setting does; at most 100)",
        type=int,
        choices=range(101),
        default=0,
        metavar="N",
    ),
    _flag("--strict", "exit 1 when any record was rejected"),
    _json(),
)
SEND = _command(
    "send",
    "put events from files on the ingest queue",
    "send events/ --stack sitemap-updater-prod",
    "Read events as `local` does (one event, a JSON array, JSON Lines sent line by line as "
    "written, an SQS batch, or folders) and send them to the ingest queue ten (and at most 256 "
    "KiB) at a time. Every entry not sent (over SQS's 1 MiB message limit, or refused by SQS) is "
    "listed with its file and line; exits 1 if any was.",
    _events("+", "files or folders"),
    _json(),
    aws=True,
)
BACKFILL = _command(
    "backfill",
    "import an existing site into the registry (live sitemaps, CSV, JSON Lines)",
    "backfill https://www.example.com/robots.txt --stack sitemap-updater-prod",
    "Read pages from a live sitemap tree (a robots.txt, index or sitemap URL; indexes followed, "
    ".gz read), a sitemap file, CSV or JSON Lines, and apply each to the registry exactly as a "
    "publish event (same validation and limits), then request one rebuild per touched shard. "
    "Records without a version get --version (default 0), which any CMS event beats; re-running "
    "is harmless (equal versions are duplicates), so an interrupted backfill is resumed by "
    "running it again.",
    _arg("source", "URL (robots.txt, sitemap index, sitemap) or file", metavar="SOURCE"),
    _arg(
        "--version",
        "version for records without one (default 0: any CMS version wins)",
        default="0",
    ),
    _int(
        "--workers",
        "registry writers in parallel (default 4; 1 on a local endpoint: moto's DynamoDB is not "
        "thread-safe)",
    ),
    _flag("--dry-run", "read and validate only; write nothing"),
    TIMEOUT,
    _json(),
    aws=True,
)
REBUILD = _command(
    "rebuild",
    "re-render shards and the index from the registry; restore lost objects",
    "rebuild --all --stack sitemap-updater-prod",
    "Render shards from the registry. A shard whose bytes changed is written with a new lastmod "
    "(and the index function is asked to refresh); one whose bytes did not change is checked in "
    "the bucket and, if its object is missing or altered, restored byte for byte with its "
    "recorded lastmod. Then the index files and robots.txt are checked and restored the same way. "
    "Unchanged objects that are present are never rewritten.",
    _json(),
    aws=True,
    one_of=(
        _flag("--all", "every shard the registry knows"),
        _arg("--shard", "one shard (repeatable)", action="append", metavar="ID"),
    ),
)
REDRIVE = _command(
    "redrive",
    "move dead-letter messages back to their source queues",
    "redrive --dry-run --stack sitemap-updater-prod",
    "After a fix, move the messages of the dead-letter queues back to the queues they came from "
    "(receive, send, delete; FIFO messages keep their group). Moves at most the messages there "
    "when it starts, so messages that fail again are not looped. Exits 1 if a message was not "
    "sent (it is visible again at once) or not deleted.",
    _arg(
        "--queue",
        "only this function's dead-letter queue (repeatable; default all the deployment has)",
        action="append",
        choices=["ingest", "rebuild", "index", "indexnow"],
    ),
    _flag("--dry-run", "count, per reason_code with a sample; move nothing"),
    _int("--max-messages", "move at most this many per queue"),
    _json(),
    aws=True,
)
STATUS = _command(
    "status",
    "shard fill levels, queue depths and ages, dead letters by reason, the index's lastmod",
    "status --stack sitemap-updater-prod",
    "Show each shard's entries and bytes against the limits, each queue's depth and the age of "
    "its oldest message (CloudWatch's ApproximateAgeOfOldestMessage), the dead letters per "
    "reason_code with a sample, and the newest index lastmod. Exits 1 when a dead-letter queue "
    "holds messages.",
    _json("print the status as JSON only"),
    aws=True,
)
VALIDATE = _command(
    "validate",
    "walk a live site as a crawler would and report every sitemap fault",
    "validate https://www.example.com/",
    "From robots.txt (or a sitemap or index URL), follow every Sitemap line, index and sitemap "
    "(.gz too) and report each fault with its location: schema validity (the official XSDs), the "
    "50,000-entry and 50 MiB limits, loc length, absolute same-site URLs, W3C datetimes, dead "
    "links, duplicate URLs. Exits 1 on any fault, 0 when clean, 2 on a usage error. Works on any "
    "site.",
    _arg("url", "site root, robots.txt, sitemap index or sitemap URL", metavar="URL"),
    _arg(
        "--site-url",
        "the origin the sitemaps should name, when it is served from URL's origin (e.g. a staging "
        "or local copy): its URLs are fetched from URL's origin",
    ),
    TIMEOUT,
    _int("--workers", "sitemaps fetched in parallel (default 4)", 4),
    _int(
        "--max-sitemaps",
        "check at most this many sitemap and index files, robots.txt not counted (default "
        "100000); a walk stopped there is a fault",
        100_000,
    ),
    _json("end with the report as JSON"),
)
MAX_TIMEOUT = 86_400.0  # a day per document; sockets refuse much larger timeouts anyway
COUNTS = ("workers", "max_sitemaps", "max_messages")  # options that are at least 1
COMMANDS = (LOCAL, SCHEMA, BUILD, SEND, BACKFILL, REBUILD, REDRIVE, STATUS, VALIDATE)


def _run(args: argparse.Namespace) -> int:
    """The command, its module imported only when it is the one run."""
    timeout = getattr(args, "timeout", None)  # what argparse's types cannot say
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT:  # NaN fails too
        raise UserError(
            f"--timeout must be a number of seconds > 0 and at most {MAX_TIMEOUT:,.0f}, "
            f"got {timeout:g}"
        )
    for name in COUNTS:
        if (value := getattr(args, name, None)) is not None and value < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1")
    if args.command == "local":
        return _local(args)
    if args.command == "schema":
        return _schema(args)
    module = importlib.import_module(f"sitemap_updater.ops.{args.command}")
    return int(module.run(args))


def _schema(args: argparse.Namespace) -> int:
    from sitemap_updater.domain.events import event_json_schema  # noqa: PLC0415

    text = json.dumps(event_json_schema(), indent=2, sort_keys=True) + "\n"
    if args.out:
        try:
            args.out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write {args.out}: {exc.strerror}") from exc
    else:
        sys.stdout.write(text)
    return 0


def _local(args: argparse.Namespace) -> int:
    from sitemap_updater.domain.urls import Site  # noqa: PLC0415

    try:
        site = Site.parse(args.site_url)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    if not args.events and not args.serve:
        raise UserError("give EVENTS (files or folders), or --serve to start an empty site")
    if args.port is not None and not 0 < args.port < 65536:
        raise UserError(f"--port must be 1 to 65535, got {args.port}")
    for path in args.events:
        if not path.exists():
            raise UserError(f"no such file or directory: {path}")
    log_to_stderr(args.log_level)  # before the runtime imports the handlers' logger
    from sitemap_updater.local import runtime  # noqa: PLC0415

    runtime.check_replaceable(args.out, args.events)
    overrides = _local_settings(args.setting, args.max_urls_per_shard)
    if args.connectors is not None:
        if not args.serve:
            raise UserError("--connectors serves webhooks: give --serve too")
        from sitemap_updater import connectors  # noqa: PLC0415

        try:  # in full, the secrets in clear included: this is the local runtime
            overrides["CONNECTORS"] = json.dumps(connectors.read(args.connectors))
        except connectors.ConfigError as exc:
            raise UserError(str(exc)) from exc
    try:
        moto, pipeline, summary = runtime.run_local(
            args.events, site.origin, args.out, overrides, moto_port=args.moto_port
        )
    except (TimeoutError, ConnectionError) as exc:  # the run failed, not its inputs
        _print_error(_one_line(exc))
        return 1
    except (ValueError, OSError) as exc:  # settings (pydantic), limits, unreadable files
        raise UserError(_one_line(exc)) from exc
    try:
        _print_summary(summary, as_json=args.json)
        if args.serve:
            _serve(moto, pipeline, site, args.port, connectors=bool(args.connectors))
    finally:
        moto.stop()
    return 0


def _local_settings(pairs: Sequence[str], max_urls_per_shard: int | None) -> dict[str, Any]:
    from sitemap_updater.local.stack import STACK_SETTINGS  # noqa: PLC0415

    settings: dict[str, Any] = setting_pairs(pairs)
    if taken := next((name for name in settings if name in STACK_SETTINGS), None):
        raise UserError(f"--setting {taken}: the local stack sets it (or use --site-url)")
    if settings.get("INDEXNOW_KEY") and "INDEXNOW_ENDPOINT" not in settings:
        raise UserError(
            "--setting INDEXNOW_KEY: give --setting INDEXNOW_ENDPOINT=... too (an endpoint of "
            "your own): the default one would submit the local run's URLs to real search engines"
        )
    if max_urls_per_shard is not None:
        settings["MAX_URLS_PER_SHARD"] = max_urls_per_shard
    return settings


def _one_line(exc: Exception) -> str:
    from pydantic import ValidationError  # noqa: PLC0415 - pydantic: not for --help

    from sitemap_updater.settings import problems  # noqa: PLC0415

    if isinstance(exc, ValidationError):
        return problems(exc)
    return next(iter(str(exc).splitlines()), type(exc).__name__)


def _serve(
    moto: MotoServer, pipeline: Pipeline, site: Site, port: int | None, connectors: bool
) -> None:
    """Serve the bucket, keep the pipeline running, and say how to operate it."""
    from sitemap_updater.local.server import SiteServer  # noqa: PLC0415
    from sitemap_updater.local.stack import LOCAL_STACK_NAME, REGION, register_stack  # noqa: PLC0415

    register_stack(pipeline.stack)
    if port is None:  # the site's own port when it is this machine (its URLs resolve here)
        here = site.host in {"127.0.0.1", "localhost"}
        port = int(site.port or (443 if site.scheme == "https" else 80)) if here else 8080
    try:
        webhook = pipeline.app.receive_webhook if connectors else None
        bucket = pipeline.app.settings.bucket_name
        server = SiteServer(pipeline.s3, bucket, port=port, webhook=webhook).start()
    except (OSError, OverflowError) as exc:  # port in use, not allowed, out of range
        raise UserError(f"cannot serve on port {port}: {exc}") from exc
    # SIGTERM (a service manager, `kill`, a script's `cmd &`) stops it as Ctrl-C does.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    mapped = "" if server.url == site.origin else f" --site-url {site.origin}"
    target = f"--stack {LOCAL_STACK_NAME} --endpoint-url {moto.url} --region {REGION}"
    print(
        f"serving {site.origin} from {server.url} (robots.txt, sitemap.xml); the pipeline keeps "
        f"running on {moto.url}; Ctrl-C stops\n"
        f"operate it: sitemap-updater status {target}\n"
        f"            sitemap-updater send EVENTS... {target}\n"
        f"check it:   sitemap-updater validate {server.url}/robots.txt{mapped}"
        + (f"\nwebhooks:   POST {server.url}/hooks/<name>" if connectors else ""),
        file=sys.stderr,
        flush=True,
    )
    try:
        pipeline.run_forever()
    except KeyboardInterrupt:
        return
    finally:
        server.stop()


def _print_summary(summary: Summary, as_json: bool) -> None:
    lines = [
        f"events: {summary.sent} sent, {summary.accepted} accepted, "
        f"{len(summary.rejected)} rejected, {summary.dead_lettered} dead-lettered",
    ]
    for rejection in summary.rejected:
        event = rejection.event if isinstance(rejection.event, str) else json.dumps(rejection.event)
        lines += [f"  rejected: {rejection.reason}", f"            {event[:200]}"]
    if summary.freshness_ms:
        lines.append(
            "publish to visible: p50 {p50:.0f} ms, p99 {p99:.0f} ms, max {max:.0f} ms "
            "({changes:.0f} shard updates measured)".format(**summary.freshness_ms)
        )
    lines.append(f"objects written: {summary.objects_written}; the site is in {summary.out}/:")
    lines.extend(f"  {summary.out}/{key}" for key in summary.objects)
    print_summary(lines, asdict(summary), as_json, ensure_ascii=False)


def _print_error(message: str) -> None:
    print_lines([f"sitemap-updater: error: {message}"], sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sitemap-updater", description="Event-driven XML sitemaps for large sites on AWS."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except UserError as exc:
        _print_error(str(exc))
        return 2
    except KeyboardInterrupt:
        print("sitemap-updater: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into head: stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        message = aws_error_message(exc, getattr(args, "endpoint_url", None))
        if message is None:
            raise
        _print_error(message)
        return 1


if __name__ == "__main__":
    sys.exit(main())
