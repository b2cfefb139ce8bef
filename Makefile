# Two commands for a fresh clone (each sets itself up: virtualenv, packages, system tools):
#   make local   run the whole pipeline on the embedded moto stack over events/ -> site/
#   make test    lint, type-check and run every test (what CI runs, via .ci/run)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
SITE_URL ?= https://www.example.com

.PHONY: local test lint typecheck pytest system-deps clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
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

pytest: $(STAMP) system-deps
	$(BIN)/pytest

test: lint typecheck pytest

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .hypothesis
