"""`python -m ethos.cli`, as the `ethos` script."""

import sys

from ethos.cli import main

sys.exit(main())
