"""The `perfmodel` command line: one module per command group, thin over the library.

Front door: main (the `perfmodel` entry point).
Change here when a command or an option is added; the computation belongs to a layer below.
Must not import: the model at import time (start-up stays under half a second); app.py.
"""

from perfmodel.cli.parser import build_parser, main

__all__ = ["build_parser", "main"]
