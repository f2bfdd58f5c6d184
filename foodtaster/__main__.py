import sys

from foodtaster.cli import main

sys.exit(main())
