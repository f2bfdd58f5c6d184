"""`generate-sample`: a day of a bundled dataset's messages with every kind of poison, and each
line's truth (orders: foodtaster_dev.sample; order_events: sample_events; payment_events:
sample_payments)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from foodtaster_dev import sample
from foodtaster_dev.sample_events import DATASET as EVENTS
from foodtaster_dev.sample_events import generate_events, write_truth
from foodtaster_dev.sample_payments import DATASET as PAYMENTS
from foodtaster_dev.sample_payments import generate_payments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `generate-sample` command's options: the orders generator's, and `--dataset`."""
    sample.add_arguments(parser)
    parser.add_argument("--dataset", choices=("orders", EVENTS, PAYMENTS), default="orders",
                        help="which dataset's messages (default: orders; order_events and payment_events "
                             "have no oversized kind, so --max-message-bytes is for orders only)")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    if args.dataset == "orders":
        return sample._run(args)
    out = Path(args.out).resolve()
    if args.truth and Path(args.truth).resolve().is_relative_to(out):
        print(f"--truth must be outside --out ({out}): the engine would read it as a batch",
              file=sys.stderr)
        return 2
    started = time.perf_counter()
    generate = generate_events if args.dataset == EVENTS else generate_payments
    try:
        batch = generate(
            out, messages=args.messages, seed=args.seed, poison_rate=args.poison_rate,
            batch_date=args.date, files=args.files, gzip_files=args.gzip_files,
            kinds=args.kinds.split(",") if args.kinds else None, keep_truth=bool(args.truth),
        )
    except ValueError as err:
        print(f"generate-sample: {err}", file=sys.stderr)
        return 2
    if args.truth:
        write_truth(batch.truth, args.truth)
    counts = ", ".join(f"{k}={v}" for k, v in batch.counts().items())
    print(f"wrote {batch.messages} {args.dataset} lines in {len(batch.files)} files to {out} "
          f"in {time.perf_counter() - started:.1f}s (seed {args.seed}): {counts}")
    return 0
