"""Prompts for a workload, reproducible from ``(seed, index)``.

With a tokenizer (``transformers.AutoTokenizer``, imported only here and only when asked for) a
prompt has exactly the sampled number of tokens; without one it is that many random common words
(about one token each for BPE vocabularies). The random part differs per request, so no request
hits the prefix cache by accident; ``shared_prefix_fraction`` of each prompt is a fixed sequence
(the same for all requests of a seed) to measure prefix caching on purpose. A workload with an
``edit_instruction`` sends that instruction and an English passage instead (loadtest.passages), rendered
through the tokenizer's chat template when it has one: answers that copy from the prompt.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any

from loadtest.errors import LoadtestInputError
from loadtest.passages import passage
from loadtest.workload import DEFAULT_REPLAY_OUTPUT, Workload

_WORDS = (
    "the of and to in is it you that he was for on are as with his they at be this have from or one had by "
    "word but not what all were we when your can said there use an each which she do how their if will up "
    "other about out many then them these so some her would make like him into time has look two more write "
    "go see number no way could people my than first water been call who oil its now find long down day did "
    "get come made may part over new sound take only little work know place year live me back give most very "
    "after thing our just name good sentence man think say great where help through much before line right "
    "too mean old any same tell boy follow came want show also around form three small set put end does "
    "another well large must big even such because turn here why ask went men read need land different home "
    "us move try kind hand picture again change off play spell air away animal house point page letter "
    "mother answer found study still learn should world high every near add food between own below country "
    "plant last school father keep tree never start city earth eye light thought head under story saw left "
    "few while along might close something seem next hard open example begin life always those both paper"
).split()


def prompt_vocabulary(tokenizer: Any) -> list[int]:
    """The token ids random prompts are drawn from: every id but the special ones, and but the longest
    token strings when the vocabulary has shorter ones. vLLM rejects, before tokenizing, a prompt of more
    characters than (max_model_len − max_tokens) × its longest token string (``renderers/params.py``,
    0.26 and 0.32); a whitespace-split vocabulary (the synthetic ``w0 … wN``) puts a space between tokens,
    so random prompts of its longest tokens exceed that bound near max_model_len (on the H200, longdoc's
    ~7.9k-token prompts drew HTTP 400s from the Llama-3-8B-shaped model). Tokens shorter than the longest
    keep every prompt within it, spaces included."""
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    vocab = {t: i for t, i in tokenizer.get_vocab().items() if i not in special}
    longest = max((len(t) for t in vocab), default=0)
    shorter = sorted(i for t, i in vocab.items() if len(t) < longest)
    return shorter or sorted(vocab.values())


@dataclass(frozen=True)
class PromptSpec:
    """One request's content: ``prompt`` (completions) or ``messages`` (chat), and its lengths."""

    prompt: str | None
    messages: list[dict[str, str]] | None
    input_tokens: int | None
    output_tokens: int


@functools.lru_cache(maxsize=8)
def load_tokenizer(name_or_path: str) -> Any:
    """``AutoTokenizer.from_pretrained`` (lazy import), loaded once per process (the tuner measures many
    levels with one tokenizer); a clear input error when it cannot load."""
    try:
        from transformers import AutoTokenizer
    except ImportError as e:  # pragma: no cover - transformers is a dependency
        raise LoadtestInputError(f"--tokenizer needs the transformers package: {e}") from None
    try:
        return AutoTokenizer.from_pretrained(name_or_path)
    except Exception as e:  # noqa: BLE001 - any loading failure is bad input here
        raise LoadtestInputError(
            f"cannot load tokenizer {name_or_path!r}: {type(e).__name__}: {str(e)[:200]}; "
            "give --tokenizer a local model directory, or leave it out for approximate lengths"
        ) from None


