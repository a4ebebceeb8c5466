"""English passages for copy-style workloads (``edit_instruction``): requests whose answer rewrites or
quotes a given text, so that n-gram speculative decoding finds its drafts in the prompt.

A passage is a seeded draw of sentences from a fixed bank, in a random order, so that two requests rarely
share more than a sentence (the prefix cache is not what such a workload measures). Stdlib only.
"""

from __future__ import annotations

import random

_SENTENCES = (
    "The lighthouse keeper kept a log of every ship that passed during the long winter.",
    "A database index speeds up reads but makes every write a little slower.",
    "The farmers' cooperative bought a shared harvester to cut costs for its members.",
    "Thunderstorms are most common in the late afternoon, when the ground is warmest.",
    "He forgot his umbrella on the train and walked home through the drizzle.",
    "The startup raised a small round from angel investors to build its first prototype.",
    "Octopuses can change the colour and texture of their skin in a fraction of a second.",
    "The teacher asked the class to explain the water cycle in their own words.",
    "The restaurant changes its menu with the seasons and buys from nearby farms.",
    "Archaeologists found coins beneath the floor of the ruined chapel.",
    "The train was delayed by a signal failure, and passengers waited on the platform.",
    "Wind turbines turn to face the wind and stop automatically in dangerous storms.",
    "She kept a notebook of words she did not know and looked them up each evening.",
    "The bill passed the lower house but stalled in committee for the rest of the year.",
    "Caching the results of slow queries can cut the response time of a web page in half.",
    "The river rose after three days of rain, and the farmers moved their animals to higher ground.",
    "A compiler translates source code into machine instructions, checking types along the way.",
    "She signed the lease on a small flat above the bakery, where the mornings smelled of bread.",
    "The museum reopened with a new wing devoted to maps drawn by sailors long ago.",
    "To reset the router, hold the button on the back for ten seconds until the light blinks.",
    "The committee postponed its vote until the auditors had finished reviewing the accounts.",
    "He learned to play the cello at forty and now performs with a community orchestra.",
    "The bridge was closed for repairs, so the bus took a long detour through the old town.",
    "Please send the signed contract by Friday so that the shipment can leave on Monday.",
    "The recipe calls for two eggs, a cup of flour and a pinch of salt, whisked until smooth.",
    "The team shipped the release late on Thursday and spent Friday fixing a memory leak.",
    "The library lends telescopes as well as books, and the waiting list is months long.",
    "Our quarterly revenue grew by eight percent, driven mainly by subscriptions in Europe.",
    "When the server runs out of memory, the operating system starts killing processes.",
    "The hikers reached the summit at noon and ate lunch above a sea of clouds.",
    "The village holds a market every Saturday, with cheese, honey and fresh vegetables.",
    "If the test fails, the pipeline stops and the previous version stays in production.",
    "The city planted ten thousand trees to cool the streets during summer heat waves.",
    "The negotiations broke down over the question of who would pay for the cleanup.",
    "Fog rolled in from the harbour, and the ferry sounded its horn every minute.",
    "Solar panels produce less power on cloudy days but still generate some electricity.",
    "The new schedule adds an early bus on weekdays and a late one on Fridays.",
    "Our office will be closed on Monday for the public holiday and will reopen on Tuesday.",
    "The printer on the second floor is out of toner, so please use the one by the kitchen.",
    "The warranty covers parts and labour for two years from the date of purchase.",
)


def passage(rng: random.Random, words: int) -> str:
    """Sentences drawn without repeats (then again) until the passage has at least ``words`` words."""
    out: list[str] = []
    count = 0
    while count < words:
        for sentence in rng.sample(_SENTENCES, len(_SENTENCES)):
            out.append(sentence)
            count += len(sentence.split())
            if count >= words:
                break
    return " ".join(out)
