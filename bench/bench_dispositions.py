"""The dispositions fold on a large quarantine: time and peak memory.

    .venv/bin/python bench/bench_dispositions.py [--rows 1000000] [--files 20]

Records, like a redrive and a retry would, one event for all `--rows` rows (retrying,
attempt 1), one for half of them (redriven), one for a tenth (failed again); then times
the fold from the events, a snapshot, the fold from the snapshot, and a row's history.
Peak memory is the process's resident high-water mark (ru_maxrss) after each step.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from foodtaster.state.dispositions import FAILED_AGAIN, REDRIVEN, RETRYING, Dispositions, Row  # noqa: E402
from foodtaster.state.lake import Lake  # noqa: E402


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=20)
    args = parser.parse_args()
    per_file = args.rows // args.files
    folder = "file:/lake/raw/orders/batch_date=2026-11-20/batch_id=x"
    rows = [Row(f"2026112{f % 3}", f"{folder}/part-{f:05d}.jsonl", line)
            for f in range(args.files) for line in range(1, per_file + 1)]
    print(f"{len(rows):,} rows in {args.files} files; rss before {_rss_mib():.0f} MiB")
    with tempfile.TemporaryDirectory() as root:
        log = Dispositions(Lake(root), "orders")
        for label, step in (
            ("record retrying (all)", lambda: log.record(RETRYING, rows, run="bench", attempts=1,
                                                          next_at="2026-11-23T00:00:00+00:00")),
            ("record redriven (1/2)", lambda: log.record(REDRIVEN, rows[::2], run="bench", where="valid/x")),
            ("record failed again (1/10)", lambda: log.record(FAILED_AGAIN, rows[::10], run="bench",
                                                               reasons=[["amount.ge(0)"]] * len(rows[::10]))),
            ("fold from events", log.state),
            ("snapshot", log.compact),
            ("fold from snapshot", log.state),
            ("history of one row", lambda: log.history(*rows[10])),
            ("counts", lambda: log.state().counts()),
        ):
            start = time.perf_counter()
            step()
            print(f"{label:28s} {time.perf_counter() - start:7.2f} s   peak rss {_rss_mib():6.0f} MiB")
        size = sum(p.stat().st_size for p in Path(root).rglob("*.json"))
        print(f"log on disk: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
