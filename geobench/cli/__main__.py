"""``python -m geobench.cli``."""

import sys

from geobench.cli import main

sys.exit(main())
