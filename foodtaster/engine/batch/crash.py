"""Crash isolation: when a message crashes the one pass, find it and fence it off.

A check written in Python (a pandera check method run as a pandas UDF) may raise on a
value it was never written for, kill its process (a signal, an exit), eat memory or never
return; the guard it runs in (foodtaster.engine.judging.guard) turns each of those into an
exception of its own. Spark then fails the task on every attempt, and every rerun of the
batch would fail the same way. This module tells such a data crash apart
from a failure of the cluster or the lake (`data_crash`) and finds the message(s)
responsible (`isolate`): the batch's files one at a time, then halves of the failing
file's lines, down to one line, each step a small Spark job on that file's lines only.
`run_isolating_crashes` is how a run (foodtaster.engine.run) wraps the job
(foodtaster.engine.batch.job) from outside: it lists each message found on the poison list (source
`crash`) and runs the job again, which quarantines it as `crash.isolated` without giving it to
the check.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pyspark.errors import PythonException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from foodtaster.contract.model import Contract
from foodtaster.engine.batch import inputs
from foodtaster.engine.judging import guard, judging, layers, listed, python_checks
from foodtaster.errors import Failed
from foodtaster.logs import BatchLogger
from foodtaster.privacy import Masker
from foodtaster.registry import DatasetConfig
from foodtaster.state.lake import Lake
from foodtaster.state.poison import PoisonList, Seen, fingerprint

WHY_MAX_CHARS = 300
# A Python worker that failed this way failed for the machine, not for the message.
INFRASTRUCTURE_ERRORS = frozenset({
    "MemoryError", "OSError", "IOError", "EnvironmentError", "ConnectionError", "ConnectionResetError",
    "ConnectionRefusedError", "ConnectionAbortedError", "BrokenPipeError", "TimeoutError", "EOFError",
    "FileNotFoundError", "PermissionError", "InterruptedError", "KeyboardInterrupt", "SystemExit",
    "socket.timeout", "py4j.protocol.Py4JNetworkError",
})
# Words in Spark's account of the failed job that name the cluster, never the data.
INFRASTRUCTURE_WORDS = (
    "ExecutorLostFailure", "FetchFailed", "No space left on device", "Python worker exited unexpectedly",
    "java.lang.OutOfMemoryError", "Connection refused", "TaskKilled",
)
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")


class TooManyCrashes(Failed):
    """More messages crash the batch than `max_crash_isolations`; those found stay listed."""


class NotIsolated(Failed):
    """The batch crashes, but no file or line of it crashes alone: not one message's doing."""


@dataclass(frozen=True)
class DataCrash:
    """What a crashing message raised: the exception's class and the first line of its message."""

    error: str
    message: str

    @property
    def ended(self) -> bool:
        """The check's process ended under it (died, timed out, out of memory: `guard`),
        rather than the check raising."""
        return self.error in guard.ENDINGS

    @property
    def why(self) -> str:
        """`ValueError: no rule for 13`; for an ending, the guard's words alone:
        `worker died: signal 11 (SIGSEGV)`, `timeout: check ... ran past 5 s on one message`."""
        why = self.message if self.ended else f"{self.error}: {self.message}" if self.message else self.error
        return why if len(why) <= WHY_MAX_CHARS else why[:WHY_MAX_CHARS] + "…"


@dataclass(frozen=True)
class Isolated:
    """A message that crashes the pass on its own, with its lineage."""

    source_file: str
    line_number: int
    raw: bytes
    crash: DataCrash

    def as_dict(self) -> dict[str, Any]:
        return {"source_file": self.source_file, "line_number": self.line_number, "why": self.crash.why}


def data_crash(err: BaseException) -> DataCrash | None:
    """The crash `err` reports if the data caused it, else None (the task fails as before).

    The rule: a task failed on all its attempts with an exception raised by Python code
    running a check on rows (a `PythonException` out of a UDF) whose class is not an
    operating-system, memory or network error, and Spark's account of the failure names no
    lost executor, failed fetch or full disk. A check's process that died, ran past its
    budget or out of its memory is such an exception (`guard.CheckEnded`); a Spark Python
    worker that dies itself is not (a check never runs in it: what killed it is not one).
    Anything else, a failure in the JVM, the lake
    or the driver included, is not the data's. `isolate` then confirms it: a crash that no
    single message reproduces is not taken for the data's either.
    """
    if not isinstance(err, PythonException):
        return None
    origin = getattr(err, "_origin", None)
    account = f"{err}\n{origin}" if origin is not None else str(err)
    if any(words in account for words in INFRASTRUCTURE_WORDS):
        return None
    raised = _raised(str(err))
    if raised is None or raised.error in INFRASTRUCTURE_ERRORS or raised.error.endswith("Warning"):
        return None
    return raised


