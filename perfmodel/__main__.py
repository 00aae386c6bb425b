"""`python -m perfmodel` runs the command line."""

import sys

from perfmodel.cli.parser import main

sys.exit(main())
