"""Built-in calibration and held-out text (stdlib only; used by the quantization worker).

Two disjoint English sentence banks: one feeds calibration, the other the quality gate's held-out
set, so the gate never scores text the quantizer saw. A sample is a seeded draw of sentences from
one bank. Models whose tokenizer cannot read English (the synthetic ``w0 … wN`` vocabularies of
``tuner.synthetic``) get random token ids instead: see ``random_token_ids``.

``BUILTIN_VERSION`` is part of the quantization cache key; bump it when the banks or the sampling
change.
"""

from __future__ import annotations

import random

BUILTIN_VERSION = "builtin-v1"

_CALIBRATION = (
    "The river rose after three days of rain, and the farmers moved their animals to higher ground.",
    "A compiler translates source code into machine instructions, checking types along the way.",
    "She signed the lease on a small flat above the bakery, where the mornings smelled of bread.",
    "Interest rates were raised by a quarter point to slow inflation without stalling growth.",
    "The museum reopened with a new wing devoted to maps drawn by sailors in the sixteenth century.",
    "To reset the router, hold the button on the back for ten seconds until the light blinks.",
    "Photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen.",
    "The committee postponed its vote until the auditors had finished reviewing the accounts.",
    "He learned to play the cello at forty and now performs with a community orchestra.",
    "A hash table stores values under keys and finds them in constant time on average.",
    "The bridge was closed for repairs, so the bus took a long detour through the old town.",
    "Volcanic ash grounded flights across the region for most of the week.",
    "Please send the signed contract by Friday so that the shipment can leave on Monday.",
    "The recipe calls for two eggs, a cup of flour and a pinch of salt, whisked until smooth.",
    "Most of the ocean floor has never been mapped at a resolution finer than a kilometre.",
    "The team shipped the release late on Thursday and spent Friday fixing a memory leak.",
    "Glaciers carve wide valleys with flat floors and steep walls as they creep downhill.",
    "A good night's sleep improves memory, mood and the ability to concentrate.",
    "The novel follows three sisters who inherit a failing vineyard from an uncle they never met.",
    "Electric cars recover energy when braking by running the motor as a generator.",
    "The library lends telescopes as well as books, and the waiting list is months long.",
    "Our quarterly revenue grew by eight percent, driven mainly by subscriptions in Europe.",
    "Bees communicate the direction of flowers to one another through a waggling dance.",
    "The court ruled that the company had breached the agreement and awarded damages.",
    "When the server runs out of memory, the operating system starts killing processes.",
    "The hikers reached the summit at noon and ate lunch above a sea of clouds.",
    "Vaccines train the immune system to recognise a pathogen before an infection occurs.",
    "The orchestra tuned to the oboe's A before the conductor walked onto the stage.",
    "A spreadsheet formula that refers to its own cell creates a circular reference.",
    "The village holds a market every Saturday, with cheese, honey and fresh vegetables.",
    "Satellites in low orbit circle the Earth roughly every ninety minutes.",
    "The painter mixed ultramarine with a little umber to darken the evening sky.",
    "If the test fails, the pipeline stops and the previous version stays in production.",
    "The city planted ten thousand trees to cool the streets during summer heat waves.",
    "Tea was first drunk as a medicine before it became an everyday drink.",
    "The negotiations broke down over the question of who would pay for the cleanup.",
    "A sorting algorithm that is stable keeps equal elements in their original order.",
    "Fog rolled in from the harbour, and the ferry sounded its horn every minute.",
    "The student rewrote the essay three times before she was happy with the argument.",
    "Solar panels produce less power on cloudy days but still generate some electricity.",
)

_HELD_OUT = (
    "The lighthouse keeper kept a log of every ship that passed during the long winter.",
    "A database index speeds up reads but makes every write a little slower.",
    "The farmers' cooperative bought a shared harvester to cut costs for its members.",
    "Thunderstorms are most common in the late afternoon, when the ground is warmest.",
    "He forgot his umbrella on the train and walked home through the drizzle.",
    "The startup raised a small round from angel investors to build its first prototype.",
    "Octopuses can change the colour and texture of their skin in a fraction of a second.",
    "The teacher asked the class to explain the water cycle in their own words.",
    "A memory leak grows slowly until the process is restarted or the machine runs out.",
    "The restaurant changes its menu with the seasons and buys from nearby farms.",
    "Archaeologists found coins beneath the floor of the ruined chapel.",
    "The train was delayed by a signal failure, and passengers waited on the platform.",
    "Wind turbines turn to face the wind and stop automatically in dangerous storms.",
    "She kept a notebook of words she did not know and looked them up each evening.",
    "The bill passed the lower house but stalled in committee for the rest of the year.",
    "Caching the results of slow queries can cut the response time of a web page in half.",
)

# the text sample sizes for one draw: a sample is a handful of sentences joined with spaces
_SENTENCES_PER_SAMPLE = (4, 12)


def _draw(bank: tuple[str, ...], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lo, hi = _SENTENCES_PER_SAMPLE
    return [" ".join(rng.sample(bank, min(len(bank), rng.randint(lo, hi)))) for _ in range(n)]


def calibration_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` English calibration samples (disjoint from ``held_out_texts``)."""
    return _draw(_CALIBRATION, n, seed)


def held_out_texts(n: int, seed: int = 1) -> list[str]:
    """``n`` English held-out samples for the quality gate (never used for calibration)."""
    return _draw(_HELD_OUT, n, seed)


def random_token_ids(valid_ids: list[int], n: int, length: int, seed: int) -> list[list[int]]:
    """``n`` sequences of ``length`` ids drawn uniformly from ``valid_ids`` (for synthetic vocabularies).

    Use different seeds for calibration and held-out sequences.
    """
    rng = random.Random(seed)
    return [[rng.choice(valid_ids) for _ in range(length)] for _ in range(n)]


def jsonl_texts(rows: list[dict]) -> list[str]:
    """The text of each JSONL row: its ``text`` field, or its ``messages`` contents joined by newlines.

    Raises ValueError naming the first row that has neither.
    """
    out = []
    for i, row in enumerate(rows, 1):
        if isinstance(row, dict) and isinstance(row.get("text"), str):
            out.append(row["text"])
        elif isinstance(row, dict) and isinstance(row.get("messages"), list):
            parts = [m.get("content") for m in row["messages"] if isinstance(m, dict)]
            out.append("\n".join(p for p in parts if isinstance(p, str)))
        else:
            raise ValueError(f"row {i} has neither a 'text' string nor a 'messages' list")
        if not out[-1].strip():
            raise ValueError(f"row {i} has no text")
    return out
