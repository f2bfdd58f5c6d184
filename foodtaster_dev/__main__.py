import sys

from foodtaster_dev.cli import main

sys.exit(main())
