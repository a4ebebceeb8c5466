"""One module per ``tune`` subcommand: ``configure(parser)`` and ``run(args) -> int``."""
