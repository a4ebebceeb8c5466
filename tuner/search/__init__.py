"""The search: the space, the Optuna study and its resume, and perfmodel's predict-then-measure search."""
