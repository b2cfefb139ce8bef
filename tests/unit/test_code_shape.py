"""Small pieces: no function of the production code is longer than a reader can hold."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 60


def long_functions() -> list[str]:
    found = []
    for folder in ("functions", "infra"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "node_modules" in path.parts or "cdk.out" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > MAX_LINES:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} {lines}")
    return found


def test_no_function_is_longer_than_sixty_lines() -> None:
    assert long_functions() == []
