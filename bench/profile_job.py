"""Where a fresh process's time goes: the job with its gate, with Spark's event log read back.

    .venv/bin/python bench/profile_job.py --workdir W [--dataset orders|order_events]

Runs what `bench_peers.py` times as "foodtaster" (`bench_validate.py`'s `run_full`, the gate on)
in this process, with Spark's event log on, and prints three things:

- the process's phases, wall clock: Python's imports, the session's start, the job, the stop;
- the job's own timings (the summary's `timings`);
- each Spark job in order: when it started (seconds from the process's start), how long it ran,
  its stages' task time, and what started it (the call site); then the time inside the job's
  phase when no Spark job ran: the driver's own work (planning, Py4J, code generation for the
  next job, Great Expectations' Python, files written by Python).

The input is `bench_peers.py`'s (made there, `--workdir W`).
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

DATASETS = {"orders": "input", "order_events": "nested-input"}


def spark_queries(log_dir: Path) -> tuple[list[dict], list[dict]]:
    """The event log's SQL queries and Spark jobs (Spark 4 writes it rolled: files in a folder).
    A query: its start and end (epoch ms), what started it, its first job's start; a job: its
    start, end and its stages' task ms."""
    queries: dict[int, dict] = {}
    jobs: dict[int, dict] = {}
    stage_job: dict[int, int] = {}
    for part in sorted(p for p in log_dir.rglob("events_*") if p.is_file()):
        for line in part.read_text().splitlines():
            event = json.loads(line)
            kind = event["Event"]
            if kind.endswith("SQLExecutionStart"):
                queries[event["executionId"]] = {"start": event["time"], "site": event["description"],
                                                 "first_job": None, "task_ms": 0}
            elif kind.endswith("SQLExecutionEnd"):
                queries[event["executionId"]]["end"] = event["time"]
            elif kind == "SparkListenerJobStart":
                query = (event.get("Properties") or {}).get("spark.sql.execution.id")
                jobs[event["Job ID"]] = {"start": event["Submission Time"], "task_ms": 0,
                                         "query": None if query is None else int(query)}
                if query is not None and queries[int(query)]["first_job"] is None:
                    queries[int(query)]["first_job"] = event["Submission Time"]
                for stage in event["Stage IDs"]:
                    stage_job[stage] = event["Job ID"]
            elif kind == "SparkListenerJobEnd":
                jobs[event["Job ID"]]["end"] = event["Completion Time"]
            elif kind == "SparkListenerTaskEnd" and event["Stage ID"] in stage_job:
                info = event["Task Info"]
                job = jobs[stage_job[event["Stage ID"]]]
                job["task_ms"] += info["Finish Time"] - info["Launch Time"]
                if job["query"] is not None:
                    queries[job["query"]]["task_ms"] += info["Finish Time"] - info["Launch Time"]
    return sorted(queries.values(), key=lambda q: q["start"]), sorted(jobs.values(), key=lambda j: j["start"])


def busy_ms(jobs: list[dict], start_ms: float, end_ms: float) -> float:
    """How much of [start_ms, end_ms] some Spark job was running."""
    spans = sorted((max(job["start"], start_ms), min(job["end"], end_ms)) for job in jobs)
    total, reach = 0.0, start_ms
    for begin, end in spans:
        if end > reach:
            total += end - max(begin, reach)
            reach = end
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="orders")
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--no-gate", action="store_true", help="the job without its gate")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for this run (repeat it for more)")
    parser.add_argument("--python-profile", type=Path, metavar="FILE",
                        help="also profile the driver's Python in the job (cProfile, to FILE)")
    args = parser.parse_args(argv)

    log_dir = Path(tempfile.mkdtemp(prefix="foodtaster-eventlog-"))
    os.environ["PYSPARK_SUBMIT_ARGS"] = (
        f"--driver-memory {args.driver_memory} --conf spark.eventLog.enabled=true "
        f"--conf spark.eventLog.dir={log_dir} --conf spark.eventLog.compress=false "
        + "".join(f"--conf {setting} " for setting in args.conf) + "pyspark-shell")
    import bench_validate as bv  # the job's imports: pyspark, the engine, pandera

    imported = time.perf_counter()
    spark = bv.build_spark(args.master, args.driver_memory)
    session = time.perf_counter()
    session_epoch_ms = time.time() * 1000
    out = args.workdir.resolve() / "out" / "profile" / args.dataset
    profiler = cProfile.Profile() if args.python_profile else None
    if profiler:
        profiler.enable()
    result = bv.run_full(spark, str(args.workdir.resolve() / DATASETS[args.dataset]), out,
                         gate=not args.no_gate, messages=args.messages,
                         dataset="orders" if args.dataset == "orders" else bv.NESTED)
    if profiler:
        profiler.disable()
        profiler.dump_stats(args.python_profile)
    job_end_epoch_ms = time.time() * 1000
    ran = time.perf_counter()
    spark.stop()
    stopped = time.perf_counter()

    print(f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    print(f"imports {imported - STARTED:6.2f} s\nsession {session - imported:6.2f} s\n"
          f"job     {ran - session:6.2f} s\nstop    {stopped - ran:6.2f} s\n"
          f"total   {stopped - STARTED:6.2f} s")
    print("job timings:", json.dumps(result["timings"]))
    queries, jobs = spark_queries(log_dir)
    print("each query: when it started (from the session's start), until its first Spark job, "
          "its whole time, its tasks' time, what started it")
    for query in queries:
        planned = (query["first_job"] or query["end"]) - query["start"]
        print(f"  +{(query['start'] - session_epoch_ms) / 1000:7.2f} s  plan {planned / 1000:5.2f} s  "
              f"whole {(query['end'] - query['start']) / 1000:6.2f} s  "
              f"tasks {query['task_ms'] / 1000:6.2f} s  "
              f"{query['site'][:90]}")
    inside = busy_ms(jobs, session_epoch_ms, job_end_epoch_ms) / 1000
    in_query = busy_ms(queries, session_epoch_ms, job_end_epoch_ms) / 1000
    print(f"{len(queries)} queries, {len(jobs)} Spark jobs; of the job's {ran - session:.2f} s, a Spark job "
          f"ran {inside:.2f} s, a query was planned or ran {in_query:.2f} s, "
          f"neither {ran - session - in_query:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
