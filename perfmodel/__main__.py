"""`python -m perfmodel` runs the command line."""

import sys

from perfmodel.cli import main

sys.exit(main())
