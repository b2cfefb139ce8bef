"""The dependency audit ``make test`` runs (scripts/audit.py, docs/SECURITY.md): it fails on
a known vulnerability, accepts one only with a reason, and says when nothing was audited."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("audit", ROOT / "scripts" / "audit.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["audit"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


audit = _load()
CLEAN = {"dependencies": [{"name": "boto3", "version": "1.44.5", "vulns": []}], "fixes": []}
VULNERABLE = {
    "dependencies": [
        {"name": "boto3", "version": "1.44.5", "vulns": []},
        {
            "name": "urllib3",
            "version": "1.26.4",
            "vulns": [{"id": "PYSEC-2021-108", "fix_versions": ["1.26.5"], "aliases": ["CVE-1"]}],
        },
    ],
    "fixes": [],
}
UNREACHABLE = {"dependencies": [{"name": "boto3", "skip_reason": "not found on PyPI"}]}


def fake_pip_audit(monkeypatch: pytest.MonkeyPatch, *reports: dict[str, Any]) -> list[list[str]]:
    """pip-audit answering with ``reports`` in turn; returns the commands it was given."""
    commands: list[list[str]] = []
    answers = iter(reports)

    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        report = next(answers)
        vulnerable = any(d.get("vulns") for d in report["dependencies"])
        return subprocess.CompletedProcess(command, int(vulnerable), json.dumps(report), "")

    monkeypatch.setattr(audit.subprocess, "run", run)
    monkeypatch.setattr(audit, "IGNORE_FILE", Path("/nonexistent"))
    return commands


def test_make_test_runs_the_audit_on_the_functions_and_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    makefile = (ROOT / "Makefile").read_text()
    planned = subprocess.run(  # what `make test` would run (-n: printed, not run)
        ["make", "-n", "--no-print-directory", "test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".venv/bin/python scripts/audit.py" in planned
    assert re.search(r"^audit:.*\n\t\$\(BIN\)/python scripts/audit\.py$", makefile, re.MULTILINE)
    assert "pip-audit" in (ROOT / "pyproject.toml").read_text()
    commands = fake_pip_audit(monkeypatch, CLEAN, CLEAN)
    assert audit.main() == 0
    requirements, environment = commands
    assert requirements[-1] == str(ROOT / "functions" / "requirements.txt")
    assert "--skip-editable" in environment
    assert capsys.readouterr().out.count("1 audited, 0 known vulnerabilities, 0 not audited") == 2


def test_a_known_vulnerability_fails_the_audit_and_names_the_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_pip_audit(monkeypatch, CLEAN, VULNERABLE)
    assert audit.main() == 1
    out = capsys.readouterr().out
    assert "VULNERABLE urllib3 1.26.4: PYSEC-2021-108 (CVE-1); fixed in 1.26.5" in out
    assert "FAILED" in out


def test_an_accepted_vulnerability_needs_a_reason(tmp_path: Path) -> None:
    accepted = tmp_path / "audit-ignore.txt"
    accepted.write_text("# comment\nPYSEC-2021-108  no untrusted redirects here; 2027-01\n")
    assert audit.ignored_ids(accepted) == ["PYSEC-2021-108"]
    accepted.write_text("GHSA-xxxx-yyyy-zzzz\n")
    with pytest.raises(SystemExit, match="needs a reason"):
        audit.ignored_ids(accepted)


def test_accepted_ids_are_passed_to_pip_audit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    commands = fake_pip_audit(monkeypatch, CLEAN, CLEAN)
    accepted = tmp_path / "audit-ignore.txt"
    accepted.write_text("PYSEC-2021-108  not reachable from our code\n")
    monkeypatch.setattr(audit, "IGNORE_FILE", accepted)
    assert audit.main() == 0
    assert all("--ignore-vuln" in c and "PYSEC-2021-108" in c for c in commands)


def test_nothing_audited_is_a_warning_or_with_audit_strict_an_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_pip_audit(monkeypatch, UNREACHABLE, UNREACHABLE)
    assert audit.main() == 0
    assert "nothing could be audited" in capsys.readouterr().err
    fake_pip_audit(monkeypatch, UNREACHABLE, UNREACHABLE)
    monkeypatch.setenv("AUDIT_STRICT", "1")
    assert audit.main() == 1
