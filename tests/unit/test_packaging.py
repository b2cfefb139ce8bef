"""The function asset installs functions/requirements.txt; the project declares the same
packages in pyproject.toml. Both lists must name the same packages (with the same extras),
and the asset's list must pin each one, so a deployment is reproducible."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def _names(requirements: list[str]) -> dict[str, set[str]]:
    parsed = [Requirement(line) for line in requirements]
    return {canonicalize_name(r.name): set(r.extras) for r in parsed}


def asset_requirements() -> list[str]:
    lines = (ROOT / "functions" / "requirements.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_asset_requirements_name_the_project_dependencies() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert _names(asset_requirements()) == _names(project)


def test_asset_requirements_are_pinned_within_the_project_ranges() -> None:
    project = {
        canonicalize_name(r.name): r
        for r in map(
            Requirement,
            tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"],
        )
    }
    for line in asset_requirements():
        pinned = Requirement(line)
        (spec,) = pinned.specifier
        assert spec.operator == "==", f"{line} is not pinned"
        assert project[canonicalize_name(pinned.name)].specifier.contains(spec.version), line
