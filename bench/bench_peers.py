"""Foodtaster against its peer, in one run: the floor, the least any design pays, Foodtaster's job
with its gate, and DQX.

    .venv/bin/python bench/bench_peers.py --workdir W [--messages N] [--repeat R]
        [--dataset orders|order_events] [--variant floor|bound|bound-gx|bound-full|bound-bytes|foodtaster|dqx]
        [--checkout DIR]

For each dataset (`orders`, flat, and `order_events`, nested), seven commands, each in a fresh
process (its own JVM, start-up included) timed wall-clock from outside, in rounds so that a slow
spell of the machine hits all of them:

  floor       `bench_validate.py --only floor` (`nested-floor`): read the text, `from_json`, Parquet.
  bound       `bench_validate.py --only keyed` (`nested-keyed`): the strict parser and every rule, the
              copies of each key compared after one shuffle, one write by outcome; no line numbers,
              conversation holds, retries, accounting, state or gate. What any design that keeps the
              contract's verdicts pays at least (docs/decisions/012-speed-targets-and-their-lower-bounds.md).
  bound-gx    `--only keyed-gx` (`nested-keyed-gx`): the bound, then the dataset's gate on the valid
              rows it wrote, in the same process: the least the job with its gate pays.
  bound-full  `--only keyed-full-gx`: bound-gx with each line's number, the failed messages'
              reasons and the conversation hold (a second window): still less than the job does.
  bound-bytes `--only keyed-bytes-gx`: bound-full with every message's bytes carried through
              its shuffles, the quarantined ones written: what a one-pass design pays for them.
  foodtaster  `bench_validate.py --only full-gx` (`nested-full-gx`): the job with its gate.
  dqx         `bench_dqx.py` in the peer's own venv (`make bench-dqx-venv`): the contract's rules as
              DQX checks on a lenient `from_json`, split, both sides written as Parquet.

`--checkout DIR` (repeatable; default this checkout) runs the project's commands from each
checkout, with its own `.venv` and parser jar: two checkouts on two Spark versions give the
versions side by side, each with its own floor (docs/decisions/021-spark-version.md); two on one
Spark version, a change before and after, labelled by commit. DQX runs once a round, from its own
venv.

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
DATASETS = {  # dataset: its input folder in W, and the --only variant of each project command
    "orders": ("input", {"floor": "floor", "bound": "keyed", "bound-gx": "keyed-gx",
                         "bound-full": "keyed-full-gx", "bound-bytes": "keyed-bytes-gx",
                         "foodtaster": "full-gx"}),
    "order_events": ("nested-input", {"floor": "nested-floor", "bound": "nested-keyed",
                                      "bound-gx": "nested-keyed-gx", "bound-full": "nested-keyed-full-gx",
                                      "bound-bytes": "nested-keyed-bytes-gx",
                                      "foodtaster": "nested-full-gx"}),
}
VARIANTS = ("floor", "bound", "bound-gx", "bound-full", "bound-bytes", "foodtaster", "dqx")
BOUNDS = ("bound-gx", "bound-full", "bound-bytes")  # each with a column of its own / DQX, paired


def prepare(args: argparse.Namespace) -> None:
    """The inputs and the nested floor's schema, made here (a child process: see the docstring)."""
    sys.path.insert(0, str(HERE))
    import bench_validate as bv

    workdir = args.workdir.resolve()
    for dataset, (folder, _) in DATASETS.items():
        info = bv.generate(workdir / folder, args.messages, args.seed, args.poison_rate, dataset)
        print(f"{dataset}: {args.messages:,} messages, {info['bytes'] / 2**20:,.0f} MiB in 4 files "
              f"(expected {info['outcomes']})", flush=True)
    schema_file = workdir / bv.NESTED_SCHEMA
    if not schema_file.exists():
        spark = bv.build_spark(args.master, args.driver_memory)
        schema_file.write_text(bv.nested_schema(spark, str(workdir / "nested-input")).json())
        spark.stop()


def labelled(checkouts: list[Path]) -> dict[str, Path]:
    """Each checkout by its Spark version, or, where two share one (a change timed before and
    after), by its version and commit."""
    versions = {checkout.resolve(): spark_version(checkout) for checkout in checkouts}
    if len(set(versions.values())) == len(checkouts):
        return {version: checkout for checkout, version in versions.items()}
    labels = {f"{version}@{commit(checkout)}": checkout for checkout, version in versions.items()}
    if len(labels) < len(checkouts):
        raise SystemExit("two --checkout at the same Spark version and commit: "
                         "their rows could not be told apart")
    return labels


def commit(checkout: Path) -> str:
    """The checkout's commit, `+` when its work tree holds changes."""
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=True).stdout.strip()
    return head + ("+" if dirty else "")


def spark_version(checkout: Path) -> str:
    """The pyspark version of a checkout's venv: the label of its rows."""
    done = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-c",
                           "import pyspark; print(pyspark.__version__)"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: no working .venv ({done.stderr.strip()[-300:]}): "
                         "run `make venv jar` there")
    return done.stdout.strip()


