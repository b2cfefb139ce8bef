"""The functions' asset, built without Docker: CDK's local bundling hook runs pip for the
Lambda platform (``--platform manylinux2014_aarch64 --only-binary=:all:``) and copies the
package next to what it installed.

The asset hash is computed here from exactly what goes in: the package's files,
``functions/requirements.txt`` and the pip arguments. A changed dependency list (or code, or
target platform) gives a new hash and so a new deployment; an unchanged one never does,
whatever pip's output looks like on the day.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

import sitemap_updater

# functions/ of the checkout the package is imported from (an editable install).
FUNCTIONS_DIR = Path(sitemap_updater.__file__).resolve().parents[1]
PACKAGE = "sitemap_updater"
REQUIREMENTS = "requirements.txt"
PYTHON_VERSION = "3.14"
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
# Lambda's python3.12+ runtimes run on Amazon Linux 2023 (glibc 2.34): both tags fit.
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
# Not needed at run time: the local runtime (moto), the CLI and the vendored XSDs.
LEFT_OUT = ("local", "schemas", "cli.py")


def package_files(source: Path) -> Iterator[Path]:
    """The package's files that go into the asset, in a stable order."""
    root = source / PACKAGE
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if not path.is_file() or relative.parts[0] in LEFT_OUT:
            continue
        if "__pycache__" in relative.parts or path.suffix in {".pyc", ".pyo"}:
            continue
        yield path


def pip_arguments(requirements: Path, target: str) -> list[str]:
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    return [
        sys.executable, "-m", "pip", "install",
        "--quiet", "--disable-pip-version-check", "--no-input",
        *platforms,
        "--only-binary=:all:",
        "--implementation", "cp",
        "--python-version", PYTHON_VERSION,
        "--no-compile",
        "--target", target,
        "--requirement", str(requirements),
    ]  # fmt: skip


def asset_hash(source: Path) -> str:
    if not (source / REQUIREMENTS).is_file():
        raise FileNotFoundError(
            f"{source / REQUIREMENTS} not found: build from a checkout of sitemap-updater "
            "(pip install -e 'PATH[infra]'), or pass code= to SitemapUpdater"
        )
    digest = hashlib.sha256()
    digest.update(" ".join(pip_arguments(Path(REQUIREMENTS), "out")[3:]).encode())
    digest.update((source / REQUIREMENTS).read_bytes())
    for path in package_files(source):
        digest.update(str(path.relative_to(source)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class PipBundling:
    """Local bundling: ``pip install`` for the Lambda platform, then the package itself."""

    def __init__(self, source: Path):
        self.source = source

    def try_bundle(self, output_dir: str, *_options: object, **_keywords: object) -> bool:
        """CDK calls this with the BundlingOptions (unused: everything is decided here)."""
        subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
            pip_arguments(self.source / REQUIREMENTS, output_dir), check=True
        )
        target = Path(output_dir) / PACKAGE
        for path in package_files(self.source):
            destination = target / path.relative_to(self.source / PACKAGE)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)
        return True


def function_code(source: Path = FUNCTIONS_DIR) -> lambda_.Code:
    """The one asset of the three functions."""
    return lambda_.Code.from_asset(
        str(source),
        asset_hash=asset_hash(source),
        asset_hash_type=AssetHashType.CUSTOM,
        bundling=BundlingOptions(
            # Never pulled: local bundling always succeeds or raises.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
            local=PipBundling(source),
        ),
    )
