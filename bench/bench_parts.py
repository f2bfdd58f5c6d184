"""What each step of tasting a batch costs on its own, against the floor (issue 15).

`bench_validate.py` times whole jobs; this times the steps every design of the job is made of,
on the same generated `orders` batch, in one process with one SparkSession, rounds interleaved,
medians. Each step ends in a cheap action (a count, an aggregate collected) unless it says
"written". The steps that start from the kept pass share one kept pass, built once up front.

    .venv/bin/python bench/bench_parts.py                      # 2,000,000 messages, 3 rounds
    .venv/bin/python bench/bench_parts.py --messages 200000 --repeat 2
    .venv/bin/python bench/bench_parts.py --drift-jobs          # + the job with and without drift

Drift (docs/decisions/022-drift-recorded-from-every-batch.md) is timed as its own steps: the pass
kept with the drift columns against the pass kept without, and the drift aggregate on the kept
pass; `--drift-jobs` adds the whole job (`run_batch`, no gate) with drift recorded and without.

Read it as a ladder: a design that judges every message and keeps its batch-wide verdicts
(duplicates, conversation holds, line numbers) pays at least the pass, the batch's counts and one
write of the valid rows, however it orders them
(docs/decisions/012-speed-targets-and-their-lower-bounds.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_validate import build_spark, generate, load, run_floor  # noqa: E402


def steps(spark, input_path: str, out: Path, held: ExitStack,
          drift_jobs: bool = False) -> dict[str, Callable[[], object]]:
    """The steps, by name, in the order they are run in each round; what is kept for them is freed
    when `held` closes."""
    from pyspark.sql import functions as F

    from foodtaster.contract.path import Path as FieldPath
    from foodtaster.engine.batch import batch_counts, ingest
    from foodtaster.engine.judging import drift, layers, parser_spec
    from foodtaster.engine.judging.duplicates import key_hash
    from foodtaster.engine.judging.judging import flag_lines, valid_rows
    from foodtaster.engine.judging.suspects import SUSPECT, bytes_of_failed_only, mark_suspects
    from foodtaster.engine.spark import keep
    from foodtaster.engine.split import group_hold
    from foodtaster.registry import get_dataset

    config = get_dataset("orders")
    contract = config.read_contract()
    group_hash = group_hold.group_hash(config.group_by)

    def lines():
        return ingest.read_lines(spark, input_path)

    spec = drift.drift_spec(contract, config.producer_path)

    def flagged(with_drift: bool = False):
        return flag_lines(lines(), contract, config.max_message_bytes, drift=spec if with_drift else None)

    kept = keep(bytes_of_failed_only(flagged()), held)
    kept_drift = keep(bytes_of_failed_only(flagged(with_drift=True)), held)
    tasks = batch_counts.partitions(kept.count())

    def counted(rows) -> int:  # the batch's counts, as many tasks as the job gives them
        with batch_counts.shuffled_into(spark, tasks):
            return batch_counts.batch_counts(rows, FieldPath.of("message_id"), group_hash).count()

    # Checkpointed, not persisted: a persisted plan would serve the timed counts below from its cache.
    with batch_counts.shuffled_into(spark, tasks):
        kept_counts = keep(batch_counts.batch_counts(kept, FieldPath.of("message_id"), group_hash), held)
        per_split = batch_counts.split_offsets(kept_counts)
        splits = per_split.collect()
    watches = [(key_hash(FieldPath.of("message_id")), batch_counts.repeated_key_hashes(kept_counts)),
               (group_hash, group_hold.poisoned_groups(batch_counts.failed_group_hashes(kept_counts), None))]

    def write_valid(name: str, *, cleared: bool, numbered: bool) -> None:
        if cleared:
            rows = mark_suspects(kept, watches).where(~F.col(SUSPECT))
        else:
            rows = kept.where(~F.col("_failed"))
        if numbered:
            rows = ingest.with_line_numbers(rows, splits)
        else:
            rows = rows.withColumn("_line_number", F.col("_row_id"))
        rows = rows.select("*", F.lit("bench").alias("_batch_id"),
                           F.current_timestamp().alias("_ingested_at"))
        valid_rows(rows, contract).write.mode("overwrite").parquet(str(out / name))

    def kept_again(with_drift: bool = False) -> None:
        with ExitStack() as freed:
            keep(bytes_of_failed_only(flagged(with_drift)), freed)

    def job(recorded: bool) -> None:  # the whole job, no gate; its own lake each time
        from foodtaster.engine.batch.job import BatchRun
        from foodtaster.engine.run import run_batch
        from foodtaster.state.lake import Lake

        lake = Lake(str(out / ("job-drift" if recorded else "job-no-drift") / str(time.monotonic_ns())))
        run_batch(spark, BatchRun(config, input_path, lake, "bench", "2026-11-20", publish=False,
                                  gate=False, drift=recorded))

    def parsed():
        return layers.parse(lines(), parser_spec.parser_input(contract, config.max_message_bytes))

    created_at = layers.value_column(FieldPath.of("created_at"))
    return {
        "floor: from_json, written": lambda: run_floor(spark, input_path, out / "floor"),
        "text read, split counts": lambda: lines().groupBy(*ingest.SPLIT_KEYS).agg(
            *ingest.split_aggregates()).collect(),
        "the strict parser": lambda: parsed().agg(F.count(created_at)).collect(),
        "the parser and every rule": lambda: flagged().agg(F.count_if("_failed")).collect(),
        "the pass and the batch's counts": lambda: counted(flagged()),
        "the pass kept (local checkpoint)": kept_again,
        "kept: one scan": lambda: kept.agg(F.count_if("_failed")).collect(),
        "kept: the batch's counts": lambda: counted(kept),
        "kept: valid written, no joins": lambda: write_valid("bare", cleared=False, numbered=False),
        "kept: valid written, suspects and line numbers joined": lambda: write_valid(
            "joined", cleared=True, numbered=True),
        "the pass kept, drift columns too": lambda: kept_again(with_drift=True),
        "kept: drift counted (one aggregate)": lambda: drift.counted(kept_drift, spec),
    } | ({"job, no gate, drift recorded": lambda: job(True),
          "job, no gate, no drift": lambda: job(False)} if drift_jobs else {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--workdir", help="keep the input here (reused when the parameters match)")
    parser.add_argument("--drift-jobs", action="store_true",
                        help="also time the whole job (no gate) with drift recorded and without")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.workdir or scratch)
        input_path = work / "input"
        info = generate(input_path, args.messages, args.seed, 0.02)
        print(f"{args.messages:,} messages, {info['bytes'] / 2**20:,.0f} MiB; load {load()}", flush=True)
        spark = build_spark(args.master, args.driver_memory)
        held = ExitStack()
        runs = steps(spark, str(input_path), work / "out", held, args.drift_jobs)
        for step in runs.values():  # warm-up: first-run costs are not billed to a round
            step()
        seconds: dict[str, list[float]] = {name: [] for name in runs}
        for round_ in range(args.repeat):
            for name, step in runs.items():
                started = time.perf_counter()
                step()
                seconds[name].append(time.perf_counter() - started)
            print(f"round {round_ + 1} done; load {load()}", flush=True)
        floor = statistics.median(seconds["floor: from_json, written"])
        print("\n| step | median s | x floor | runs (s) |\n|---|---:|---:|---|")
        for name, runs_s in seconds.items():
            median = statistics.median(runs_s)
            listed = ", ".join(f"{s:.2f}" for s in runs_s)
            print(f"| {name} | {median:.2f} | {median / floor:.2f} | {listed} |")
        print(f"\nload average at the end: {load()}")
        held.close()
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
