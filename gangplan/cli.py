"""The `gangplan` console script (the command line lives in `clients/cli.py`)."""

from clients.cli import main

__all__ = ["main"]
