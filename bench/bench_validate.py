"""Benchmark: what tasting every message costs, against a floor and a naive approach.

One Python process, one SparkSession, one generated batch; each variant is timed
wall-clock end to end and writes its own output folder under the work dir:

  floor        read the text, parse with the contract's schema (`from_json`), write Parquet. No checks.
  bound        the floor plus what the issue asks of every job besides checking: lineage columns on
               each row written, and the message ids that repeat found across the batch. A bound
               from below on the full job, not a way to run it.
  parse        the strict line parser alone (jvm/, `layers.parse`): bytes, syntax and each field's typed
               value and JSON-type status, written to Parquet. No rule.
  checks       the engine's own checking pass (`flag_lines`: every rule of every layer) written straight
               to Parquet, partitioned by pass/fail: no checkpoint, duplicates, line numbers or reasons.
  keyed        `checks`, with the key's copies judged as the job judges them (a redelivery dropped,
               differing copies quarantined) in one shuffle by key instead of a kept pass: the least
               a job that keeps no pass costs here. No group hold, line numbers, reasons or bytes
               read again; its outcomes are counted against the generated batch's.
  full-no-gx   `run_batch(..., publish=False, gate=False)`: bytes, parse, contract, dedup, split, metrics,
               the valid rows committed to the batch's audit branch, the quarantine to its table.
  full-gx      the same with the Great Expectations batch gate on the branch, then published (main of
               the valid table moved to the branch): the job as the pipeline runs it.
  gate         the Great Expectations batch gate alone, on the valid rows full-no-gx left on its branch.
  naive        pandera's pandas backend inside `mapInPandas`: json.loads each line, one pandas frame a
               batch validated with `Orders` (lazy), rows pandas cannot hold in typed columns validated
               one at a time; valid and quarantine written once, partitioned by outcome.

The nested dataset, `order_events` (its own generated batch of N messages; `--skip-nested` leaves it out):

  nested-floor    the floor on the nested batch: `from_json` with the schema of the typed message the
                  job writes (structs, arrays of structs, decimals, dates), Parquet.
  nested-full-gx  `run_batch` with the gate, as full-gx, on the nested batch.

Nested against flat: each dataset's job with the gate against its own floor, and the ratio of the two
ratios (nested / flat, target <= 1.15): what nesting adds to the job beyond what it adds to parsing.

Two more measurements, each on request:

  --fresh-processes   floor, full-no-gx, full-gx, nested-floor and nested-full-gx again, each in a new
                      Python process with a fresh JVM (what a scheduled Airflow task sees: JVM start,
                      imports, JIT warm-up included), timed from outside; ratios against the
                      fresh-process floors.
  --linear-messages M full-no-gx once more on M messages (10M for the issue's target): its time against
                      M/N times full-no-gx at N, and the driver's heap (old generation after GC, sampled)
                      for both runs, which must stay flat.

Each variant runs `--repeat` times (3 by default), in rounds; the table reports each one's median
run, as the issue's targets are stated (the lower middle run when R is even), and lists every run.

Run: `.venv/bin/python bench/bench_validate.py [--messages N] [--naive-messages M] [--fresh-processes]
[--linear-messages M] [--repeat R] [--skip-nested] [--json PATH]` (see bench/README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, Self

import psutil

# the dev tools (foodtaster_dev: the sample generator, the oracle) are used from the checkout
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BATCH_DATE = "2026-11-20"
NO_GX_BATCH = "bench-no-gx"
NESTED = "order_events"
# The nested floor's schema, derived once by the parent from the job's plan, read by a fresh
# process: a fresh floor then does no more than the flat one (no contract read, no pandera import).
NESTED_SCHEMA = "nested-floor-schema.json"
NESTED_TARGET = 1.15  # nested job/floor over flat job/floor, the job with its gate
TARGETS = {  # (variant, reference variant, comparison, bound)
    "full-no-gx <= 1.3x floor": ("full-no-gx", "floor", "<=", 1.3),
    "full-gx <= 1.8x floor": ("full-gx", "floor", "<=", 1.8),
    "fresh full-no-gx vs fresh floor (reported)": ("fresh full-no-gx", "fresh floor", "<=", 2.0),
    "fresh full-gx <= 2.0x fresh floor": ("fresh full-gx", "fresh floor", "<=", 2.0),
    "naive >= 2x full-gx": ("naive", "full-gx", ">=", 2.0),
}


# ---------------------------------------------------------------- measuring


class ProcessSampler(threading.Thread):
    """Peak RSS and CPU seconds of this Python process, the JVM and the Python workers, sampled.

    Only the JVM (the `SparkSubmit` java child) and PySpark's daemon and workers are counted:
    short-lived helpers the JVM forks (Hadoop's `chmod`s) briefly show the JVM's RSS and would
    double it. Workers' RSS is a sum, so pages they share with the daemon count more than once.
    CPU is user + system time, summed per label; a worker that ends between two samples loses
    at most one interval. On a shared machine CPU seconds move far less than wall seconds.
    """

    def __init__(self, interval: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.label = "setup"
        self.peaks: dict[str, dict[str, int]] = {}
        self.cpu: dict[str, float] = {}
        self.me = psutil.Process()
        self.seen: dict[int, float] = {self.me.pid: self._cpu(self.me)}

    @staticmethod
    def _cpu(process: psutil.Process) -> float:
        times = process.cpu_times()
        return times.user + times.system

    def _kind(self, process: psutil.Process) -> str | None:
        try:
            command = " ".join(process.cmdline())
        except psutil.Error:
            return None
        if "org.apache.spark.deploy.SparkSubmit" in command and process.name() == "java":
            return "jvm"
        return "py_workers" if "pyspark.daemon" in command or "pyspark.worker" in command else None

    def sample(self) -> None:
        with self.lock:
            now = {"python": self.me.memory_info().rss, "jvm": 0, "py_workers": 0}
            cpu = self._cpu(self.me) - self.seen[self.me.pid]
            self.seen[self.me.pid] += cpu
            for child in self.me.children(recursive=True):
                kind = self._kind(child)
                if kind is None:
                    continue
                try:
                    rss, seconds = child.memory_info().rss, self._cpu(child)
                except psutil.Error:
                    continue
                now[kind] += rss
                cpu += seconds - self.seen.get(child.pid, 0.0)
                self.seen[child.pid] = seconds
            now["total"] = sum(now.values())
            self.cpu[self.label] = self.cpu.get(self.label, 0.0) + cpu
            for key in ("all", self.label):
                peak = self.peaks.setdefault(key, dict.fromkeys(now, 0))
                for name, value in now.items():
                    peak[name] = max(peak[name], value)

    def switch(self, label: str) -> None:
        """Bill what was used so far to the current label, then start billing `label`."""
        with contextlib.suppress(psutil.Error):
            self.sample()
        self.label = label

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            with contextlib.suppress(psutil.Error):
                self.sample()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def mib(value: int) -> str:
    return f"{value / 2**20:,.0f} MiB"


# ---------------------------------------------------------------- input


def generate(folder: Path, messages: int, seed: int, poison_rate: float,
             dataset: str = "orders") -> dict[str, Any]:
    """Generate the batch once (plain files so Spark can split them); reuse it when kept.
    `dataset`: `orders` (`sample.generate_batch`) or `order_events` (`sample_events.generate_events`)."""
    from foodtaster_dev.sample import generate_batch
    from foodtaster_dev.sample_events import generate_events

    generator = {"orders": generate_batch, NESTED: generate_events}[dataset]
    params = {"dataset": dataset, "messages": messages, "seed": seed, "poison_rate": poison_rate,
              "files": 4, "batch_date": BATCH_DATE}
    stamp = folder.parent / f"{folder.name}.params.json"
    if stamp.exists() and folder.exists() and json.loads(stamp.read_text()).get("params") == params:
        return json.loads(stamp.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    batch = generator(folder, messages=messages, seed=seed, poison_rate=poison_rate,
                      batch_date=BATCH_DATE, files=4, gzip_files=0, keep_truth=False)
    info = {
        "params": params, "outcomes": batch.counts(), "seconds": round(time.perf_counter() - started, 1),
        "bytes": sum(Path(f).stat().st_size for f in batch.files),
    }
    stamp.write_text(json.dumps(info))
    return info


# ---------------------------------------------------------------- the variants


def orders_schema() -> Any:
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    strings = ["message_id", "order_id", "customer_id", "currency", "status", "created_at", "producer"]
    return StructType(
        [StructField(name, StringType()) for name in strings]
        + [StructField("amount", DoubleType()), StructField("items", LongType())]
    )


def nested_schema(spark: Any, input_path: str) -> Any:
    """The typed message the job writes for `order_events` (`row_checks.message_columns`: one
    column a top-level key), as one StructType: what the nested floor hands `from_json`.

    Read from the checking pass's plan over `input_path`, so it is the job's own schema by
    construction; resolving the plan runs no Spark job.
    """
    from pyspark.sql.types import StructType

    from foodtaster.engine.judging.row_checks import message_keys

    contract, flagged = checked_lines(spark, input_path, NESTED)
    return StructType([flagged.schema[key] for key in message_keys(contract)])


def read_nested_schema(workdir: Path) -> Any:
    from pyspark.sql.types import StructType

    return StructType.fromJson(json.loads((workdir / NESTED_SCHEMA).read_text()))


def run_floor(spark: Any, input_path: str, out: Path, schema: Any = None) -> dict[str, Any]:
    """`from_json` with `schema` (default: the orders message's), written as Parquet."""
    from pyspark.sql import functions as F

    parsed = spark.read.text(input_path).select(F.from_json("value", schema or orders_schema()).alias("m"))
    parsed.select("m.*").write.mode("overwrite").parquet(str(out))
    return {}


def run_bound(spark: Any, input_path: str, out: Path) -> dict[str, Any]:
    """The floor, plus lineage on every written row and the repeated message ids found.

    Cheaper than any job that meets the issue: line numbers are row ids (real ones need the
    split offsets), no rule is checked, no quarantine is written, and duplicates are only
    found (a shuffle of 64-bit key hashes over the written column), not resolved.
    """
    from pyspark.sql import functions as F

    rows = spark.read.text(input_path).select(
        F.from_json("value", orders_schema()).alias("m"),
        F.lit("bench-bound").alias("_batch_id"),
        F.col("_metadata.file_path").alias("_source_file"),
        F.monotonically_increasing_id().alias("_line_number"),
        F.current_timestamp().alias("_ingested_at"),
    )
    rows.select("m.*", "_batch_id", "_source_file", "_line_number", "_ingested_at").write.mode(
        "overwrite"
    ).parquet(str(out))
    key_hashes = spark.read.parquet(str(out)).where(F.col("message_id").isNotNull()).groupBy(
        F.xxhash64("message_id")
    ).count()
    return {"repeated_key_hashes": key_hashes.where(F.col("count") > 1).count()}


def run_parse(spark: Any, input_path: str, out: Path) -> dict[str, Any]:
    """The strict line parser alone: each line's reasons and each field's value and status, written."""
    from foodtaster.engine.batch import ingest
    from foodtaster.engine.judging import layers, parser_spec
    from foodtaster.registry import get_dataset

    config = get_dataset("orders")
    contract = config.read_contract()
    parsed = layers.parse(ingest.read_lines(spark, input_path),
                          parser_spec.parser_input(contract, config.max_message_bytes))
    parsed.drop("_raw").write.mode("overwrite").parquet(str(out))
    return {}


def checked_lines(spark: Any, input_path: str, dataset: str = "orders") -> tuple[Any, Any]:
    """The dataset's contract and `flag_lines` on every line of `input_path`: the checking pass
    `checks` writes and `keyed` judges (orders), whose plan gives the nested floor its schema."""
    from foodtaster.engine.batch import ingest
    from foodtaster.engine.judging.judging import flag_lines
    from foodtaster.registry import get_dataset

    config = get_dataset(dataset)
    contract = config.read_contract()
    return contract, flag_lines(ingest.read_lines(spark, input_path), contract, config.max_message_bytes)


def run_checks(spark: Any, input_path: str, out: Path) -> dict[str, Any]:
    """`flag_lines` on every line, each row written once with its verdict: what checking costs here.

    Partitioned by `_failed` rather than filtered: a filter on the verdict makes Spark evaluate
    the parse for the filter and again for the written columns.
    """
    from pyspark.sql import functions as F

    from foodtaster.lineage import LINEAGE

    contract, flagged = checked_lines(spark, input_path)
    flagged.withColumns({
        "_batch_id": F.lit("bench-checks"), "_line_number": F.col("_row_id"),
        "_ingested_at": F.current_timestamp(),
    }).select(*[field.name for field in contract.fields], *LINEAGE, "_failed").write.mode(
        "overwrite"
    ).partitionBy("_failed").parquet(str(out))
    return {}


def run_keyed(spark: Any, input_path: str, out: Path, dataset: str = "orders", *,
              gate: bool = False) -> dict[str, Any]:
    """`run_checks`, with each key's copies compared over a window in the stage after one
    shuffle by key, written once partitioned by outcome (valid, quarantined, duplicate).
    `gate`: then the dataset's gate on the valid rows written, as the job runs it on its own."""
    from pyspark.sql import functions as F

    from foodtaster.contract.path import Path as FieldPath
    from foodtaster.engine.judging import layers, row_checks
    from foodtaster.engine.judging.judging import unique_key

    contract, flagged = checked_lines(spark, input_path, dataset)
    key = str(unique_key(contract))  # a Path: Spark takes its name
    fields = list(row_checks.message_keys(contract))  # the message's top-level keys, typed as valid/ has them
    rows = flagged.select(*[layers.written_column(FieldPath.of(name)) for name in fields],
                          "_source_file", "_row_id", "_failed",
                          F.when(F.col("_failed"), F.col("_raw")).alias("_raw"),
                          F.xxhash64("_raw").alias("_raw_hash"))
    judged = copies_compared(rows, key)
    outcome = keyed_outcome(key).alias("_outcome")
    judged.select(*fields, "_source_file", "_row_id", "_raw", outcome).write.mode(
        "overwrite").partitionBy("_outcome").parquet(str(out))
    return gate_bound(spark, out, dataset) if gate else {}


def copies_compared(rows: Any, key: str) -> Any:
    """`rows` (with `_row_id` and `_raw_hash`) shuffled once by `key`, each with its key's first
    row id (`_first_copy`) and whether all its key's copies are byte-identical (`_identical`)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_key = Window.partitionBy(key)
    return rows.repartition(key).select(
        "*", F.min("_row_id").over(by_key).alias("_first_copy"),
        (F.min("_raw_hash").over(by_key) == F.max("_raw_hash").over(by_key)).alias("_identical"))


def keyed_outcome(key: str, held: Any = None) -> Any:
    """A row's outcome from `copies_compared`: a later identical copy dropped; failed, a copy
    that differs or `held` (a column) quarantined; else valid."""
    from pyspark.sql import functions as F

    redelivery = F.col(key).isNotNull() & F.col("_identical") & (F.col("_row_id") != F.col("_first_copy"))
    quarantined = F.col("_failed") | (F.col(key).isNotNull() & ~F.col("_identical"))
    if held is not None:
        quarantined = quarantined | held
    return F.when(redelivery, "duplicate_dropped").when(quarantined, "quarantined").otherwise("valid")


def gate_bound(spark: Any, out: Path, dataset: str) -> dict[str, Any]:
    """The dataset's gate on the valid rows a bound wrote under `out`, as the job runs it on its
    own; it must pass: a gate that failed on a column the bound writes otherwise than the job
    would time less than the job's."""
    from foodtaster.engine.gate.gate import run_gate
    from foodtaster.registry import get_dataset

    config = get_dataset(dataset)
    docs = str(out.with_name(out.name + "-docs"))
    passed = run_gate(spark.read.parquet(str(out / "_outcome=valid")), config.suite_path(), config.name,
                      f"bench-{out.name}", BATCH_DATE, data_docs_uri=docs)["passed"]
    assert passed, f"the gate failed on the valid rows {out.name} wrote ({dataset})"
    return {"gate_passed": passed}


def run_keyed_full(spark: Any, input_path: str, out: Path, dataset: str = "orders", *,
                   every_bytes: bool = False) -> dict[str, Any]:
    """`keyed` with what any design that keeps every verdict pays beyond it, then the gate: each
    line's number in its file (its split's lines counted first, in a query of the text alone),
    each failed message's reasons, the conversation hold (a second window, by group: a message
    after its conversation's first failed one is held). Still less than a verdict needs: the
    bytes of a quarantined message that passed are not carried (`every_bytes`: every message's
    bytes are, through both shuffles, and written where quarantined), nothing is counted or
    recorded."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from foodtaster.contract.path import Path as FieldPath
    from foodtaster.engine.batch import ingest
    from foodtaster.engine.judging import layers, row_checks
    from foodtaster.engine.judging.judging import explain, unique_key
    from foodtaster.registry import get_dataset

    config = get_dataset(dataset)
    assert config.group_by is not None and config.order_by is not None, f"{dataset}: no conversations"
    contract, flagged = checked_lines(spark, input_path, dataset)
    splits = ingest.split_offsets(ingest.read_lines(spark, input_path)).collect()
    key, group, order = (str(unique_key(contract)), FieldPath.parse(config.group_by),
                         FieldPath.parse(config.order_by))
    fields = list(row_checks.message_keys(contract))
    explained = explain(flagged, contract, config.max_message_bytes)
    carried = F.col("_raw") if every_bytes else F.when(F.col("_failed"), F.col("_raw")).alias("_raw")
    rows = explained.select(*[layers.written_column(FieldPath.of(name)) for name in fields],
                            "_source_file", "_row_id", "_split_start", "_failed", "_reasons", carried,
                            F.xxhash64("_raw").alias("_raw_hash"))
    by_group = Window.partitionBy(F.col(str(group)))
    order_column = F.col(str(order))
    judged = copies_compared(rows, key).select(
        "*", F.min(F.when(F.col("_failed"), order_column)).over(by_group).alias("_poisoned_at"))
    held = F.col("_poisoned_at").isNotNull() & (order_column >= F.col("_poisoned_at"))
    outcome = keyed_outcome(key, held).alias("_outcome")
    numbered = ingest.with_line_numbers(judged.select("*", outcome), splits)
    raw = F.when(F.col("_outcome") == "quarantined", F.col("_raw")).alias("_raw")
    numbered.select(*fields, "_source_file", "_line_number", F.lit("bench-keyed-full").alias("_batch_id"),
                    F.current_timestamp().alias("_ingested_at"), raw, "_reasons", "_outcome").write.mode(
        "overwrite").partitionBy("_outcome").parquet(str(out))
    return gate_bound(spark, out, dataset)


def keyed_outcomes(spark: Any, out: Path, expected: dict[str, int]) -> dict[str, int]:
    """What `run_keyed` wrote, by outcome; it must be what the batch was generated to give, or its
    time bounds nothing (counted after the runs, untimed)."""
    counted = spark.read.parquet(str(out)).groupBy("_outcome").count().collect()
    outcomes = {row["_outcome"]: row["count"] for row in counted}
    assert outcomes == expected, f"keyed judged the batch as {outcomes}, not as generated: {expected}"
    return outcomes


def run_gate_only(spark: Any, lake_root: Path) -> dict[str, Any]:
    """The GX gate alone over the valid rows `run_full(gate=False)` staged under `lake_root`."""
    from foodtaster.engine.gate.gate import run_gate
    from foodtaster.registry import get_dataset
    from foodtaster.state.lake import Lake

    config = get_dataset("orders")
    staged = staged_files(Lake(str(lake_root)), config.name, NO_GX_BATCH)
    gate = run_gate(spark.read.parquet(*staged), config.suite_path(), config.name, NO_GX_BATCH, BATCH_DATE,
                    data_docs_uri=str(lake_root / "gate-only-docs"))
    return {"gate_passed": gate["passed"]}


def staged_files(lake: Any, dataset: str, batch_id: str) -> list[str]:
    """The valid files a run with `publish=False` left on the batch's audit branch."""
    from foodtaster.state.tables import VALID, DatasetTables, audit_branch

    found = DatasetTables(lake, dataset).batch(VALID, batch_id, audit_branch(batch_id))
    assert found is not None, f"no valid rows of {batch_id} on its audit branch"
    return list(found.files)


class PeakSampler(threading.Thread):
    """The peak of `measure()` (bytes), called every `interval` seconds while in the `with` block;
    a sample that fails is skipped."""

    def __init__(self, interval: float) -> None:
        super().__init__(daemon=True)
        self.interval, self.stopped, self.peak = interval, threading.Event(), 0

    def measure(self) -> int:
        raise NotImplementedError

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            with contextlib.suppress(Exception):
                self.peak = max(self.peak, self.measure())

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        self.join()


class HeapSampler(PeakSampler):
    """The driver JVM's old generation after its last collection, sampled: what stays on the heap."""

    def __init__(self, spark: Any, interval: float = 0.5) -> None:
        super().__init__(interval)
        jvm = spark.sparkContext._jvm
        pools = jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
        self.pools = [p for p in pools if "Old Gen" in p.getName() or "Tenured" in p.getName()]

    def measure(self) -> int:
        usage = [p.getCollectionUsage() for p in self.pools]
        return sum(u.getUsed() for u in usage if u is not None)


class LiveHeapSampler(PeakSampler):
    """The driver JVM's live heap: every `interval` seconds, `jcmd <pid> GC.class_histogram`,
    which collects in full and then counts the objects still reachable. The old generation
    after a collection counts what G1 promoted and has not yet marked dead, and the heap in use
    read right after `System.gc()` read 623 MiB where the histogram counted 117 MiB (10M):
    only the histogram counts what is kept. The pauses slow the job: untimed runs only.

    While a thread holds the GC locker (a JNI critical section: compression), the histogram's
    collection is skipped and it counts garbage: 250-450 MiB of byte arrays the next histogram
    did not find. The JVM says so as a gc warning ("GC locker is held; pre-dump GC was
    skipped"), which this sampler has it log to a file of its own (`jcmd VM.log`): a histogram
    during which that file grew is not counted (`skipped`)."""

    def __init__(self, spark: Any, interval: float = 2.0) -> None:
        super().__init__(interval)
        self.pid = str(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        self.gc_log = Path(tempfile.mkdtemp(prefix="foodtaster-live-heap-")) / "gc-warnings.log"
        self.counted = self.skipped = 0

    def __enter__(self) -> Self:
        self._jcmd("VM.log", f"output=file={self.gc_log}", "what=gc=warning")
        return super().__enter__()

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        with contextlib.suppress(Exception):
            self._jcmd("VM.log", f"output=file={self.gc_log}", "what=disable")
        shutil.rmtree(self.gc_log.parent, ignore_errors=True)

    def measure(self) -> int:
        before = self._gc_warnings()
        out = self._jcmd("GC.class_histogram")
        if self._gc_warnings() != before:
            self.skipped += 1
            raise RuntimeError("the histogram's collection was skipped: it counted garbage")
        self.counted += 1
        total = next(line for line in out.splitlines() if line.startswith("Total"))
        return int(total.split()[-1])

    def _gc_warnings(self) -> int:
        return self.gc_log.stat().st_size if self.gc_log.exists() else 0

    def _jcmd(self, *command: str) -> str:
        done = subprocess.run(["jcmd", self.pid, *command], capture_output=True, text=True,
                              timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"jcmd {' '.join(command)}: {done.stdout[-500:]}{done.stderr[-500:]}")
        return done.stdout


def run_full_heap(spark: Any, input_path: str, out: Path, *, messages: int) -> dict[str, Any]:
    """full-no-gx, with the driver's heap sampled (for the linear-scaling comparison)."""
    with HeapSampler(spark) as heap:
        result = run_full(spark, input_path, out, gate=False, messages=messages)
    return {**result, "driver_old_gen_after_gc": heap.peak}


FRESH = ("floor", "full-no-gx", "full-gx")
NESTED_FRESH = ("nested-floor", "nested-full-gx")
# `keyed` alone in a fresh process, each dataset: the least a design that keeps the contract's
# verdicts pays (`bench_peers.py`'s "bound"); `-gx`, with the gate on the valid rows it wrote.
KEYED_FRESH = ("keyed", "nested-keyed", "keyed-gx", "nested-keyed-gx")
# `keyed` with line numbers, reasons and the conversation hold, then the gate (`run_keyed_full`);
# `-bytes-`, every message's bytes carried.
FULL_BOUND_FRESH = ("keyed-full-gx", "nested-keyed-full-gx", "keyed-bytes-gx", "nested-keyed-bytes-gx")


def fresh_runs(args: argparse.Namespace, workdir: Path, sampler: ProcessSampler) -> dict[str, dict[str, Any]]:
    """Each of FRESH (and NESTED_FRESH) in a new process (`--only`), in rounds, timed from outside:
    JVM start included."""
    runs: dict[str, list[dict[str, Any]]] = {}
    variants = FRESH if args.skip_nested else FRESH + NESTED_FRESH
    for round_ in range(1, args.repeat + 1):
        for variant in variants:
            name = f"fresh {variant}"
            command = [sys.executable, str(Path(__file__).resolve()), "--only", variant,
                       "--workdir", str(workdir), "--keep", "--messages", str(args.messages),
                       "--seed", str(args.seed), "--poison-rate", str(args.poison_rate),
                       "--master", args.master, "--driver-memory", args.driver_memory]

            def one(command: list[str] = command) -> dict[str, Any]:
                done = subprocess.run(command, capture_output=True, text=True)
                if done.returncode != 0:
                    raise RuntimeError(f"{command}: {done.stderr[-2000:]}")
                return {}

            runs.setdefault(name, []).append(timed(name, sampler, one, f" (run {round_}/{args.repeat})"))
    return {name: median_run(each) for name, each in runs.items()}


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median seconds (the lower middle one of an even count), its CPU and load as
    measured, with every run's seconds in `runs`, in the order they ran."""
    ordered = sorted(runs, key=lambda run: run["seconds"])
    return {**ordered[(len(ordered) - 1) // 2], "runs": [round(run["seconds"], 2) for run in runs]}


def run_only(args: argparse.Namespace, workdir: Path) -> int:
    """One variant in this process, nothing else: what `--fresh-processes` times from outside."""
    spark = build_spark(args.master, args.driver_memory)
    out = workdir / "out" / "fresh" / args.only
    if args.only == "floor":
        run_floor(spark, str(workdir / "input"), out)
    elif args.only == "nested-floor":
        run_floor(spark, str(workdir / "nested-input"), out, read_nested_schema(workdir))
    elif args.only in KEYED_FRESH:
        nested = args.only.startswith("nested-")
        run_keyed(spark, str(workdir / ("nested-input" if nested else "input")), out,
                  NESTED if nested else "orders", gate=args.only.endswith("-gx"))
    elif args.only in FULL_BOUND_FRESH:
        nested = args.only.startswith("nested-")
        run_keyed_full(spark, str(workdir / ("nested-input" if nested else "input")), out,
                       NESTED if nested else "orders", every_bytes="-bytes-" in args.only)
    elif args.only == "nested-full-gx":
        run_full(spark, str(workdir / "nested-input"), out, gate=True, messages=args.messages, dataset=NESTED)
    else:
        run_full(spark, str(workdir / "input"), out, gate=args.only == "full-gx", messages=args.messages)
    spark.stop()
    return 0


def run_full(spark: Any, input_path: str, out: Path, *, gate: bool, messages: int,
             dataset: str = "orders") -> dict[str, Any]:
    from foodtaster.engine.batch.job import BatchRun
    from foodtaster.engine.run import run_batch
    from foodtaster.registry import get_dataset
    from foodtaster.state.lake import Lake

    # With its gate, the job as the pipeline runs it: judged on its audit branch, then published by
    # the guarded move of main. Without it (the gate's own benchmark), left on its branch.
    batch_id = "bench-gx" if gate else NO_GX_BATCH
    run = BatchRun(get_dataset(dataset), input_path, Lake(str(out)), batch_id, BATCH_DATE,
                   publish=gate, gate=gate)
    summary = run_batch(spark, run).to_json()
    assert summary["messages"] == messages, f"{batch_id}: {summary['messages']} messages, not {messages}"
    return {
        "valid": summary["valid"], "quarantined": summary["quarantined"],
        "duplicates_dropped": summary["duplicates_dropped"], "timings": summary["timings"],
        "gate_passed": summary["gate"]["passed"], "held_for_group": summary["held_for_group"],
        "published": summary["published"],
    }


NAIVE_OUTPUT = (
    "message_id string, order_id string, customer_id string, amount double, currency string, "
    "status string, created_at timestamp, items long, producer string, "
    "_raw binary, reasons array<string>, _source_file string, _outcome string"
)


def naive_validate(batches: Iterator[Any], max_message_bytes: int,
                   stats: dict[str, Any] | None = None) -> Iterator[Any]:
    """pandera's pandas backend on each Arrow batch: what one would write without the engine.

    Lines are checked for bytes and parsed with json.loads (strict: no NaN/Infinity); the objects
    whose values pandas can hold in the model's dtypes become one frame validated with
    `Orders.validate(lazy=True)`, failing rows found by failure_cases' index; the rest (a wrong
    JSON type, a null number) are validated one at a time (`foodtaster_dev.oracle`). Uniqueness
    holds within a pandas batch only. `stats`, Spark accumulators by name, get where the time went.
    """
    import json
    import time

    import pandas as pd
    import pandera.pandas as pa

    from contracts.orders import Orders
    from foodtaster.contract import read_contract
    from foodtaster.contract.pandera_reader import json_type_of
    from foodtaster_dev.oracle import failed_rules, json_type_matches

    schema = Orders.to_schema()
    contract = read_contract(Orders)
    kinds = {name: json_type_of(column.dtype).name for name, column in schema.columns.items()}

    def reject(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    spent = {"parse_s": 0.0, "frame_validate_s": 0.0, "single_validate_s": 0.0, "output_s": 0.0}
    for pdf in batches:
        mark = time.perf_counter()
        raws = pdf["_raw"].tolist()
        reasons: list[list[str]] = [[] for _ in raws]
        messages: list[dict | None] = [None] * len(raws)
        for i, raw in enumerate(raws):
            if len(raw) > max_message_bytes:
                reasons[i].append("bytes:line.too_large")
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                reasons[i].append("bytes:line.not_utf8")
                continue
            if not text.strip(" \t"):
                reasons[i].append("bytes:line.empty")
            elif "\x00" in text:
                reasons[i].append("bytes:line.nul_byte")
            else:
                try:
                    message = json.loads(text, parse_constant=reject)
                except ValueError:
                    reasons[i].append("parse:json.invalid")
                    continue
                if isinstance(message, dict):
                    messages[i] = message
                else:
                    reasons[i].append("parse:json.not_object")

        def typed(message: dict) -> bool:
            return all(
                json_type_matches(kind, value) if (value := message.get(name)) is not None
                else kind == "string"
                for name, kind in kinds.items()
            )

        framed = [i for i, m in enumerate(messages) if m is not None and typed(m)]
        framed_set = set(framed)
        single = [i for i, m in enumerate(messages) if m is not None and i not in framed_set]
        spent["parse_s"] += time.perf_counter() - mark
        mark = time.perf_counter()
        rows_framed = len(framed)
        if framed:
            frame = pd.DataFrame(
                {name: pd.array([messages[i].get(name) for i in framed], dtype=str(column.dtype))
                 for name, column in schema.columns.items()},
                index=framed,
            )
            try:
                schema.validate(frame, lazy=True)
            except pa.errors.SchemaErrors as errors:
                cases = errors.failure_cases
                if cases["index"].isna().any():  # a frame-wide failure names no row: go row by row
                    single.extend(framed)
                    rows_framed = 0
                else:
                    for index, column, check in zip(cases["index"], cases["column"], cases["check"],
                                                    strict=True):
                        reasons[int(index)].append(f"contract:{column}.{check}")
        spent["frame_validate_s"] += time.perf_counter() - mark
        mark = time.perf_counter()
        for i in single:
            reasons[i].extend(f"contract:{rule}" for rule in sorted(failed_rules(messages[i], Orders,
                                                                               contract)))
        spent["single_validate_s"] += time.perf_counter() - mark
        mark = time.perf_counter()

        quarantined = [bool(r) for r in reasons]
        out: dict[str, Any] = {}
        for name, kind in kinds.items():
            values = [
                v if m is not None and (v := m.get(name)) is not None and json_type_matches(kind, v)
                else None
                for m in messages
            ]
            dtype = {"number": "Float64", "integer": "Int64"}.get(kind, "object")
            out[name] = pd.array(values, dtype=dtype) if dtype != "object" else values
        out["created_at"] = pd.to_datetime(pd.Series(out["created_at"], dtype="object"), utc=True,
                                           errors="coerce", format="ISO8601")
        out["_raw"] = [raw if bad else None for raw, bad in zip(raws, quarantined, strict=True)]
        out["reasons"] = [r or None for r in reasons]
        out["_source_file"] = pdf["_source_file"].tolist()
        out["_outcome"] = ["quarantined" if bad else "valid" for bad in quarantined]
        result = pd.DataFrame(out)
        spent["output_s"] += time.perf_counter() - mark
        if stats:
            stats["rows_in_frames"].add(rows_framed)
            stats["rows_one_by_one"].add(len(single))
            for name, seconds in spent.items():
                stats[name].add(seconds)
                spent[name] = 0.0
        yield result


def run_naive(spark: Any, input_path: str, out: Path, *, max_message_bytes: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    lines = spark.read.text(input_path).select(
        F.col("value").cast("binary").alias("_raw"), F.col("_metadata.file_path").alias("_source_file")
    )
    context = spark.sparkContext
    stats = {name: context.accumulator(0) for name in ("rows_in_frames", "rows_one_by_one")}
    stats.update({name: context.accumulator(0.0)
                  for name in ("parse_s", "frame_validate_s", "single_validate_s", "output_s")})
    validate = partial(naive_validate, max_message_bytes=max_message_bytes, stats=stats)
    checked = lines.mapInPandas(validate, NAIVE_OUTPUT)
    checked.write.mode("overwrite").partitionBy("_outcome").parquet(str(out))
    return {"worker_stats": {name: round(acc.value, 1) for name, acc in stats.items()}}


def naive_counts(spark: Any, out: Path) -> dict[str, int]:
    """Read back after the clock stopped: how many rows each outcome got."""
    rows = spark.read.parquet(str(out)).groupBy("_outcome").count().collect()
    return {r["_outcome"]: r["count"] for r in rows}


# ---------------------------------------------------------------- the run


def build_spark(master: str, driver_memory: str) -> Any:
    """`foodtaster.engine.spark.build_session`, with the driver's heap set before the JVM starts.

    build_session takes no extra conf; `--driver-memory` in PYSPARK_SUBMIT_ARGS reaches
    spark-submit the same way a `spark.driver.memory` builder conf would.
    """
    from foodtaster.engine.spark import build_session

    submit = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    if "--driver-memory" not in submit:
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {driver_memory} {submit}"
    spark = build_session("foodtaster-bench", master=master)
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    print(f"spark {spark.version} master={spark.sparkContext.master} "
          f"spark.driver.memory={spark.conf.get('spark.driver.memory', None)} JVM max heap={mib(heap)}",
          flush=True)
    return spark


def timed(name: str, sampler: ProcessSampler, action: Callable[[], dict[str, Any]],
          run: str = "") -> dict[str, Any]:
    """One run of a variant; its CPU and peak RSS are billed to `name` (`run` is only printed)."""
    sampler.switch(name)
    cpu_before = sampler.cpu.get(name, 0.0)
    load_before = load()
    print(f"[{time.strftime('%H:%M:%S')}] {name}{run}: running (load {load_before})", flush=True)
    started = time.perf_counter()
    extra = action()
    seconds = time.perf_counter() - started
    sampler.switch("between")
    cpu = sampler.cpu.get(name, 0.0) - cpu_before
    print(f"[{time.strftime('%H:%M:%S')}] {name}{run}: {seconds:.1f}s, {cpu:.0f} CPU s (load {load()})",
          flush=True)
    return {"seconds": seconds, "cpu_seconds": cpu, "load_before": load_before, "load_after": load(), **extra}


def ratio_table(results: dict[str, dict[str, Any]], messages: int) -> list[dict[str, Any]]:
    """Each variant against the floor of its dataset (a nested one against `nested-floor`), the
    fresh ones too (their own floors are in `check_targets` and `nested_vs_flat`)."""
    rows = []
    for name, result in results.items():
        floor = results.get("nested-floor" if "nested-" in name else "floor", {})
        seconds, cpu = result["seconds"], result["cpu_seconds"]
        rows.append({
            "variant": name + (" (extrapolated)" if result.get("extrapolated_from") else ""),
            "seconds": seconds, "messages_per_s": messages / seconds,
            "x_floor": seconds / floor["seconds"] if floor else None,
            "cpu_seconds": cpu, "cpu_x_floor": cpu / floor["cpu_seconds"] if floor else None,
        })
    return rows


def check_targets(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    verdicts = []
    for label, (variant, reference, op, bound) in TARGETS.items():
        if variant not in results or reference not in results:
            verdicts.append({"target": label, "ratio": None, "verdict": "SKIP", "cpu_ratio": None,
                             "cpu_verdict": "SKIP"})
            continue
        ratio = results[variant]["seconds"] / results[reference]["seconds"]
        cpu_ratio = results[variant]["cpu_seconds"] / results[reference]["cpu_seconds"]
        met = ratio <= bound if op == "<=" else ratio >= bound
        cpu_met = cpu_ratio <= bound if op == "<=" else cpu_ratio >= bound
        verdicts.append({"target": label, "ratio": ratio, "verdict": "PASS" if met else "MISS",
                         "cpu_ratio": cpu_ratio, "cpu_verdict": "PASS" if cpu_met else "MISS"})
    return verdicts


COMPARISONS = (  # (label, flat job, flat floor, nested job, nested floor): measured in the same run
    ("warm", "full-gx", "floor", "nested-full-gx", "nested-floor"),
    ("fresh", "fresh full-gx", "fresh floor", "fresh nested-full-gx", "fresh nested-floor"),
)


def nested_vs_flat(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each dataset's job with the gate against its own floor, and the nested ratio over the
    flat one: nesting costs the floor too (a deeper `from_json`), so only what the job adds
    beyond that is the engine's. Warm (one session) and, when run, fresh processes."""
    compared = []
    for label, flat_job, flat_floor, nested_job, nested_floor in COMPARISONS:
        if not all(name in results for name in (flat_job, flat_floor, nested_job, nested_floor)):
            continue
        pairs = {"orders": (results[flat_job], results[flat_floor]),
                 NESTED: (results[nested_job], results[nested_floor])}
        datasets = {
            dataset: {"floor_seconds": floor["seconds"], "job_seconds": job["seconds"],
                      "ratio": job["seconds"] / floor["seconds"],
                      "cpu_ratio": job["cpu_seconds"] / floor["cpu_seconds"],
                      "load": {"floor": f"{floor['load_before']} -> {floor['load_after']}",
                               "job": f"{job['load_before']} -> {job['load_after']}"}}
            for dataset, (job, floor) in pairs.items()
        }
        ratio = datasets[NESTED]["ratio"] / datasets["orders"]["ratio"]
        cpu_ratio = datasets[NESTED]["cpu_ratio"] / datasets["orders"]["cpu_ratio"]
        compared.append({"label": label, "datasets": datasets, "ratio_of_ratios": ratio,
                         "verdict": "PASS" if ratio <= NESTED_TARGET else "MISS",
                         "cpu_ratio_of_ratios": cpu_ratio,
                         "cpu_verdict": "PASS" if cpu_ratio <= NESTED_TARGET else "MISS"})
    return compared


def print_nested_vs_flat(compared: list[dict[str, Any]], repeat: int) -> None:
    if not compared:
        return
    runs = f"median of {repeat} runs" if repeat > 1 else "one run"
    print()
    print(f"nested against flat: the job with the gate against its dataset's own floor ({runs} each; "
          f"target nested / flat <= {NESTED_TARGET}x)")
    print(f"  {'':<6} {'dataset':<13} {'floor s':>8} {'job s':>8} {'job/floor':>10} {'CPU':>7}"
          "   load before -> after (floor; job)")
    for row in compared:
        for dataset, d in row["datasets"].items():
            print(f"  {row['label']:<6} {dataset:<13} {d['floor_seconds']:>8.1f} {d['job_seconds']:>8.1f} "
                  f"{d['ratio']:>9.2f}x {d['cpu_ratio']:>6.2f}x   {d['load']['floor']}; {d['load']['job']}")
        print(f"  {row['label']:<6} {'nested/flat':<13} {'':>8} {'':>8} {row['ratio_of_ratios']:>9.2f}x "
              f"{row['cpu_ratio_of_ratios']:>6.2f}x   {row['verdict']} (CPU {row['cpu_verdict']})")


LOWER_BOUNDS = [  # (target, the variants whose seconds add up to the least it can take)
    ("full-no-gx <= 1.3x floor", ("bound",)),
    ("full-no-gx <= 1.3x floor", ("checks",)),
    ("full-no-gx <= 1.3x floor", ("keyed",)),
    ("full-gx <= 1.8x floor", ("bound", "gate")),
    ("full-gx <= 1.8x floor", ("checks", "gate")),
    ("full-gx <= 1.8x floor", ("keyed", "gate")),
]


def lower_bounds(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """What the two floor targets are up against: the least a job meeting the issue costs here.

    Without the gate that is `bound`; with it, `bound` plus the gate run alone (it reads the
    valid rows once more, after they are written, so the two cannot overlap). `checks` is the
    same for this engine's way of checking: its pass alone, with nothing else the job does; `keyed`
    adds the one batch-wide verdict every design must reach, a key's copies, in one shuffle.
    """
    if "floor" not in results:
        return []
    floor = results["floor"]["seconds"]
    bounds = []
    for target, parts in LOWER_BOUNDS:
        if all(part in results for part in parts):
            seconds = sum(results[part]["seconds"] for part in parts)
            bounds.append({"target": target, "least": " + ".join(parts), "seconds": seconds,
                           "x_floor": seconds / floor})
    return bounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2_000_000, metavar="N")
    parser.add_argument("--poison-rate", type=float, default=0.02, metavar="R")
    parser.add_argument("--seed", type=int, default=7, metavar="S")
    parser.add_argument("--workdir", metavar="DIR", help="default: a temp dir, deleted at the end")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (inputs are then reused)")
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--skip-nested", action="store_true",
                        help=f"leave out the nested dataset ({NESTED}): its floor and its job")
    parser.add_argument("--naive-messages", type=int, metavar="M",
                        help="run the naive variant on M messages and extrapolate linearly to N")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--warmup-messages", type=int, default=10_000, metavar="W")
    parser.add_argument("--repeat", type=int, default=3, metavar="R",
                        help="run every variant R times, in rounds, and report each one's median run")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers here")
    parser.add_argument("--fresh-processes", action="store_true",
                        help="also time each floor and the full jobs each in a new process (fresh JVM)")
    parser.add_argument("--linear-messages", type=int, metavar="M",
                        help="also run full-no-gx on M messages: linear time, flat driver heap")
    # one variant, for --fresh-processes
    parser.add_argument("--only", choices=FRESH + NESTED_FRESH + KEYED_FRESH + FULL_BOUND_FRESH,
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.only:
        return run_only(args, Path(args.workdir).resolve())
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.naive_messages is not None and not 0 < args.naive_messages <= args.messages:
        parser.error("--naive-messages must be within 1..--messages")

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="foodtaster-bench-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    sampler = ProcessSampler()
    sampler.start()
    try:
        return _bench(args, workdir, sampler)
    finally:
        sampler.stop()
        if not args.keep:
            if args.workdir:
                for name in ("input", "input.params.json", "warmup", "warmup.params.json", "naive-input",
                             "naive-input.params.json", "nested-input", "nested-input.params.json",
                             "nested-warmup", "nested-warmup.params.json", NESTED_SCHEMA, "out"):
                    path = workdir / name
                    if path.is_dir():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.unlink(missing_ok=True)
            else:
                shutil.rmtree(workdir, ignore_errors=True)


def _bench(args: argparse.Namespace, workdir: Path, sampler: ProcessSampler) -> int:
    from foodtaster.registry import get_dataset

    n = args.messages
    print(f"workdir {workdir}; load average {load()} at start", flush=True)
    info = generate(workdir / "input", n, args.seed, args.poison_rate)
    print(f"input: {n:,} messages, {info['bytes'] / 2**20:,.0f} MiB in 4 files "
          f"(generated in {info['seconds']}s; expected {info['outcomes']})", flush=True)
    generate(workdir / "warmup", args.warmup_messages, args.seed, args.poison_rate)
    nested_info: dict[str, Any] | None = None
    if not args.skip_nested:
        nested_info = generate(workdir / "nested-input", n, args.seed, args.poison_rate, NESTED)
        print(f"nested input ({NESTED}): {n:,} messages, {nested_info['bytes'] / 2**20:,.0f} MiB in 4 files "
              f"(generated in {nested_info['seconds']}s; expected {nested_info['outcomes']})", flush=True)
        generate(workdir / "nested-warmup", args.warmup_messages, args.seed, args.poison_rate, NESTED)
    naive_n = args.naive_messages or n
    if not args.skip_naive and naive_n != n:
        generate(workdir / "naive-input", naive_n, args.seed, args.poison_rate)

    spark = build_spark(args.master, args.driver_memory)
    out = workdir / "out"
    max_bytes = get_dataset("orders").max_message_bytes
    input_path = str(workdir / "input")

    nested_path, schema = str(workdir / "nested-input"), None
    if nested_info:
        schema = nested_schema(spark, nested_path)
        (workdir / NESTED_SCHEMA).write_text(schema.json())
        print(f"nested floor schema (the job's typed message): {schema.simpleString()}", flush=True)

    sampler.switch("warmup")
    warmups: list[tuple[str, Callable[[], Any]]] = [
        ("floor", lambda: run_floor(spark, str(workdir / "warmup"), out / "warmup-floor")),
        ("full job without GX", lambda: run_full(spark, str(workdir / "warmup"), out / "warmup-lake",
                                                 gate=False, messages=args.warmup_messages)),
    ]
    if nested_info:
        warmups += [
            ("nested floor", lambda: run_floor(spark, str(workdir / "nested-warmup"),
                                               out / "warmup-nested-floor", schema)),
            ("nested job without GX", lambda: run_full(
                spark, str(workdir / "nested-warmup"), out / "warmup-nested-lake", gate=False,
                messages=args.warmup_messages, dataset=NESTED)),
        ]
    spent = []
    for label, action in warmups:
        started = time.perf_counter()
        action()
        spent.append(f"{label} {time.perf_counter() - started:.1f}s")
    print(f"warm-up on {args.warmup_messages:,} lines: {', '.join(spent)} "
          "(first-run JIT and codegen not billed)", flush=True)

    naive_path = input_path if naive_n == n else str(workdir / "naive-input")
    variants: dict[str, Callable[[], dict[str, Any]]] = {
        "floor": lambda: run_floor(spark, input_path, out / "floor"),
        "bound": lambda: run_bound(spark, input_path, out / "bound"),
        "parse": lambda: run_parse(spark, input_path, out / "parse"),
        "checks": lambda: run_checks(spark, input_path, out / "checks"),
        "keyed": lambda: run_keyed(spark, input_path, out / "keyed"),
        "full-no-gx": lambda: run_full_heap(spark, input_path, out / "lake-no-gx", messages=n),
        "full-gx": lambda: run_full(spark, input_path, out / "lake-gx", gate=True, messages=n),
        "gate": lambda: run_gate_only(spark, out / "lake-no-gx"),
    }
    if nested_info:
        variants["nested-floor"] = lambda: run_floor(spark, nested_path, out / "nested-floor", schema)
        variants["nested-full-gx"] = lambda: run_full(spark, nested_path, out / "nested-lake-gx", gate=True,
                                                      messages=n, dataset=NESTED)
    if not args.skip_naive:
        variants["naive"] = lambda: run_naive(spark, naive_path, out / "naive", max_message_bytes=max_bytes)
    # Rounds, not one variant R times in a row, so a slow spell of the machine hits every variant.
    runs: dict[str, list[dict[str, Any]]] = {}
    for round_ in range(1, args.repeat + 1):
        for name, action in variants.items():
            runs.setdefault(name, []).append(
                timed(name, sampler, action, f" (run {round_}/{args.repeat})" if args.repeat > 1 else ""))
    results = {name: median_run(each) for name, each in runs.items()}
    results["keyed"]["outcomes"] = keyed_outcomes(spark, out / "keyed", info["outcomes"])
    if "naive" in results:
        result = results["naive"]
        result["counts"] = naive_counts(spark, out / "naive")
        if naive_n != n:
            result.update(measured_seconds=result["seconds"], measured_cpu_seconds=result["cpu_seconds"],
                          extrapolated_from=naive_n, seconds=result["seconds"] * n / naive_n,
                          cpu_seconds=result["cpu_seconds"] * n / naive_n)
    live_heap: dict[int, int] = {}
    if args.linear_messages:
        big = generate(workdir / "linear-input", args.linear_messages, args.seed, args.poison_rate)
        with HeapSampler(spark) as heap:
            result = timed("full-no-gx-linear", sampler, lambda: run_full(
                spark, str(workdir / "linear-input"), out / "lake-linear", gate=False,
                messages=args.linear_messages))
        result["driver_old_gen_after_gc"] = heap.peak
        results["full-no-gx-linear"] = result
        print(f"linear input: {args.linear_messages:,} messages, {big['bytes'] / 2**20:,.0f} MiB", flush=True)
        for size, path in ((n, input_path), (args.linear_messages, str(workdir / "linear-input"))):
            sampler.switch(f"live-heap {size:,}")
            with LiveHeapSampler(spark) as live:
                run_full(spark, path, out / f"lake-live-heap-{size}", gate=False, messages=size)
            live_heap[size] = live.peak
            print(f"live heap, full-no-gx on {size:,} messages (untimed, a class histogram every "
                  f"{live.interval:g}s): peak {mib(live.peak)} of {live.counted} histograms counted, "
                  f"{live.skipped} not (their collection skipped)", flush=True)
    sampler.switch("end")
    spark.stop()
    if args.fresh_processes:
        results.update(fresh_runs(args, workdir, sampler))

    report = summarise(args, n, info, nested_info, results, sampler, live_heap)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"numbers written to {args.json}")
    return 0


def summarise(args: argparse.Namespace, n: int, info: dict[str, Any], nested_info: dict[str, Any] | None,
              results: dict[str, dict[str, Any]], sampler: ProcessSampler,
              live_heap: dict[int, int]) -> dict[str, Any]:
    rows = ratio_table(results, n)
    verdicts = check_targets(results)
    print()
    print(f"Foodtaster validation benchmark: N = {n:,} messages ({info['bytes'] / 2**20:,.0f} MiB), "
          f"poison rate {args.poison_rate}, seed {args.seed}")
    print(f"machine: {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), "
          f"{psutil.virtual_memory().total / 2**30:.0f} GiB RAM, {platform.platform()}, "
          f"Python {platform.python_version()}; Spark master {args.master}, "
          f"driver memory {args.driver_memory}")
    print(f"load average at the end: {load()}")
    cpus = len(os.sched_getaffinity(0))
    busiest = max(float(r[key].split("/")[0])
                  for r in results.values() for key in ("load_before", "load_after"))
    if busiest > cpus:
        print(f"NOTE: the 1-minute load average reached {busiest:.1f} on {cpus} CPUs: other processes "
              "competed for CPU and wall seconds are inflated; the CPU columns move less.")
    print()
    if nested_info:
        print(f"nested ({NESTED}): {nested_info['bytes'] / 2**20:,.0f} MiB; "
              "its rows' x floor is x nested-floor")
    print(f"{'variant':<28} {'seconds':>9} {'messages/s':>12} {'x floor':>8} {'CPU s':>8} {'CPU x floor':>11}"
          "   load before -> after")
    for row, result in zip(rows, results.values(), strict=True):
        ratio = f"{row['x_floor']:.2f}" if row["x_floor"] is not None else "-"
        cpu_ratio = f"{row['cpu_x_floor']:.2f}" if row["cpu_x_floor"] is not None else "-"
        print(f"{row['variant']:<28} {row['seconds']:>9.1f} {row['messages_per_s']:>12,.0f} {ratio:>8} "
              f"{row['cpu_seconds']:>8.0f} {cpu_ratio:>11}   "
              f"{result['load_before']} -> {result['load_after']}")
    if args.repeat > 1:
        print(f"  each variant's median of {args.repeat} runs; all runs (s, as measured): "
              + "; ".join(f"{name} {r.get('runs', [round(r['seconds'], 2)])}" for name, r in results.items()))
    naive = results.get("naive")
    if naive and naive.get("extrapolated_from"):
        print(f"  naive ran on {naive['extrapolated_from']:,} messages in {naive['measured_seconds']:.1f}s; "
              f"its seconds are extrapolated linearly to {n:,}")
    print()
    print(f"{'target (wall clock; CPU seconds alongside)':<42} {'wall':>7}        {'CPU':>7}")
    for verdict in verdicts:
        ratio = f"{verdict['ratio']:.2f}x" if verdict["ratio"] is not None else "-"
        cpu_ratio = f"{verdict['cpu_ratio']:.2f}x" if verdict["cpu_ratio"] is not None else "-"
        print(f"{verdict['target']:<42} {ratio:>7} {verdict['verdict']:<6} "
              f"{cpu_ratio:>7} {verdict['cpu_verdict']}")
    compared = nested_vs_flat(results)
    print_nested_vs_flat(compared, args.repeat)
    bounds = lower_bounds(results)
    if bounds:
        print()
        print("the least a job that meets the issue could take here (bound: no checks, no quarantine, "
              "duplicates found but not resolved; checks: this engine's checking pass alone; keyed: "
              "the checks with the key's copies judged in one shuffle, no kept pass):")
        for b in bounds:
            print(f"  {b['target']:<40} {b['least']:<12} {b['seconds']:>6.1f}s = {b['x_floor']:.2f}x floor")
    print()
    for name in ("full-no-gx", "full-gx", "nested-full-gx"):
        if name in results:
            r = results[name]
            gate = "" if name == "full-no-gx" else f" gate_passed={r['gate_passed']}"
            print(f"{name}: valid={r['valid']:,} quarantined={r['quarantined']:,} "
                  f"duplicates_dropped={r['duplicates_dropped']:,} held_for_group={r['held_for_group']:,}"
                  f"{gate}; timings {r['timings']}")
    print(f"expected from the generator: {info['outcomes']}")
    if nested_info:
        print(f"expected from the nested generator: {nested_info['outcomes']}")
    for name in ("full-gx", "nested-full-gx"):
        if name in results and not results[name]["gate_passed"]:
            # a gate that errors on a column stops early: its seconds are not a passing gate's
            print(f"NOTE: the gate failed in {name}'s median run (see its batch's data docs under the "
                  "work dir, --keep): its time may not be a passing gate's")
    linear = results.get("full-no-gx-linear")
    if linear and "full-no-gx" in results:
        base = results["full-no-gx"]
        expected = base["seconds"] * args.linear_messages / n
        print(f"linear: full-no-gx on {args.linear_messages:,} messages {linear['seconds']:.1f}s against "
              f"{expected:.1f}s ({args.linear_messages / n:g} x the {n:,} run): "
              f"{linear['seconds'] / expected:.2f}x (target within 1.15x); driver old generation after GC "
              f"{mib(base.get('driver_old_gen_after_gc', 0))} at {n:,}, "
              f"{mib(linear['driver_old_gen_after_gc'])} at {args.linear_messages:,}")
    if live_heap:
        print("driver live heap (peak of the class histograms whose collection ran, untimed runs): "
              + ", ".join(f"{mib(peak)} at {size:,}" for size, peak in live_heap.items()))
    if naive:
        print(f"naive outcomes: {naive['counts']} (uniqueness only within a pandas batch; a redelivery "
              "is quarantined, not dropped)")
        print("naive, inside the Python workers (rows; seconds summed over workers, wall clock): "
              f"{naive['worker_stats']}")
    print()
    print("CPU s: user + system seconds of this process, the JVM and the Python workers during the variant.")
    print("peak RSS (sampled every 0.25s; worker RSS summed; Python max RSS from getrusage "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**20:,.0f} MiB):")
    for label in [*results, "all"]:
        peak = sampler.peaks.get(label)
        if peak:
            print(f"  {label:<12} python {mib(peak['python']):>10}  jvm {mib(peak['jvm']):>10}  "
                  f"python workers {mib(peak['py_workers']):>10}  total {mib(peak['total']):>10}")
    return {
        "messages": n, "poison_rate": args.poison_rate, "seed": args.seed, "input_bytes": info["bytes"],
        "expected": info["outcomes"], "master": args.master, "driver_memory": args.driver_memory,
        "nproc": len(os.sched_getaffinity(0)), "load_average_end": load(), "variants": results,
        "nested_expected": nested_info and nested_info["outcomes"], "nested_vs_flat": compared,
        "table": rows, "targets": verdicts, "lower_bounds": bounds, "peak_rss": sampler.peaks,
        "cpu_seconds": sampler.cpu, "live_heap": live_heap,
    }


if __name__ == "__main__":
    sys.exit(main())
