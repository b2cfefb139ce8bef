"""The ``sitemap-updater`` console script.

Errors a user can fix are one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXAMPLES = {
    "local": "example: sitemap-updater local events/ "
    "--site-url https://www.example.com --out site/",
    "schema": "example: sitemap-updater schema --out events/schema.json",
}


class UserError(Exception):
    """A mistake in the command line or its inputs: reported in one line."""


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
    return parser


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
    out = args.out.resolve()
    for kept in (Path.cwd(), *args.events):  # --out is replaced whole: never an input or cwd
        if out == kept.resolve() or out in kept.resolve().parents:
            raise UserError(f"--out {args.out} would delete {kept}: give it a folder of its own")
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
    except (ValueError, OSError) as exc:  # settings (pydantic), limits, unreadable files
        raise UserError(_one_line(exc)) from exc
    try:
        _print_summary(summary, as_json=args.json)
        if args.serve:
            port = args.port if args.port is not None else _default_port(site)
            pipeline = runtime.pipeline
            assert pipeline is not None  # noqa: S101 - run_local started it
            try:
                server = SiteServer(pipeline.s3, pipeline.app.settings.bucket_name, port=port)
            except (OSError, OverflowError) as exc:  # port in use, not allowed, out of range
                raise UserError(f"cannot serve on port {port}: {exc}") from exc
            server.start()
            _stop_on_sigterm()
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


def _one_line(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)  # pydantic's ValidationError: name the settings
    if callable(errors):
        return "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in errors(include_url=False)
        )
    return str(exc).splitlines()[0]


def _default_port(site: Any) -> int:
    """The site's own port when it is this machine (so its URLs resolve here), else 8080."""
    if site.host in {"127.0.0.1", "localhost"}:
        return int(site.port or (443 if site.scheme == "https" else 80))
    return 8080


def _stop_on_sigterm() -> None:
    """Let SIGTERM (a service manager, `kill`, a script's `cmd &`) stop --serve like Ctrl-C."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


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
        return 130


if __name__ == "__main__":
    sys.exit(main())
