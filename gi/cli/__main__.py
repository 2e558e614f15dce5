"""`python -m gi.cli`: the `gi` command."""

import sys

from gi.cli.main import main

sys.exit(main())
