# Two commands for a fresh clone (each sets itself up: virtualenv, packages, system tools):
#   make local   run the whole pipeline on the embedded moto stack over events/ -> site/
#   make test    lint, type-check, audit dependencies, run every test and an offline cdk synth
#                checked by cdk-nag and cfn-lint
#                (what CI runs, via .ci/run)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
CDK_STAMP := infra/node_modules/.installed
SITE_URL ?= https://www.example.com
# The CDK CLI is pinned in infra/package.json; the app runs on the project's virtualenv.
CDK := cd infra && PATH="$(abspath $(BIN)):$$PATH" JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 \
	./node_modules/.bin/cdk

.PHONY: local test lint typecheck audit pytest synth bench system-deps clean

# The functions' packages at the versions the asset ships (functions/requirements.txt), so that
# the tests run what is deployed; the tools around them resolve freely.
$(STAMP): pyproject.toml functions/requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,infra]' -c functions/requirements.txt
	touch $@

$(CDK_STAMP): infra/package.json infra/package-lock.json
	npm ci --prefix infra --no-audit --no-fund --loglevel=error
	touch $@

system-deps:
	./scripts/system-deps

local: $(STAMP)
	$(BIN)/sitemap-updater local events/ --site-url $(SITE_URL) --out site/

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# Known vulnerabilities in the functions' pinned requirements and the installed environment
# (pip-audit, PyPI's vulnerability data; see scripts/audit.py and docs/SECURITY.md).
audit: $(STAMP)
	$(BIN)/python scripts/audit.py

pytest: $(STAMP) system-deps
	$(BIN)/pytest -n 2 --dist worksteal

# `cdk synth` offline (no Docker, no AWS credentials), bundling the function asset for real,
# with cdk-nag failing the synth on any unacknowledged finding; then cfn-lint on the template,
# failing on any error or warning (rules are ignored only in the code, each with its reason).
synth: $(STAMP) $(CDK_STAMP)
	$(CDK) synth -c site_url=$(SITE_URL) --quiet
	$(BIN)/cfn-lint infra/cdk.out/SitemapUpdater.template.json

# The checks and the synth side by side (mypy and the synth on the two cores, the audit mostly
# waiting on the network, apt-get on its mirror), then the tests on both cores.
test:
	$(MAKE) --no-print-directory -j4 --output-sync=target lint typecheck audit synth system-deps
	$(MAKE) --no-print-directory pytest

# Render speed against sitemap.js, AWS work per event and in a burst, cold start: one table
# each (a printout; docs/PERFORMANCE.md records a run). Several minutes.
bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .hypothesis infra/node_modules infra/cdk.out bench/.cache bench/node/node_modules
