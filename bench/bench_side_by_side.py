"""The flat job of two checkouts side by side, in one run: is this tree slower than an earlier one?

    .venv/bin/python bench/bench_side_by_side.py --before /path/to/earlier/checkout --workdir W

Each checkout's `bench_validate.py --only floor` and `--only full-gx` run in fresh processes,
the checkouts alternating round by round on the same input (generated once, `--keep` in `W`),
each with its own code and its own jar (`<checkout>/build/foodtaster-jvm.jar`, built with
`make jar` there). Prints each median, the job's ratio to its floor, the ratio of the two, and
the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def timed(checkout: Path, variant: str, args: argparse.Namespace) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout),
           "FOODTASTER_JVM_JAR": str(checkout / "build" / "foodtaster-jvm.jar")}
    command = [sys.executable, str(checkout / "bench" / "bench_validate.py"), "--only", variant,
               "--workdir", str(args.workdir), "--keep", "--messages", str(args.messages)]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=checkout, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{checkout} {variant} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the earlier checkout, its jar built")
    parser.add_argument("--workdir", type=Path, required=True,
                        help="holds `input` (a bench_validate.py run with --keep makes it)")
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if not (args.workdir / "input").is_dir():
        parser.error(f"no input in {args.workdir}: run bench_validate.py --workdir W --keep first")
    trees = {"before": args.before.resolve(), "this tree": HERE}
    seconds: dict[tuple[str, str], list[float]] = {}
    print(f"load average at start: {os.getloadavg()}", flush=True)
    for round_ in range(1, args.repeat + 1):
        for name, tree in trees.items():
            for variant in ("floor", "full-gx"):
                took = timed(tree, variant, args)
                seconds.setdefault((name, variant), []).append(took)
                print(f"round {round_}: {name:9s} {variant:8s} {took:6.1f}s  load {os.getloadavg()[0]:.2f}",
                      flush=True)
    print(f"load average at end: {os.getloadavg()}")
    ratios = {}
    for name in trees:
        floor, job = (statistics.median(seconds[(name, v)]) for v in ("floor", "full-gx"))
        ratios[name] = job / floor
        print(f"{name:9s}: floor {floor:6.1f}s  job with the gate {job:6.1f}s  × floor {ratios[name]:.2f}")
    print(f"this tree / before: {ratios['this tree'] / ratios['before']:.3f} (target <= 1.0, within noise)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