def _raised(traceback: str) -> DataCrash | None:
    """The last exception line of a Python traceback: `ValueError: no rule for 13`."""
    lines = traceback.strip().splitlines()
    try:
        start = max(i for i, line in enumerate(lines) if line.startswith("Traceback"))
    except ValueError:
        return None
    for line in reversed(lines[start + 1:]):
        if line and not line[0].isspace():
            match = _EXCEPTION_LINE.match(line.strip())
            if match:
                return DataCrash(match.group(1), (match.group(2) or "").strip())
    return None


Log = Callable[..., None]


def isolate(lines: DataFrame, judge: Callable[[DataFrame], Any], limit: int, log: Log,
            masker: Masker | None = None) -> list[Isolated]:
    """Up to `limit` messages of `lines` (a batch's numbered lines: `_raw`, `_source_file`,
    `_line_number`) on which `judge` (the one pass, run to the end) crashes on its own.

    A file at a time; in a file that crashes, halves of its lines by number, down to one.
    The lower half of a crashing range is tried first; when it passes, the upper half is the
    one that crashes, and is split without a job of its own (the one line it ends in is tried);
    when it crashes, the upper half is tried too (two messages may crash the range). Every step
    is logged. A line found is run alone at least once; one whose check's process ended
    (died, timed out, ran out of memory) is run alone once more and must end again, as the
    machine can end a process too. A crash no one line reproduces (only rows
    together crash the check, or a death that does not come again) raises NotIsolated; an
    error `data_crash` does not take for the data's is re-raised. With `masker`, a message's
    personal values are masked in what its crash says (`Masker.scrub`), as kept and logged.
    """
    files = [r[0] for r in lines.select("_source_file").distinct().orderBy("_source_file").collect()]
    found: list[Isolated] = []
    for source_file in files:
        if len(found) >= limit:
            break
        rows = lines.where(F.col("_source_file") == source_file).persist()
        try:
            found += _isolate_file(rows, source_file, judge, limit - len(found), log, masker)
        finally:
            rows.unpersist()
    return found


def _isolate_file(rows: DataFrame, source_file: str, judge: Callable[[DataFrame], Any], limit: int,
                  log: Log, masker: Masker | None) -> list[Isolated]:
    low, high = rows.agg(F.min("_line_number"), F.max("_line_number")).take(1)[0]  # an aggregate: one row
    if low is None:
        return []
    crash = _crashes(rows, low, high, judge)
    log("crash_isolation_step", file=source_file, lines=f"{low}-{high}", crashed=crash is not None)
    if crash is None:
        return []
    found: list[Isolated] = []
    crashing: list[tuple[int, int, DataCrash | None]] = [(low, high, crash)]  # earliest lines last
    while crashing and len(found) < limit:
        low, high, crash = crashing.pop()
        if low == high:
            if crash is None:  # a line taken on trust is tried
                crash = _crashes(rows, low, high, judge)
                log("crash_isolation_step", file=source_file, lines=f"{low}-{high}",
                    crashed=crash is not None)
            if crash is None:
                raise NotIsolated(
                    f"{source_file}: lines around {low} crash the check together, but no one of them "
                    "does on its own: the crash depends on several messages at once, not one"
                )
            raw = bytes(rows.where(F.col("_line_number") == low).select("_raw").take(1)[0]["_raw"])
            crash = _scrubbed(crash, raw, masker)
            if crash.ended:
                again = _crashes(rows, low, high, judge)
                log("crash_isolation_step", file=source_file, lines=f"{low}-{high}",
                    crashed=again is not None, confirming=crash.why)
                if again is None:
                    raise NotIsolated(
                        f"{source_file} line {low}: the check's process ended alone once ({crash.why}) "
                        "but passed the second time: not the message's doing"
                    )
                if crash.error.endswith("CheckTimedOut") and again.ended:
                    # a death says more than a deadline a slow machine may miss
                    crash = _scrubbed(again, raw, masker)
            found.append(Isolated(source_file, low, raw, crash))
            log("crash_isolated", file=source_file, line=low, error=crash.why)
            continue
        middle = (low + high) // 2
        lower = _crashes(rows, low, middle, judge)
        log("crash_isolation_step", file=source_file, lines=f"{low}-{middle}", crashed=lower is not None)
        if lower is None:  # the range crashes, so its upper half does: no job needed to know
            crashing.append((middle + 1, high, None))
            continue
        upper = _crashes(rows, middle + 1, high, judge)  # another message may crash it too
        log("crash_isolation_step", file=source_file, lines=f"{middle + 1}-{high}", crashed=upper is not None)
        if upper is not None:
            crashing.append((middle + 1, high, upper))
        crashing.append((low, middle, lower))
    return found


def _scrubbed(crash: DataCrash, raw: bytes, masker: Masker | None) -> DataCrash:
    """The crash as kept and logged: the message's personal values masked in its words."""
    if masker is None:
        return crash
    return DataCrash(crash.error, masker.scrub(crash.message, raw))


def _crashes(rows: DataFrame, low: int, high: int, judge: Callable[[DataFrame], Any]) -> DataCrash | None:
    try:
        judge(rows.where(F.col("_line_number").between(low, high)))
    except Exception as err:  # the crash is what we are looking for; anything else goes on up
        crash = data_crash(err)
        if crash is None:
            raise
        return crash
    return None


