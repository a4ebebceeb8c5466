"""The settings of a run: every setting's rule and field, the project file and their resolution."""