class PromptFactory:
    """``make(i)`` → the i-th request of a run, the same for the same seed."""

    def __init__(
        self,
        workload: Workload,
        *,
        seed: int = 0,
        tokenizer: Any = None,
        output_tokens: int | None = None,
        chat: bool = False,
    ) -> None:
        self.w = workload
        self.seed = seed
        self.tok = tokenizer
        self.output_override = output_tokens
        self.chat = chat
        self._vocab: list[int] = []
        self._sys_tokens = 0
        self._prefix: list[Any] = []
        if tokenizer is not None:
            self._vocab = prompt_vocabulary(tokenizer)
        if workload.system_prompt:
            self._sys_tokens = self._count(workload.system_prompt)
        if workload.input_tokens is not None and workload.shared_prefix_fraction > 0:
            rng = random.Random(f"{seed}:prefix")
            n = int(workload.input_tokens.max * workload.shared_prefix_fraction)
            self._prefix = self._random_units(rng, n)

    def _count(self, text: str) -> int:
        if self.tok is not None:
            return len(self.tok.encode(text, add_special_tokens=False))
        return len(text.split())

    def _random_units(self, rng: random.Random, n: int) -> list[Any]:
        if self.tok is not None:
            return [rng.choice(self._vocab) for _ in range(n)]
        return [rng.choice(_WORDS) for _ in range(n)]

    def _body(self, rng: random.Random, n: int) -> tuple[str, int]:
        shared = self._prefix[: int(n * self.w.shared_prefix_fraction)]
        units = shared + self._random_units(rng, n - len(shared))
        if self.tok is None:
            return " ".join(units), n
        return self._exact(rng, units, n)

    def _exact(self, rng: random.Random, ids: list[int], n: int) -> tuple[str, int]:
        """Decode, re-encode, trim or top up until the text is exactly ``n`` tokens (≤ 8 rounds)."""
        text, got = "", 0
        for _ in range(8):
            text = self.tok.decode(ids)
            enc = self.tok.encode(text, add_special_tokens=False)
            got = len(enc)
            if got == n:
                break
            ids = enc[:n] if got > n else enc + self._random_units(rng, n - got)
        return text, got

    def _edit(self, rng: random.Random, n: int) -> tuple[str, list[dict[str, str]]]:
        """The instruction and a passage of about ``n`` tokens in all; the text and its chat messages."""
        instruction = self.w.edit_instruction or ""
        n_text = max(8, n - self._count(instruction) - 2)
        text = passage(rng, n_text)
        if self.tok is not None:  # trim to the token count (a passage has at least as many tokens as words)
            text = self.tok.decode(self.tok.encode(text, add_special_tokens=False)[:n_text])
        sys = self.w.system_prompt
        body = f"{instruction}\n\n{text}"
        msgs = ([{"role": "system", "content": sys}] if sys else []) + [{"role": "user", "content": body}]
        if self.tok is not None and getattr(self.tok, "chat_template", None):
            return self.tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True), msgs
        return (f"{sys}\n{body}" if sys else body), msgs

    def _output(self, rng: random.Random, entry_out: int | None = None, reference: str | None = None) -> int:
        if self.output_override is not None:
            return self.output_override
        if entry_out is not None:
            return entry_out
        if reference:
            return max(1, self._count(reference) if self.tok is not None else len(reference) // 4)
        if self.w.output_tokens is not None:
            return self.w.output_tokens.sample(rng)
        return DEFAULT_REPLAY_OUTPUT

    def make(self, i: int) -> PromptSpec:
        rng = random.Random(f"{self.seed}:{i}")
        if self.w.entries:
            e = self.w.entries[i % len(self.w.entries)]
            out = self._output(rng, e.output_tokens, e.reference_output)
            msgs = [{"role": r, "content": c} for r, c in e.messages] if e.messages else None
            if e.prompt is not None and self.chat:
                msgs = [{"role": "user", "content": e.prompt}]
            n_in = self._count(e.prompt) if e.prompt is not None and self.tok is not None else None
            return PromptSpec(e.prompt, msgs, n_in, out)
        assert self.w.input_tokens is not None
        n = self.w.input_tokens.sample(rng)
        out = self._output(rng)
        if self.w.edit_instruction is not None:
            text, msgs = self._edit(rng, n)
            if self.chat:
                return PromptSpec(None, msgs, None, out)
            return PromptSpec(text, None, self._count(text), out)
        body, got = self._body(rng, max(1, n - self._sys_tokens))
        sys = self.w.system_prompt
        total = got + self._sys_tokens
        if self.chat:
            msgs = ([{"role": "system", "content": sys}] if sys else []) + [{"role": "user", "content": body}]
            return PromptSpec(None, msgs, total, out)
        return PromptSpec(f"{sys}\n{body}" if sys else body, None, total, out)
