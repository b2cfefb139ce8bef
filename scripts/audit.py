"""Dependency audit for ``make audit`` (part of ``make test``): pip-audit against PyPI's
vulnerability data, on what the Lambda functions run and on the development environment.

1. ``functions/requirements.txt``: the packages the function asset installs, at their pins;
2. the installed environment (``--skip-editable``: this project is not on PyPI), which holds
   the functions' packages and everything they pull in, and every development tool.

Exit status 1 when a dependency has a known vulnerability that ``scripts/audit-ignore.txt``
does not list (with a reason and a date to look again); 2 when pip-audit cannot run. A
dependency PyPI has no vulnerability data for is reported as not audited; when nothing at
all could be audited (PyPI's per-release JSON API unreachable) it is a loud warning, and
an error with ``AUDIT_STRICT=1`` (set it where that API is known to be reachable).
See docs/SECURITY.md, "Dependencies", for what to do about a finding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
IGNORE_FILE = ROOT / "scripts" / "audit-ignore.txt"
REQUIREMENTS = ROOT / "functions" / "requirements.txt"


@dataclass
class Report:
    label: str
    audited: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


def ignored_ids(path: Path | None = None) -> list[str]:
    """Vulnerability ids to accept: ``ID  reason`` per line (``#`` comments); a bare id
    without a reason is refused, so every exception says why."""
    path = path or IGNORE_FILE
    ids: list[str] = []
    if not path.exists():
        return ids
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        vuln_id, _, reason = line.partition(" ")
        if not reason.strip():
            raise SystemExit(f"{path.name}:{number}: {vuln_id} needs a reason after it")
        ids.append(vuln_id)
    return ids


def summarise(label: str, report: dict[str, Any]) -> Report:
    summary = Report(label)
    for dependency in report.get("dependencies", []):
        name = f"{dependency['name']} {dependency.get('version', '')}".strip()
        if "skip_reason" in dependency:
            summary.skipped.append(name)
            continue
        summary.audited.append(name)
        for vuln in dependency.get("vulns", []):
            fixes = ", ".join(vuln.get("fix_versions", [])) or "no fixed release yet"
            aliases = ", ".join(vuln.get("aliases", []))
            summary.findings.append(
                f"{name}: {vuln['id']}{f' ({aliases})' if aliases else ''}; fixed in {fixes}"
            )
    return summary


def pip_audit(label: str, args: list[str], ignore: list[str]) -> Report:
    command = [
        str(Path(sys.executable).with_name("pip-audit")),
        "--format",
        "json",
        "--progress-spinner",
        "off",
        "--timeout",
        "30",
        *(flag for vuln_id in ignore for flag in ("--ignore-vuln", vuln_id)),
        *args,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603 - our venv's pip-audit
    try:
        report = json.loads(result.stdout)
    except ValueError:
        sys.stderr.write(result.stderr)
        raise SystemExit(f"audit: pip-audit failed on {label} (exit {result.returncode})") from None
    return summarise(label, report)


def main() -> int:
    ignore = ignored_ids()
    reports = [
        pip_audit(
            "the functions' requirements",
            ["--disable-pip", "--no-deps", "-r", str(REQUIREMENTS)],
            ignore,
        ),
        pip_audit("the installed environment", ["--skip-editable"], ignore),
    ]
    for report in reports:
        print(
            f"audit: {report.label}: {len(report.audited)} audited, "
            f"{len(report.findings)} known vulnerabilities, {len(report.skipped)} not audited"
        )
        for finding in report.findings:
            print(f"  VULNERABLE {finding}")
    if ignore:
        print(f"audit: accepted for now (scripts/audit-ignore.txt): {', '.join(ignore)}")
    if any(report.findings for report in reports):
        print("audit: FAILED: upgrade, or accept with a reason (docs/SECURITY.md, Dependencies)")
        return 1
    if not any(report.audited for report in reports):
        message = (
            "audit: WARNING: nothing could be audited: PyPI's vulnerability data (its "
            "per-release JSON API) did not answer for any dependency"
        )
        print(message, file=sys.stderr)
        return 1 if os.environ.get("AUDIT_STRICT") == "1" else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