# ------------------------------------------------------------------ in a batch run

T = TypeVar("T")
SKIP = "_skip"


@dataclass(frozen=True)
class BatchInput:
    """The batch whose crashes are isolated: where its messages are and who runs it."""

    config: DatasetConfig
    lake: Lake
    input_path: str
    batch_id: str
    run_id: str


def run_isolating_crashes(attempt: Callable[[list[Isolated]], T], spark: SparkSession, batch: BatchInput,
                          log: BatchLogger) -> T:
    """`attempt(isolated)` (one run of the batch); when a message crashes it (`data_crash`),
    find it (`isolate`), list it (source `crash`) and attempt again, which quarantines it as
    `crash.isolated` unjudged. At most `max_crash_isolations` messages a run; past that,
    TooManyCrashes names the ones found (they stay listed). Any other failure goes up as it
    is: the task fails and Airflow retries it.
    """
    config = batch.config
    isolated: list[Isolated] = []
    while True:
        try:
            return attempt(isolated)
        except Exception as err:
            crashed = data_crash(err)
            if crashed is None:
                raise
            # Before its message is found, what the crash quotes of it cannot be masked: its class alone.
            told = crashed.error if Masker.for_dataset(config, batch.lake.root).paths else crashed.why
            found = ", ".join(f"{i.source_file} line {i.line_number}" for i in isolated) or "none"
            log.event("crashed", error=told, isolated_so_far=len(isolated), run_id=batch.run_id)
            if len(isolated) >= config.max_crash_isolations:
                raise TooManyCrashes(
                    f"{config.name} batch {batch.batch_id}: more than max_crash_isolations="
                    f"{config.max_crash_isolations} messages crash the check ({told}); "
                    f"isolated and listed: {found}. Fix the check, or raise the bound in pipeline.yaml"
                ) from err
            more = isolate_and_list(spark, batch, config.max_crash_isolations - len(isolated), log)
            if not more:
                raise  # no one message crashes alone: not the data's doing
            isolated += more


def isolate_and_list(spark: SparkSession, batch: BatchInput, limit: int, log: BatchLogger) -> list[Isolated]:
    """Find up to `limit` crashing messages of the batch and put each on the poison list.

    Only a Python check can crash on data (`data_crash`), so each step of the search runs
    only the Python checks, on values the strict parser typed once a file: a small plan,
    quick to run again and again on fewer lines.
    """
    config = batch.config
    contract = config.read_contract()
    poison_list = PoisonList(batch.lake, config.name)
    entries = poison_list.entries()
    poison = listed.poison_frame(spark, entries) if entries else None
    verdicts = [F.count_if(F.col(layers.python_check_column(c))) for c in contract.python_checks]
    budget = guard.Budget.of(config)
    steps = 0

    def judge(rows: DataFrame) -> None:  # every Python check on these rows, run to the end
        nonlocal steps
        steps += 1
        rows = python_checks.with_python_checks(rows, contract, F.col(SKIP), budget)
        rows.agg(*verdicts).collect()

    started = time.monotonic()
    group = f"foodtaster-crash-isolation-{batch.run_id}"
    context = spark.sparkContext
    context.setJobGroup(group, f"crash isolation of {config.name} batch {batch.batch_id}")
    try:
        typed = typed_for_checks(inputs.numbered_lines(spark, batch.input_path, config), contract,
                                 config.max_message_bytes, poison)
        found = isolate(typed, judge, limit,
                        lambda event, **fields: log.event(event, run_id=batch.run_id, **fields),
                        Masker.for_dataset(config, batch.lake.root, contract))
    finally:
        # The search's cost, found or not: what an operator weighs against a fixed check.
        log.event("crash_isolation_cost", run_id=batch.run_id, steps=steps,
                  spark_jobs=len(context.statusTracker().getJobIdsForGroup(group)),
                  seconds=round(time.monotonic() - started, 1))
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    for item in found:
        entry = poison_list.add(
            "fingerprint", fingerprint(item.raw), item.crash.why, "crash",
            added_by=f"foodtaster run {batch.run_id}",
            first_seen=Seen(batch.batch_id, item.source_file, item.line_number), size=len(item.raw),
        )
        log.event("crash_listed", entry=entry.id, file=item.source_file, line=item.line_number,
                  error=item.crash.why)
    return found


def typed_for_checks(
    lines: DataFrame, contract: Contract, max_message_bytes: int, poison: DataFrame | None
) -> DataFrame:
    """Lines with what the Python checks read: the parser's typed values and `SKIP` (listed,
    so never given to a check), as `judging.flag_lines` gives them."""
    parsed, skip = judging.parse_marking_listed(lines, contract, max_message_bytes, poison)
    values = sorted({layers.value_column(c.path) for c in contract.python_checks})
    listed_row = F.lit(False) if skip is None else skip
    return parsed.select("_raw", "_source_file", "_line_number", *values, listed_row.alias(SKIP))
