"""The functions' asset, built without Docker: pip installs for the Lambda platform, the
package is copied next to it, and all is compiled to unchecked-hash bytecode by an interpreter
of the runtime's version when this machine has one (Lambda's /var/task is read-only: without
``.pyc`` files every cold start compiles its imports; bench/coldstart.py).

The asset hash comes from exactly what goes in (the package's files, the requirements, the
pip arguments): a changed input redeploys, an unchanged one never does.
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
PYTHON_VERSION = "3.12"
RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64
# Lambda's python3.12+ runtimes run on Amazon Linux 2023 (glibc 2.34): both tags fit.
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
# Not needed at run time: the operator commands, the local runtime (moto), the CLI and the
# vendored XSDs. tests/infra/test_bundling.py imports the handlers from the asset alone.
LEFT_OUT = ("ops", "local", "schemas", "cli.py")


def package_files(source: Path) -> Iterator[Path]:
    root = source / PACKAGE
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        cache = "__pycache__" in parts or path.suffix in {".pyc", ".pyo"}
        if path.is_file() and parts[0] not in LEFT_OUT and not cache:
            yield path


def copy_package(source: Path, output_dir: Path) -> None:
    for path in package_files(source):
        destination = output_dir / PACKAGE / path.relative_to(source / PACKAGE)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)


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


def runtime_interpreter() -> str | None:
    """A Python of the runtime's version on this machine (to compile the asset), if any."""
    candidates = [
        sys.executable,
        shutil.which(f"python{PYTHON_VERSION}"),
        *map(str, sorted(Path.home().glob(f".pyenv/versions/{PYTHON_VERSION}.*/bin/python3"))),
    ]
    for candidate in filter(None, candidates):
        found = subprocess.run(  # noqa: S603 - an interpreter asked for its version
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if found.returncode == 0 and found.stdout.strip() == PYTHON_VERSION:
            return candidate
    return None


def asset_hash(source: Path) -> str:
    if not (source / REQUIREMENTS).is_file():
        raise FileNotFoundError(
            f"{source / REQUIREMENTS} not found: build from a checkout of sitemap-updater "
            "(pip install -e 'PATH[infra]'), or pass code= to SitemapUpdater"
        )
    digest = hashlib.sha256()
    digest.update(" ".join(pip_arguments(Path(REQUIREMENTS), "out")[3:]).encode())
    digest.update((source / REQUIREMENTS).read_bytes())
    digest.update(b"compiled" if runtime_interpreter() else b"sources only")
    for path in package_files(source):
        digest.update(str(path.relative_to(source)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class PipBundling:
    def __init__(self, source: Path):
        self.source = source

    def try_bundle(self, output_dir: str, *_options: object, **_keywords: object) -> bool:
        subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
            pip_arguments(self.source / REQUIREMENTS, output_dir), check=True
        )
        copy_package(self.source, Path(output_dir))
        interpreter = runtime_interpreter()
        if interpreter is None:
            print(
                f"warning: no Python {PYTHON_VERSION} on this machine: the function asset has "
                "no bytecode, and every cold start compiles what it imports",
                file=sys.stderr,
            )
        else:
            options = ("-q", "-j", "0", "--invalidation-mode", "unchecked-hash")
            subprocess.run([interpreter, "-m", "compileall", *options, output_dir], check=True)  # noqa: S603
        return True


def function_code(source: Path = FUNCTIONS_DIR) -> lambda_.Code:
    """The one asset of all the functions."""
    return lambda_.Code.from_asset(
        str(source),
        asset_hash=asset_hash(source),
        asset_hash_type=AssetHashType.CUSTOM,
        bundling=BundlingOptions(
            # Never pulled: local bundling always succeeds or raises.
            image=DockerImage.from_registry(f"public.ecr.aws/sam/build-python{PYTHON_VERSION}"),
            local=PipBundling(source),
        ),
    )
