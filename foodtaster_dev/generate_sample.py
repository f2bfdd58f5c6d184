"""`generate-sample`: a day of a bundled dataset's messages with every kind of poison, and each
line's truth (orders: foodtaster_dev.sample; order_events: sample_events; payment_events:
sample_payments)."""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from foodtaster_dev import sample, sample_events, sample_payments

# dataset -> (its generator, its truth writer)
GENERATORS: dict[str, tuple[Any, Any]] = {
    "orders": (sample.generate_batch, sample.write_truth),
    sample_events.DATASET: (sample_events.generate_events, sample_events.write_truth),
    sample_payments.DATASET: (sample_payments.generate_payments, sample_events.write_truth),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `generate-sample` command's options."""
    parser.add_argument("--out", required=True, metavar="DIR", help="directory to write into")
    parser.add_argument("--messages", type=int, default=1000, metavar="N", help="total lines")
    parser.add_argument("--seed", type=int, default=7, metavar="S")
    parser.add_argument("--poison-rate", type=float, default=0.05, metavar="R",
                        help="share of poison lines, 0 to 1")
    parser.add_argument("--date", default="2026-11-20", metavar="YYYY-MM-DD", help="batch date")
    parser.add_argument("--files", type=int, default=3, metavar="N")
    parser.add_argument("--gzip-files", type=int, default=1, metavar="N",
                        help="how many of the files are .jsonl.gz")
    parser.add_argument("--kinds", metavar="K1,K2", help="poison kinds (default: all)")
    parser.add_argument("--max-message-bytes", type=int, default=1048576, metavar="B")
    parser.add_argument("--truth", metavar="PATH",
                        help="also write each line's truth here as JSON lines (not inside --out)")
    parser.add_argument("--dataset", choices=tuple(GENERATORS), default="orders",
                        help="which dataset's messages (default: orders; order_events and payment_events "
                             "have no oversized kind, so --max-message-bytes is for orders only)")
    parser.set_defaults(run=_run)



def _run(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    if args.truth and Path(args.truth).resolve().is_relative_to(out):
        print(f"--truth must be outside --out ({out}): the engine would read it as a batch",
              file=sys.stderr)
        return 2
    generate, write_truth = GENERATORS[args.dataset]
    if args.dataset == "orders":
        generate = partial(generate, max_message_bytes=args.max_message_bytes)
    started = time.perf_counter()
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
    named = "" if args.dataset == "orders" else f"{args.dataset} "
    print(f"wrote {batch.messages} {named}lines in {len(batch.files)} files to {out} "
          f"in {time.perf_counter() - started:.1f}s (seed {args.seed}): {counts}")
    return 0
