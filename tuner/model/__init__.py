"""The model as its config.json states it: shape, weights and sizes (no torch), and real models built offline."""
