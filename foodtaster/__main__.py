import sys

from foodtaster.ops.cli import main

sys.exit(main())
