"""`python -m ethos.adapters.cli`, as the `ethos` script."""

import sys

from ethos.adapters.cli import main

sys.exit(main())
