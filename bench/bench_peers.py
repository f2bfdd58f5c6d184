"""Foodtaster against its peer, in one run: the floor, Foodtaster's job with its gate and DQX.

    .venv/bin/python bench/bench_peers.py --workdir W [--messages N] [--repeat R]
        [--dataset orders|order_events]

For each dataset (`orders`, flat, and `order_events`, nested), three commands, each in a fresh
process (its own JVM, start-up included) timed wall-clock from outside, in rounds so that a slow
spell of the machine hits all of them:

  floor       `bench_validate.py --only floor` (`nested-floor`): read the text, `from_json`, Parquet.
  foodtaster  `bench_validate.py --only full-gx` (`nested-full-gx`): the job with its gate.
  dqx         `bench_dqx.py` in the peer's own venv (`make bench-dqx-venv`): the contract's rules as
              DQX checks on a lenient `from_json`, split, both sides written as Parquet.

The input is generated once into W (`input`, `nested-input`, as `bench_validate.py --keep` makes
it, and reused when its parameters match), with the nested floor's schema, in a child process so
no JVM of this process lingers beside the timed ones. Prints every run, the medians, each one's
ratio to its floor, Foodtaster / DQX (of the medians, and the median of the rounds' paired
ratios), and the load average. Exits 1 when a command fails or a count does not add up.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATASETS = {  # dataset: (its input folder in W, the floor's and the job's --only variants)
    "orders": ("input", "floor", "full-gx"),
    "order_events": ("nested-input", "nested-floor", "nested-full-gx"),
}
VARIANTS = ("floor", "foodtaster", "dqx")


def prepare(args: argparse.Namespace) -> None:
    """The inputs and the nested floor's schema, made here (a child process: see the docstring)."""
    sys.path.insert(0, str(HERE))
    import bench_validate as bv

    workdir = args.workdir.resolve()
    for dataset, (folder, _, _) in DATASETS.items():
        info = bv.generate(workdir / folder, args.messages, args.seed, args.poison_rate, dataset)
        print(f"{dataset}: {args.messages:,} messages, {info['bytes'] / 2**20:,.0f} MiB in 4 files "
              f"(expected {info['outcomes']})", flush=True)
    schema_file = workdir / bv.NESTED_SCHEMA
    if not schema_file.exists():
        spark = bv.build_spark(args.master, args.driver_memory)
        schema_file.write_text(bv.nested_schema(spark, str(workdir / "nested-input")).json())
        spark.stop()


def command(args: argparse.Namespace, dataset: str, variant: str) -> tuple[list[str], dict[str, str]]:
    folder, floor, job = DATASETS[dataset]
    workdir = args.workdir.resolve()
    if variant == "dqx":
        python = str(args.dqx_python)
        env = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONPATH", "SPARK_HOME", "FOODTASTER_JVM_JAR", "PYSPARK_SUBMIT_ARGS")}
        env.update(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python)
        return [python, str(HERE / "bench_dqx.py"), "--input", str(workdir / folder),
                "--out", str(workdir / "out" / "dqx" / dataset), "--dataset", dataset,
                "--master", args.master, "--driver-memory", args.driver_memory], env
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return [sys.executable, str(HERE / "bench_validate.py"), "--only", floor if variant == "floor" else job,
            "--workdir", str(workdir), "--keep", "--messages", str(args.messages),
            "--seed", str(args.seed), "--poison-rate", str(args.poison_rate),
            "--master", args.master, "--driver-memory", args.driver_memory], env


def timed(args: argparse.Namespace, dataset: str, variant: str) -> float:
    argv, env = command(args, dataset, variant)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{dataset} {variant} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    if variant == "dqx":
        counts = json.loads(done.stdout.strip().splitlines()[-1])
        if counts["messages"] != args.messages:
            raise SystemExit(f"{dataset} dqx: {counts['messages']} messages written, not {args.messages}")
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True, help="inputs are made here once and kept")
    parser.add_argument("--messages", type=int, default=2_000_000, metavar="N")
    parser.add_argument("--repeat", type=int, default=3, metavar="R")
    parser.add_argument("--dataset", choices=sorted(DATASETS), action="append",
                        help="one dataset (repeatable); default both")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--poison-rate", type=float, default=0.02)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--dqx-python", type=Path, default=HERE / ".venv-dqx" / "bin" / "python",
                        help="the peer's venv's python (make bench-dqx-venv)")
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.prepare:
        prepare(args)
        return 0
    if not args.dqx_python.exists():
        parser.error(f"no {args.dqx_python}: run `make bench-dqx-venv` first")
    datasets = args.dataset or list(DATASETS)

    prepared = subprocess.run([sys.executable, __file__, "--prepare", *(argv or sys.argv[1:])],
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    if prepared.returncode != 0:
        return prepared.returncode
    print(f"load average at start: {os.getloadavg()}", flush=True)
    seconds: dict[tuple[str, str], list[float]] = {}
    for round_ in range(1, args.repeat + 1):
        for dataset in datasets:
            for variant in VARIANTS:
                took = timed(args, dataset, variant)
                seconds.setdefault((dataset, variant), []).append(took)
                print(f"round {round_}: {dataset:12s} {variant:10s} {took:7.1f}s  "
                      f"load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    print(f"\n{args.messages:,} messages a dataset, medians of {args.repeat} fresh processes each\n")
    print("| dataset | floor s | Foodtaster with its gate s | DQX s | Foodtaster / DQX | paired, median |")
    print("|---|---:|---:|---:|---:|---:|")
    for dataset in datasets:
        floor, ours, dqx = (statistics.median(seconds[(dataset, v)]) for v in VARIANTS)
        paired = statistics.median(
            a / b for a, b in zip(seconds[(dataset, "foodtaster")], seconds[(dataset, "dqx")], strict=True))
        print(f"| {dataset} | {floor:.1f} | {ours:.1f} ({ours / floor:.2f}×) "
              f"| {dqx:.1f} ({dqx / floor:.2f}×) | {ours / dqx:.2f} | {paired:.2f} |")
    every = (f"{dataset} {variant} {', '.join(f'{s:.1f}' for s in runs)}"
             for (dataset, variant), runs in seconds.items())
    print("\nevery run (s): " + "; ".join(every))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
