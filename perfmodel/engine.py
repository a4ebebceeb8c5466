"""vLLM v1's scheduler, step by step (``v1/core/sched/scheduler.py::schedule``, FCFS policy).

One step: (1) the running requests, in admission order: decodes take one token each, partial prefills the
rest of the token budget (``max_num_batched_tokens``); when their new KV blocks do not fit, the last
admitted running request is preempted (its blocks freed, recomputed later; prefix caching may give them
back); (2) only if nothing was preempted, waiting requests are admitted in order while the token budget,
``max_num_seqs`` and free blocks allow: prefix-cache hits first, then their prompt (all of it without
chunked prefill, where a prompt over the remaining budget waits). A request whose prompt completes in a
step emits a token at its end.

Decoding requests are kept in aggregate so that a step costs O(admissions + completions), not O(batch):
all of them advance one token per step, so a request finishes at a known decode tick and needs a new
block every ``block_size`` ticks (a bucket per tick residue).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass

from perfmodel.config import EngineConfig
from perfmodel.costs import Costs
from perfmodel.kvcache import BlockPool


@dataclass(frozen=True)
class Step:
    duration_s: float
    first: tuple[int, ...]  # requests whose first token came out of this step
    done: tuple[int, ...]  # requests that finished in this step
    tokens: int  # tokens emitted (streamed) by this step
    seqs: int  # sequences the step ran (vLLM's num_requests_running while it ran)


class Engine:
    """Requests go in with ``add``; ``step`` schedules and times one step (None when there is nothing to do)."""

    def __init__(self, cfg: EngineConfig, costs: Costs) -> None:
        self.cfg, self.costs = cfg, costs
        self.pool = BlockPool(cfg.num_blocks, cfg.block_size, cfg.prefix_caching)
        self.key: list[Hashable] = []
        self.prompt: list[int] = []
        self.out: list[int] = []
        self.generated: list[int] = []
        self.computed: list[int] = []
        self.blocks: list[int] = []
        self.dec: dict[int, tuple[int, int]] = {}  # decoding request -> (computed at entry c0, first tick g0)
        self.waiting: deque[int] = deque()
        self.running: dict[int, None] = {}  # admission order; preemption takes the last
        self.partial: dict[int, None] = {}  # running requests still prefilling
        self.bucket = [0] * cfg.block_size  # decoding requests needing a block at ticks ≡ residue
        self.dec_sum = 0  # Σ (c0 − g0) over decoding requests: context at tick t = dec_sum + len(dec)·t
        self.finishes: list[tuple[int, int]] = []  # (last tick, request)
        self.tick = 0  # index of the next decode step
        self.preemptions = 0
        self.hit_tokens = 0
        self.queried_tokens = 0

    def add(self, key: Hashable, prompt_tokens: int, output_tokens: int) -> int:
        rid = len(self.prompt)
        self.key.append(key)
        self.prompt.append(prompt_tokens)
        self.out.append(output_tokens)
        self.generated.append(0)
        self.computed.append(0)
        self.blocks.append(0)
        self.waiting.append(rid)
        return rid

    @property
    def busy(self) -> bool:
        return bool(self.running or self.waiting)

    def step(self) -> Step | None:
        due_residue = self.tick % self.cfg.block_size
        due = self.bucket[due_residue]
        preempted = False
        while due > self.pool.free:  # decodes crossing a block boundary: preempt from the tail until they fit
            due -= self._preempt_last(due_residue)
            preempted = True
        self.pool.grow(due)
        budget = self.cfg.max_num_batched_tokens - len(self.dec)
        chunks: list[tuple[int, int]] = []
        for rid in list(self.partial) if self.partial else ():
            if budget <= 0 or rid not in self.partial:
                break
            n = min(self.prompt[rid] + self.generated[rid] - self.computed[rid], budget)
            extra = self.pool.blocks_for(self.computed[rid] + n) - self.blocks[rid]
            # vLLM preempts from the tail, which after a prefill still in progress holds only later prefills
            # (rarely a short prompt admitted after it and already decoding: then this chunk waits instead)
            while extra > self.pool.free and next(reversed(self.running)) in self.partial:
                self._preempt_last(due_residue)
                preempted = True
            if rid not in self.running or extra > self.pool.free:
                break
            self.pool.grow(extra)
            self.blocks[rid] += extra
            chunks.append((rid, n))
            budget -= n
        if not preempted:
            self._admit(budget, chunks)
        if not self.dec and not chunks:
            return None
        return self._finish_step(chunks)

    def _admit(self, budget: int, chunks: list[tuple[int, int]]) -> None:
        cfg, pool = self.cfg, self.pool
        while budget > 0 and self.waiting and len(self.running) < cfg.max_num_seqs:
            rid = self.waiting[0]
            total = self.prompt[rid] + self.generated[rid]
            hit = pool.hit_tokens(self.key[rid], total)
            n = total - hit
            if not cfg.chunked_prefill and n > budget:
                break
            n = min(n, budget)
            blocks = pool.blocks_for(hit + n)
            if not pool.allocate(self.key[rid], hit // cfg.block_size, blocks):
                break
            self.waiting.popleft()
            if cfg.prefix_caching:
                self.hit_tokens += hit
                self.queried_tokens += total
            self.computed[rid], self.blocks[rid] = hit, blocks
            self.running[rid] = None
            self.partial[rid] = None
            chunks.append((rid, n))
            budget -= n

    def _finish_step(self, chunks: list[tuple[int, int]]) -> Step:
        n_dec = len(self.dec)
        kv_tokens = self.dec_sum + n_dec * self.tick
        prefill, pairs = 0, 0.0
        computed = self.computed
        for rid, n in chunks:
            prefill += n
            pairs += n * (computed[rid] + n / 2)
        duration = self.costs.step_s(prefill, pairs, n_dec + len(chunks), kv_tokens * self.cfg.kv_bytes_per_token)
        done: list[int] = []
        if n_dec:
            tick = self.tick
            self.tick += 1
            finishes = self.finishes
            while finishes and finishes[0][0] == tick:
                _, rid = heapq.heappop(finishes)
                if rid in self.dec and self._last_tick(rid) == tick:
                    self._leave_decode(rid)
                    self._finish(rid)
                    done.append(rid)
        first: list[int] = []
        emitted = n_dec
        for rid, n in chunks:
            computed[rid] += n
            if computed[rid] < self.prompt[rid] + self.generated[rid]:
                continue
            del self.partial[rid]
            self.generated[rid] += 1
            emitted += 1
            if self.generated[rid] == 1:
                first.append(rid)
            if self.generated[rid] >= self.out[rid]:
                self._finish(rid)
                done.append(rid)
            else:
                self._enter_decode(rid)
        return Step(duration, tuple(first), tuple(done), emitted, n_dec + len(chunks))

    def abort(self, rids: set[int]) -> None:
        """Drop requests (the client gave up on them): waiting ones leave the queue, running ones free their
        blocks (what they computed stays cached)."""
        self.waiting = deque(r for r in self.waiting if r not in rids)
        for rid in [r for r in self.running if r in rids]:
            if rid in self.dec:
                self._leave_decode(rid)
            self._finish(rid)

    def _enter_decode(self, rid: int) -> None:
        c0, g0 = self.computed[rid], self.tick
        self.dec[rid] = (c0, g0)
        self.dec_sum += c0 - g0
        self.bucket[(g0 - c0) % self.cfg.block_size] += 1
        heapq.heappush(self.finishes, (self._last_tick(rid), rid))

    def _last_tick(self, rid: int) -> int:
        return self.dec[rid][1] + self.out[rid] - self.generated[rid] - 1

    def _leave_decode(self, rid: int) -> None:
        """Stop aggregating ``rid``: its tokens, computed tokens and blocks as of the ticks it ran."""
        c0, g0 = self.dec.pop(rid)
        self.dec_sum -= c0 - g0
        self.bucket[(g0 - c0) % self.cfg.block_size] -= 1
        ran = self.tick - g0
        self.generated[rid] += ran
        self.computed[rid] = c0 + ran
        self.blocks[rid] = self.pool.blocks_for(c0 + ran)

    def _finish(self, rid: int) -> None:
        del self.running[rid]
        self.partial.pop(rid, None)
        self.pool.release(self.key[rid], self.blocks[rid], self.computed[rid])
        self.blocks[rid] = 0

    def _preempt_last(self, due_residue: int) -> int:
        """Preempt the last admitted running request (recompute mode); 1 if it was one of this step's
        decodes needing a new block, else 0."""
        rid = next(reversed(self.running))
        was_due = 0
        if rid in self.dec:
            c0, g0 = self.dec[rid]
            was_due = int((g0 - c0) % self.cfg.block_size == due_residue)
            self._leave_decode(rid)
        self._finish(rid)
        self.computed[rid] = 0
        self.waiting.appendleft(rid)
        self.preemptions += 1
        return was_due
