"""Benchmark: what the Great Expectations batch gate costs, in all and per expectation, against the floor.

One Python process, one SparkSession, one generated batch (bench_validate's generator, floor and
session: imported, not copied). The valid rows are staged once by the full job without the gate
(not timed; a kept work dir reuses them), then a small untimed warm-up of the floor and the gate;
then every round runs, in this order:

  floor        bench_validate's floor: read the text, `from_json` with the contract's schema, write Parquet.
  gate         `run_gate` with the dataset's suite as it is in expectations/orders.json, Data Docs written.
  <one each>   `run_gate` with a suite of one expectation of that suite (the same GX set-up and Data Docs).
  was: ...     the suite before, whole, and the expectations it replaced, alone, for the record
               (`--skip-was` leaves them out).

Rounds are interleaved so a slow spell of the shared machine hits every variant, the order after
the floor rotating from round to round; each variant's median and fastest of `--repeat` runs are
printed with the load average around each run.

Run: `.venv/bin/python bench/bench_gate.py [--messages N] [--repeat R]` (see bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_validate as bv  # noqa: E402  the floor, the generator and the session, shared

# What the orders suite ran before the gate was made cheaper: timed alone beside what replaced them.
EARLIER = [
    {"type": "expect_column_values_to_be_unique", "kwargs": {"column": "message_id"}},
    {"type": "expect_column_median_to_be_between",
     "kwargs": {"column": "amount", "min_value": 1, "max_value": 10000}},
]
TARGET = 0.5  # the gate's seconds over the floor's, at most


def label(expectation: dict[str, Any]) -> str:
    column = expectation.get("kwargs", {}).get("column")
    return expectation["type"].removeprefix("expect_") + (f"({column})" if column else "")


def write_suite(folder: Path, name: str, expectations: list[dict[str, Any]], meta: dict[str, Any]) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"name": name, "meta": meta, "expectations": expectations}))
    return path


def gate_run(spark: Any, staged: list[str], suite: Path, docs: Path, batch_id: str) -> dict[str, Any]:
    from foodtaster.engine.gate.gate import run_gate

    result = run_gate(spark.read.parquet(*staged), suite, "orders", batch_id, bv.BATCH_DATE,
                      data_docs_uri=str(docs))
    return {"passed": result["passed"],
            "observed": {label({"type": r["expectation"], "kwargs": {"column": r["column"]}}): r["observed"]
                         for r in result["results"]}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2_000_000, metavar="N")
    parser.add_argument("--poison-rate", type=float, default=0.02, metavar="R")
    parser.add_argument("--seed", type=int, default=7, metavar="S")
    parser.add_argument("--repeat", type=int, default=3, metavar="R")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--workdir", metavar="DIR", help="default: a temp dir, deleted at the end")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (the input is then reused)")
    parser.add_argument("--skip-was", action="store_true", help="leave out the replaced expectations")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers here")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="foodtaster-bench-gate-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        return _bench(args, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _bench(args: argparse.Namespace, workdir: Path) -> int:
    from foodtaster.engine.gate.gate import load_suite
    from foodtaster.registry import get_dataset

    n = args.messages
    print(f"workdir {workdir}; load average {bv.load()} at start", flush=True)
    info = bv.generate(workdir / "input", n, args.seed, args.poison_rate)
    print(f"input: {n:,} messages, {info['bytes'] / 2**20:,.0f} MiB (expected {info['outcomes']})",
          flush=True)
    spark = bv.build_spark(args.master, args.driver_memory)
    out = workdir / "out"
    input_path = str(workdir / "input")

    started = time.perf_counter()
    stamp = workdir / "staged.params.json"
    reuse = stamp.exists() and json.loads(stamp.read_text()) == info["params"]
    staged = _staged(out / "lake") if reuse else []
    if staged:
        valid = spark.read.parquet(*staged).count()
        print(f"reusing the {valid:,} valid rows staged in {len(staged)} files", flush=True)
    else:
        valid = bv.run_full(spark, input_path, out / "lake", gate=False, messages=n)["valid"]
        staged = _staged(out / "lake")
        stamp.write_text(json.dumps(info["params"]))
        print(f"staged {valid:,} valid rows in {time.perf_counter() - started:.1f}s (not timed)", flush=True)
    # First runs in a JVM are slower (JIT, codegen; GX's imports and renderers on its first run):
    # one untimed floor on a small input and one untimed gate on a slice of the rows.
    warmup = bv.generate(workdir / "warmup", 10_000, args.seed, args.poison_rate)
    bv.run_floor(spark, str(workdir / "warmup"), out / "warmup-floor")
    from foodtaster.engine.gate.gate import run_gate

    run_gate(spark.read.parquet(*staged).limit(10_000), get_dataset("orders").suite_path(), "orders",
             "bench-warmup", bv.BATCH_DATE, data_docs_uri=str(out / "warmup-docs"))
    print(f"warm-up ({warmup['params']['messages']:,} lines, 10,000 rows) in "
          f"{time.perf_counter() - started:.1f}s (not timed)", flush=True)

    suite_doc = load_suite(get_dataset("orders").suite_path())
    suites = workdir / "suites"
    suites.mkdir(exist_ok=True)
    meta = suite_doc.get("meta", {})
    variants: dict[str, Callable[[], dict[str, Any]]] = {
        "floor": lambda: bv.run_floor(spark, input_path, out / "floor"),
        "gate": lambda: gate_run(spark, staged, get_dataset("orders").suite_path(), out / "docs",
                                 "bench-gate"),
    }
    if not args.skip_was:
        replaced = {e["kwargs"]["column"] for e in EARLIER}
        earlier = [e for e in suite_doc["expectations"]
                   if e["kwargs"].get("column") not in replaced] + EARLIER
        path = write_suite(suites, "orders_was", earlier, meta)
        variants["was: gate"] = lambda: gate_run(spark, staged, path, out / "docs-was", "bench-was")
    alone = [(label(e), e) for e in suite_doc["expectations"]]
    if not args.skip_was:
        alone += [("was: " + label(e), e) for e in EARLIER]
    for i, (name, expectation) in enumerate(alone):
        path = write_suite(suites, f"orders_{i}", [expectation], meta)
        variants[name] = lambda path=path, i=i: gate_run(spark, staged, path, out / f"docs-{i}", f"bench-{i}")

    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    # The floor opens every round; the others rotate, so no variant always runs just after the
    # floor's writes (seen here: whichever GX run came first after it was the slowest).
    others = [name for name in variants if name != "floor"]
    for round_ in range(1, args.repeat + 1):
        shift = (round_ - 1) % len(others)
        for name in ["floor", *others[shift:], *others[:shift]]:
            action = variants[name]
            before = bv.load()
            mark = time.perf_counter()
            extra = action()
            seconds = time.perf_counter() - mark
            runs[name].append({"seconds": seconds, "load_before": before, "load_after": bv.load(), **extra})
            verdict = {True: " passed", False: " FAILED"}.get(extra.get("passed"), "")
            print(f"[{time.strftime('%H:%M:%S')}] round {round_}/{args.repeat} {name}: {seconds:.2f}s "
                  f"(load {before} -> {bv.load()}){verdict}", flush=True)
    spark.stop()

    floor = statistics.median(r["seconds"] for r in runs["floor"])
    print()
    print(f"GX gate benchmark: {n:,} messages, {valid:,} valid rows gated; {args.master}, "
          f"{len(os.sched_getaffinity(0))} CPUs; {args.repeat} rounds interleaved; "
          f"load at the end {bv.load()}")
    print(f"{'variant':<62} {'median s':>9} {'min s':>7} {'x floor':>8}   runs (s)")
    table = []
    for name, results in runs.items():
        seconds = [r["seconds"] for r in results]
        median = statistics.median(seconds)
        table.append({"variant": name, "median_s": median, "min_s": min(seconds), "x_floor": median / floor,
                      "runs": seconds, "loads": [(r["load_before"], r["load_after"]) for r in results]})
        print(f"{name:<62} {median:>9.2f} {min(seconds):>7.2f} {median / floor:>8.2f}   "
              + ", ".join(f"{s:.2f}" for s in seconds))
    ratios = [g["seconds"] / f["seconds"] for g, f in zip(runs["gate"], runs["floor"], strict=True)]
    gate_ratio = statistics.median(ratios)
    print(f"\ngate / floor per round: {', '.join(f'{r:.2f}' for r in ratios)}; median {gate_ratio:.2f}x "
          f"-> {'PASS' if gate_ratio <= TARGET else 'MISS'} (target <= {TARGET}x)")
    print(f"gate observed: {runs['gate'][-1]['observed']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"messages": n, "valid": valid, "table": table,
                                               "gate_over_floor": ratios}, indent=2, default=str) + "\n")
    return 0 if gate_ratio <= TARGET else 1


def _staged(lake_root: Path) -> list[str]:
    """The valid files the ungated run left on its audit branch; none when there is no such run."""
    from foodtaster.state.lake import Lake
    from foodtaster.state.tables import VALID, DatasetTables, audit_branch

    tables = DatasetTables(Lake(str(lake_root)), "orders")
    found = tables.batch(VALID, bv.NO_GX_BATCH, audit_branch(bv.NO_GX_BATCH))
    return list(found.files) if found else []


if __name__ == "__main__":
    sys.exit(main())
