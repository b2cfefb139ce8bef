"""The ``sitemap-updater`` console script.

Errors a user can fix are one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sitemap_updater.ops.errors import UserError, aws_error_message

EXAMPLES = {
    "local": "example: sitemap-updater local events/ "
    "--site-url https://www.example.com --out site/",
    "schema": "example: sitemap-updater schema --out events/schema.json",
    "build": "example: sitemap-updater build pages.jsonl --site-url https://www.example.com "
    "--out site/",
}

__all__ = ["UserError", "main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sitemap-updater",
        description="Event-driven XML sitemaps for large sites on AWS.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    local = commands.add_parser(
        "local",
        help="run the whole pipeline on this machine (moto) over event files",
        description="Start an embedded moto stack, feed the events into the ingest queue, drive "
        "the ingest, rebuild and index handlers until the queues are drained, then copy the "
        "bucket into --out and print a summary. Exits 0 when the pipeline ran, even if "
        "events were rejected.",
        epilog=EXAMPLES["local"],
    )
    local.add_argument(
        "events",
        nargs="+",
        type=Path,
        metavar="EVENTS",
        help="files (one event, a JSON array, JSON Lines, an SQS batch) or folders",
    )
    local.add_argument(
        "--site-url", required=True, help="the site's origin, e.g. https://www.example.com"
    )
    local.add_argument(
        "--out",
        type=Path,
        default=Path("site"),
        help="folder to copy the bucket into (default: site)",
    )
    local.add_argument("--json", action="store_true", help="end with the summary as one JSON line")
    local.add_argument(
        "--serve",
        action="store_true",
        help="keep running and serve the site over HTTP as CloudFront would",
    )
    local.add_argument(
        "--port",
        type=int,
        default=None,
        help="port for --serve (default: the --site-url port if it is local, else 8080)",
    )
    local.add_argument(
        "--max-urls-per-shard",
        type=int,
        default=None,
        help="shard size (default 10000, at most 50000)",
    )
    local.add_argument(
        "--log-level",
        default="ERROR",
        help="handler log level on stderr (default ERROR; INFO shows every step)",
    )
    local.set_defaults(run=_local)

    schema = commands.add_parser(
        "schema",
        help="print or write the JSON Schema of the event contract",
        epilog=EXAMPLES["schema"],
    )
    schema.add_argument(
        "--out", type=Path, default=None, help="write to this file instead of stdout"
    )
    schema.set_defaults(run=_schema)

    build = commands.add_parser(
        "build",
        help="turn page records into a complete site offline (shards, index, robots.txt)",
        description="Validate each page record as its publish event, place the pages into "
        "shards, render and gzip them, write the index and robots.txt into --out: the same "
        "code and limits as the functions, so the files are what the pipeline would serve. "
        "The same input gives byte-identical files. A URL given twice: the greater version "
        "wins, else the later record. A shard's lastmod in the index is its newest entry's "
        "lastmod (or --lastmod). Exits 0 even if records were rejected (1 with --strict).",
        epilog=EXAMPLES["build"],
    )
    build.add_argument(
        "pages",
        nargs="+",
        type=Path,
        metavar="PAGES",
        help="page records: JSON Lines (.jsonl), a JSON array (.json) or CSV with a header",
    )
    build.add_argument("--site-url", required=True, help="the site's origin")
    build.add_argument("--out", type=Path, required=True, help="folder to write the site into")
    _limit_arguments(build)
    build.add_argument(
        "--no-compress", action="store_true", help="write shards as .xml, not .xml.gz"
    )
    build.add_argument(
        "--lastmod", default=None, help="W3C datetime to give every shard in the index"
    )
    build.add_argument(
        "--robots",
        type=Path,
        default=None,
        help="the owner's robots.txt: kept byte for byte, with our Sitemap line(s) set",
    )
    build.add_argument("--strict", action="store_true", help="exit 1 when any record was rejected")
    build.add_argument("--json", action="store_true", help="end with the summary as JSON")
    build.set_defaults(run=_build)
    return parser


def _limit_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-urls-per-shard", type=int, default=10_000, help="default 10000, at most 50000"
    )
    parser.add_argument(
        "--max-shard-bytes",
        type=int,
        default=52_428_800,
        help="uncompressed bytes per shard (default and maximum 52428800)",
    )
    parser.add_argument(
        "--max-sitemaps-per-index",
        type=int,
        default=50_000,
        help="shards per index file (default and maximum 50000)",
    )


def _build(args: argparse.Namespace) -> int:
    from sitemap_updater.ops import build  # noqa: PLC0415

    return build.run(args)


def _schema(args: argparse.Namespace) -> int:
    from sitemap_updater.domain.events import event_json_schema  # noqa: PLC0415

    text = json.dumps(event_json_schema(), indent=2, sort_keys=True) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _local(args: argparse.Namespace) -> int:
    from sitemap_updater.domain.urls import Site  # noqa: PLC0415

    try:
        site = Site.parse(args.site_url)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    for path in args.events:
        if not path.exists():
            raise UserError(f"no such file or directory: {path}")
    overrides: dict[str, Any] = {}
    if args.max_urls_per_shard is not None:
        overrides["MAX_URLS_PER_SHARD"] = args.max_urls_per_shard

    from sitemap_updater.local.stack import local_environment  # noqa: PLC0415

    for name, value in local_environment().items():  # before the handlers are imported
        os.environ.setdefault(name, value)
    from sitemap_updater.local.runtime import run_local  # noqa: PLC0415
    from sitemap_updater.local.server import SiteServer  # noqa: PLC0415
    from sitemap_updater.observability import logger  # noqa: PLC0415

    logger.setLevel(args.log_level.upper())
    handler = logger.registered_handler
    if hasattr(handler, "setStream"):
        handler.setStream(sys.stderr)
    try:
        runtime, summary = run_local(args.events, site.origin, args.out, overrides)
    except ValueError as exc:  # settings validation (pydantic) and bad limits
        raise UserError(str(exc).splitlines()[0]) from exc
    try:
        _print_summary(summary, as_json=args.json)
        if args.serve:
            port = args.port if args.port is not None else _default_port(site)
            pipeline = runtime.pipeline
            assert pipeline is not None  # noqa: S101 - run_local started it
            server = SiteServer(pipeline.s3, pipeline.app.settings.bucket_name, port=port).start()
            print(
                f"serving {site.origin} from {server.url} (robots.txt, sitemap.xml); Ctrl-C stops",
                file=sys.stderr,
                flush=True,
            )
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                server.stop()
    finally:
        runtime.stop()
    return 0


def _default_port(site: Any) -> int:
    if site.host in {"127.0.0.1", "localhost"} and site.port:
        return int(site.port)
    return 8080


def _print_summary(summary: Any, as_json: bool) -> None:
    lines = [
        f"events: {summary.sent} sent, {summary.accepted} accepted, "
        f"{len(summary.rejected)} rejected, {summary.dead_lettered} dead-lettered",
    ]
    for rejection in summary.rejected:
        event = rejection.event if isinstance(rejection.event, str) else json.dumps(rejection.event)
        lines.append(f"  rejected: {rejection.reason}")
        lines.append(f"            {event[:200]}")
    lines.append(f"objects written: {summary.objects_written}; the site is in {summary.out_dir}/:")
    lines.extend(f"  {summary.out_dir}/{key}" for key in summary.objects)
    print("\n".join(lines), flush=True)
    if as_json:
        print(json.dumps(summary.as_json(), ensure_ascii=False), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except UserError as exc:
        print(f"sitemap-updater: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sitemap-updater: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into head: stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        message = aws_error_message(exc)
        if message is None:
            raise
        print(f"sitemap-updater: error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
