"""CLI subcommands, one module each, with ``register(subparsers)``."""
