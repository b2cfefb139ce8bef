"""The function asset without Docker: pip for the Lambda platform, then the package. One test
bundles for real (it downloads the pinned wheels); the others check the asset hash and that
the handlers import from the package's part of the asset alone."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from sitemap_infra.bundling import (
    FUNCTIONS_DIR,
    LEFT_OUT,
    PACKAGE,
    PYTHON_VERSION,
    PipBundling,
    asset_hash,
    copy_package,
    function_code,
    package_files,
    runtime_interpreter,
)
from sitemap_updater.resources import RECONCILE, functions_for
from tests.infra.conftest import NO_BUNDLING, SITE, synthesize

NOT_AT_RUN_TIME = ("ops", "local", "cli")
# Run in `python -I -S`: no PYTHONPATH, no working directory, no .pth files (so not the
# editable install either); only the asset, the standard library and the third-party packages.
IMPORT_HANDLERS = """
import importlib, importlib.util, json, sys
asset, site_packages, handlers, left_out = json.loads(sys.argv[1])
sys.path[:0] = [asset]
sys.path.append(site_packages)
for handler in handlers:
    module, function = handler.rsplit(".", 1)
    assert callable(getattr(importlib.import_module(module), function)), handler
import sitemap_updater
print(json.dumps({
    "package": sitemap_updater.__file__,
    "path": sys.path,
    "modules": sorted(name for name in sys.modules if name.startswith("sitemap_updater")),
    "editable": [name for name in sys.modules if "editable" in name],
    "importable": [n for n in left_out if importlib.util.find_spec(f"sitemap_updater.{n}")],
}))
"""


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A copy of functions/ to edit."""
    copy = tmp_path / "functions"
    shutil.copytree(FUNCTIONS_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return copy


def _s3_key(source: Path) -> str:
    app = App(context=NO_BUNDLING)
    stack = Stack(app, "S")
    lambda_.Function(
        stack,
        "F",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="sitemap_updater.handlers.ingest.handler",
        code=function_code(source),
    )
    (function,) = Template.from_stack(stack).find_resources("AWS::Lambda::Function").values()
    return str(function["Properties"]["Code"]["S3Key"])


def test_the_asset_hash_follows_the_dependency_list(source: Path) -> None:
    before = asset_hash(source)
    key = _s3_key(source)
    assert before == asset_hash(source)  # stable
    requirements = source / "requirements.txt"
    requirements.write_text(requirements.read_text().replace("pydantic==", "pydantic==2.99.0\n#"))
    assert asset_hash(source) != before
    assert _s3_key(source) != key


def test_the_asset_hash_follows_the_code_but_not_caches(source: Path) -> None:
    before = asset_hash(source)
    (source / PACKAGE / "__pycache__").mkdir(exist_ok=True)
    (source / PACKAGE / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (source / PACKAGE / "local" / "scratch.py").write_text("# not in the asset\n")
    assert asset_hash(source) == before
    (source / PACKAGE / "settings.py").write_text("# changed\n", encoding="utf-8")
    assert asset_hash(source) != before


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_bundles_for_the_lambda_platform_without_docker(tmp_path: Path) -> None:
    out = tmp_path / "asset"
    out.mkdir()
    assert PipBundling(FUNCTIONS_DIR).try_bundle(str(out)) is True
    tag = f"cpython-{PYTHON_VERSION.replace('.', '')}-aarch64-linux-gnu"
    assert list((out / "pydantic_core").glob(f"_pydantic_core.{tag}.so"))
    package = out / PACKAGE
    for name in ("aws_lambda_powertools", "pydantic", "boto3", "botocore"):
        assert (out / name / "__init__.py").is_file(), name
    assert not (out / "aws_xray_sdk").exists()  # no X-Ray SDK: its import cost a cold start
    # Compiled for the runtime's Python (Lambda cannot write bytecode at run time), by
    # compileall rather than pip: pip's own interpreter may be another version.
    interpreter = runtime_interpreter()
    magic = f"cpython-{PYTHON_VERSION.replace('.', '')}.pyc"
    handler_bytecode = package / "handlers" / "__pycache__" / f"ingest.{magic}"
    if interpreter is not None:
        assert handler_bytecode.is_file()
        assert list((out / "botocore" / "__pycache__").glob(f"client.{magic}"))
        assert not [p for p in out.rglob("*.pyc") if not p.name.endswith(magic)]
    else:
        assert not list(out.rglob("*.pyc"))
    for left_out in LEFT_OUT:
        assert not (package / left_out).exists()
    assert (package / "assets" / "sitemap.xsl").is_file()  # the human view, read at run time
    # Every sitemap_updater module the handlers import (transitively) is in the asset.
    seen: set[str] = set()
    todo = [spec.handler.rsplit(".", 1)[0] for spec in (*functions_for(indexnow=True), RECONCILE)]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        relative = Path(*module.split("."))
        path = out / relative.with_suffix(".py")
        if not path.is_file():
            path = out / relative / "__init__.py"
        assert path.is_file(), f"{module} is imported but not in the asset"
        todo += [m for m in _imports(path) if m.split(".")[0] == PACKAGE]
    assert f"{PACKAGE}.handlers.ingest" in seen


def test_the_handlers_import_from_the_asset_without_operator_code(tmp_path: Path) -> None:
    """The asset leaves out the operator commands, the local runtime and the CLI, and the
    handlers the stack deploys import without them."""
    listed = [str(p.relative_to(FUNCTIONS_DIR / PACKAGE)) for p in package_files(FUNCTIONS_DIR)]
    for name in NOT_AT_RUN_TIME:
        assert not [p for p in listed if p.split("/")[0] in (name, f"{name}.py")], name
    template = synthesize(site_url=SITE, indexnow_key="f0e1d2c3b4a5968778695a4b3c2d1e0f").json
    handlers = sorted(
        {
            resource["Properties"]["Handler"]
            for resource in template["Resources"].values()
            if resource["Type"] == "AWS::Lambda::Function"
        }
    )
    assert {spec.handler for spec in (*functions_for(indexnow=True), RECONCILE)} == set(handlers)
    copy_package(FUNCTIONS_DIR, tmp_path)
    arguments = [str(tmp_path), sysconfig.get_paths()["purelib"], handlers, NOT_AT_RUN_TIME]
    run = subprocess.run(
        [sys.executable, "-I", "-S", "-c", IMPORT_HANDLERS, json.dumps(arguments)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    # The package comes from the asset and from nowhere else on the path.
    assert Path(found["package"]).is_relative_to(tmp_path)
    elsewhere = [Path(p) for p in found["path"] if Path(p) != tmp_path]
    assert not [p for p in elsewhere if (p / PACKAGE).exists() or (p / f"{PACKAGE}.py").exists()]
    assert found["editable"] == []
    assert found["importable"] == []
    assert {handler.rsplit(".", 1)[0] for handler in handlers} <= set(found["modules"])
    submodules = {module.split(".")[1] for module in found["modules"] if "." in module}
    assert not submodules & set(NOT_AT_RUN_TIME)
