"""slotune's tuner: budget, search space, objective, study and outputs (synchronous)."""
