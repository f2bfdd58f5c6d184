"""`python -m foodtaster_dev <command>`: the dev commands, apart from the runtime `foodtaster` CLI."""

from __future__ import annotations

import argparse

from foodtaster_dev import demo_engine, generate_sample, sample


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m foodtaster_dev", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    # --dataset picks the generator; without it, the orders one as before
    generate_sample.add_arguments(commands.add_parser("generate-sample", help=sample.__doc__))
    demo_engine.add_arguments(commands.add_parser("demo", help=demo_engine.__doc__))
    args = parser.parse_args(argv)
    return int(args.run(args) or 0)
