"""slotune's tuner: budget, search space, trials, study and outputs (synchronous)."""