def command(args: argparse.Namespace, dataset: str, variant: str,
            checkout: Path = ROOT) -> tuple[list[str], dict[str, str]]:
    folder, only = DATASETS[dataset]
    workdir = args.workdir.resolve()
    if variant == "dqx":
        python = str(args.dqx_python)
        env = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONPATH", "SPARK_HOME", "FOODTASTER_JVM_JAR", "PYSPARK_SUBMIT_ARGS")}
        env.update(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python)
        return [python, str(HERE / "bench_dqx.py"), "--input", str(workdir / folder),
                "--out", str(workdir / "out" / "dqx" / dataset), "--dataset", dataset,
                "--master", args.master, "--driver-memory", args.driver_memory], env
    python = str(checkout / ".venv" / "bin" / "python")  # its own Spark, and its own jar by default
    env = {key: value for key, value in os.environ.items() if key not in ("FOODTASTER_JVM_JAR", "SPARK_HOME")}
    env.update(PYTHONPATH=str(checkout), PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python)
    return [python, str(checkout / "bench" / "bench_validate.py"), "--only", only[variant],
            "--workdir", str(workdir), "--keep", "--messages", str(args.messages),
            "--seed", str(args.seed), "--poison-rate", str(args.poison_rate),
            "--master", args.master, "--driver-memory", args.driver_memory], env


def timed(args: argparse.Namespace, dataset: str, variant: str, checkout: Path = ROOT) -> float:
    argv, env = command(args, dataset, variant, checkout)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=checkout, capture_output=True, text=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{dataset} {variant} ({checkout}) failed ({done.returncode}):\n"
                         f"{done.stderr[-3000:]}")
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
    parser.add_argument("--variant", choices=VARIANTS, action="append",
                        help="one command (repeatable); default all seven")
    parser.add_argument("--checkout", type=Path, action="append",
                        help="run the project's commands from this checkout (repeatable; default this one)")
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.prepare:
        prepare(args)
        return 0
    variants = [variant for variant in VARIANTS if variant in (args.variant or VARIANTS)]
    if "dqx" in variants and not args.dqx_python.exists():
        parser.error(f"no {args.dqx_python}: run `make bench-dqx-venv` first")
    datasets = args.dataset or list(DATASETS)
    checkouts = labelled(args.checkout or [ROOT])

    prepared = subprocess.run([sys.executable, __file__, "--prepare", "--workdir", str(args.workdir),
                               "--messages", str(args.messages), "--seed", str(args.seed),
                               "--poison-rate", str(args.poison_rate), "--master", args.master,
                               "--driver-memory", args.driver_memory],
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    if prepared.returncode != 0:
        return prepared.returncode
    print(f"load average at start: {os.getloadavg()}; Spark {', '.join(checkouts)}", flush=True)
    seconds: dict[tuple[str, str, str], list[float]] = {}  # (dataset, variant, Spark version)
    for round_ in range(1, args.repeat + 1):
        for dataset in datasets:
            for variant in variants:
                for version, checkout in checkouts.items() if variant != "dqx" else [("", ROOT)]:
                    took = timed(args, dataset, variant, checkout)
                    seconds.setdefault((dataset, variant, version), []).append(took)
                    print(f"round {round_}: {dataset:12s} {variant:10s} {version:6s} {took:7.1f}s  "
                          f"load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    print(f"\n{args.messages:,} messages a dataset, medians of {args.repeat} fresh processes each\n")
    print(table(seconds, datasets, variants, list(checkouts)))
    every = (f"{dataset} {variant}{' ' + version if version else ''} {', '.join(f'{s:.1f}' for s in runs)}"
             for (dataset, variant, version), runs in seconds.items())
    print("\nevery run (s): " + "; ".join(every))
    return 0


def paired(ours: list[float], theirs: list[float]) -> float:
    """The median of the rounds' ratios: each round's runs met the same spell of the machine."""
    return statistics.median(a / b for a, b in zip(ours, theirs, strict=True))


def table(seconds: dict[tuple[str, str, str], list[float]], datasets: list[str], variants: list[str],
          versions: list[str]) -> str:
    """A row a dataset and Spark version: each command's median (× that version's floor), and
    Foodtaster / DQX of the medians and paired within rounds."""
    def runs(dataset: str, variant: str, version: str) -> list[float] | None:
        return seconds.get((dataset, variant, "" if variant == "dqx" else version))

    ratio = "foodtaster" in variants and "dqx" in variants
    bounds = [bound for bound in BOUNDS if bound in variants and "dqx" in variants]
    lines = ["| dataset | Spark | " + " | ".join(f"{v} s" for v in variants)
             + (" | Foodtaster / DQX | paired, median" if ratio else "")
             + "".join(f" | {bound} / DQX, paired" for bound in bounds) + " |",
             "|---|---|" + "---:|" * (len(variants) + (2 if ratio else 0) + len(bounds))]
    for dataset in datasets:
        for version in versions:
            floor_runs = runs(dataset, "floor", version)
            floor = statistics.median(floor_runs) if floor_runs else None
            cells = []
            for variant in variants:
                median = statistics.median(runs(dataset, variant, version) or [float("nan")])
                times = f" ({median / floor:.2f}×)" if floor and variant != "floor" else ""
                cells.append(f"{median:.1f}{times}")
            dqx = runs(dataset, "dqx", version)
            if ratio:
                ours = runs(dataset, "foodtaster", version)
                medians = statistics.median(ours) / statistics.median(dqx)
                cells += [f"{medians:.2f}", f"{paired(ours, dqx):.2f}"]
            cells += [f"{paired(runs(dataset, bound, version), dqx):.2f}" for bound in bounds]
            lines.append(f"| {dataset} | {version} | " + " | ".join(cells) + " |")
    return "\n".join(lines)

if __name__ == "__main__":
    raise SystemExit(main())
