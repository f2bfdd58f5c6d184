"""`python -m foodtaster <command>`: the engine's commands."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="foodtaster", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    from foodtaster import demo, sample
    from foodtaster.ops import trend

    sample.add_arguments(commands.add_parser("generate-sample", help=sample.__doc__))
    demo.add_arguments(commands.add_parser("demo", help=demo.__doc__))
    trend.add_arguments(commands.add_parser("trend", help="the quarantine rate of every batch, as a chart"))

    args = parser.parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
