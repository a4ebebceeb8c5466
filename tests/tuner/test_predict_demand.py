"""The performance model's prompts are as long as loadtest's: a chat template's tokens, which loadtest's edit
prompts carry and the workload's sampled lengths do not, are measured with the study's tokenizer and added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadtest.prompts import PromptFactory, load_tokenizer
from loadtest.workload import load_workload
from perfmodel.traffic import requests_of
from tuner.search.predict_demand import OVERHEAD_SAMPLE, prompt_overhead
from tuner.synthetic import write_tokenizer

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")


def tokenizer_dir(tmp_path: Path, template: str | None) -> str:
    """A WordLevel tokenizer of 4,096 words; ``template``: its chat template (None: none)."""
    write_tokenizer(tmp_path, 4096)
    cfg_path = tmp_path / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.pop("chat_template", None)
    if template is not None:
        cfg["chat_template"] = template
    cfg_path.write_text(json.dumps(cfg))
    return str(tmp_path)


def tokenized_extra(workload_name: str, tokenizer: str) -> list[int]:
    """Each sampled prompt's tokens as the tokenizer itself counts the text loadtest sends, less its sampled length."""
    w = load_workload(workload_name)
    tok = load_tokenizer(tokenizer)
    factory = PromptFactory(w, seed=0, tokenizer=tok)
    sampled = requests_of(w, 0, OVERHEAD_SAMPLE)
    texts = [factory.make(i).prompt for i in range(OVERHEAD_SAMPLE)]
    return [len(tok.encode(t, add_special_tokens=False)) - r.prompt_tokens for t, r in zip(texts, sampled, strict=True)]


def test_an_edit_prompt_through_a_chat_template_carries_the_templates_tokens(tmp_path):
    tok = tokenizer_dir(tmp_path, "{% for m in messages %}w1 w2 w3 {{ m['content'] }} {% endfor %}w4 w5")
    extra = sorted(tokenized_extra("edit", tok))
    assert extra[len(extra) // 2] > 0  # the template's 5 words, on a passage built a little under its length
    assert prompt_overhead(load_workload("edit"), tok) == round(extra[len(extra) // 2])


def test_without_a_template_or_a_tokenizer_there_is_none(tmp_path):
    assert prompt_overhead(load_workload("edit"), tokenizer_dir(tmp_path, None)) == 0
    assert prompt_overhead(load_workload("edit"), None) == 0


def test_chat_prompts_are_built_to_their_exact_length(tmp_path):
    tok = tokenizer_dir(tmp_path, "{% for m in messages %}w1 w2 w3 {{ m['content'] }} {% endfor %}w4 w5")
    assert prompt_overhead(load_workload("chat"), tok) == 0
    assert max(abs(x) for x in tokenized_extra("chat", tok)) <= 1
