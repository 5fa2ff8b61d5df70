# replaygate: `make demo` runs the main job on the embedded store; `make test` runs lint, types and tests.
SHELL := /bin/bash
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
RUN := $(UV) run --locked
# two workers (the CI machine has 2 cores); a test file stays on one worker, in order
PYTEST_ARGS ?= -n 2 --dist loadfile

.PHONY: help uv sync demo test lint typecheck pytest bench clean

help:
	@echo "make demo   - run the support agent, capture, promote, replay, gate, canary (embedded SQLite)"
	@echo "make test   - ruff, mypy --strict on the three parts, pytest"
	@echo "make lint   - ruff and mypy only"
	@echo "make bench  - benchmarks in bench/ (ratios from one run)"

uv:
	@command -v uv >/dev/null 2>&1 || $(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv

sync: uv
	@$(UV) sync --locked --quiet

demo: sync
	$(RUN) python -m examples.demo $(DEMO_ARGS)

lint: sync
	$(RUN) ruff check .
	$(RUN) ruff format --check .
	$(RUN) mypy instrumentation/src replay/src src

typecheck: lint

pytest: sync
	$(RUN) pytest $(PYTEST_ARGS)

test: lint pytest

bench: sync
	@for b in bench/*.py; do echo "== $$b"; $(RUN) python $$b || exit 1; done

clean:
	rm -rf .replaygate .pytest_cache .mypy_cache .ruff_cache
