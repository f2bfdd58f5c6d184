"""spark-submit entrypoint: judge a dataset's quarantined rows again and publish what passes.

    spark-submit spark_jobs/redrive.py --dataset orders --from 2026-11-21 --to 2026-11-21 \\
        [--rule R] [--batch B] [--message-id M] [--dry-run] [--redrive-id ID] [--why ...] [--lake ROOT]

Also runs as `python spark_jobs/redrive.py ...` on local Spark, and as `foodtaster redrive`.
The work is foodtaster.engine.second_chances.redrive; the options are foodtaster.ops.redrive's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the engine, when run from a checkout

from foodtaster.logs import configure  # noqa: E402
from foodtaster.ops import redrive  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    redrive.add_arguments(parser)
    args = parser.parse_args(argv)
    configure()
    return redrive.run(args)


if __name__ == "__main__":
    sys.exit(main())
