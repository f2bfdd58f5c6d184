"""What spark-submit prints, in the validate task's log (`foodtaster_airflow.spark_submit`).

The provider logs every line spark-submit prints at INFO on its hook's logger, so a
Spark WARN or a Python traceback reads as INFO in the task log. `SparkOutputLog` gives
each line the level it carries (log4j's `WARN`, Python logging's `WARNING`, a JVM
`WARNING:` notice or `[warning]` log line, a traceback) and sends it to one of two
loggers, which the task log shows as the line's source: `foodtaster.job` for the job's own
lines (the engine's `foodtaster.*` log lines, e.g. `event=validated`, and the summary the job
prints last), `foodtaster.spark` for everything Spark and the JVM say.

The job's lines come first and read as a person reads them: as they come, the event first,
without a second time stamp and level (the task log shows its own), the summary as a
sentence, not a JSON line. Spark's and the JVM's lines follow once the job ends, folded in
one log group the UI opens on a click, each at its level.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter, deque
from typing import Any

from foodtaster.errors import REFUSED_PREFIX

JOB_LOGGER = "foodtaster.job"  # the job's own lines: a person filters the task log by it
SPARK_LOGGER = "foodtaster.spark"  # Spark's log4j lines and the JVM's notices
LEVELS = {
    "TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
    "WARN": logging.WARNING, "WARNING": logging.WARNING, "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL, "CRITICAL": logging.CRITICAL,
}
_LEVEL = "|".join(LEVELS)
# log4j2-defaults.properties: `%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m`
LOG4J_LINE = re.compile(rf"^\d{{2}}/\d{{2}}/\d{{2}} \d{{2}}:\d{{2}}:\d{{2}} ({_LEVEL}) ")
# foodtaster.logs.configure: `%(asctime)s %(levelname)s %(name)s %(message)s`
PYTHON_LINE = re.compile(
    rf"^\d{{4}}-\d{{2}}-\d{{2}} \d{{2}}:\d{{2}}:\d{{2}},\d{{3}} ({_LEVEL}) (\S+) "
)
NOTICE_LINE = re.compile(rf"^({_LEVEL}): ")  # the JVM's `WARNING: Using incubator modules`
# HotSpot's own log (-Xlog), on stdout, its level in lower case: a stale class-data-sharing
# archive's `[0.186s][warning][cds,dynamic] Unable to use shared archive`.
JVM_LOG_LINE = re.compile(rf"^\[[\d.]+s\]\[({_LEVEL.lower()})\]\[")
# Lines that continue the one before (the provider strips their indent): a Java stack trace.
CONTINUATION = re.compile(r"^(at |Caused by|Suppressed:|\.\.\. \d+ more|[\w.$]+(Error|Exception)\b)")
# The line that closes a Python traceback: `ValueError: why` (or a bare `KeyboardInterrupt`).
TRACEBACK_END = re.compile(r"^[A-Za-z_][\w.]*(: |$)")


SPARK_LINES_KEPT = 20_000  # Spark lines held until the job ends; beyond, the oldest are dropped
EVENT = re.compile(r"^(?P<before>.*?)\s*\bevent=(?P<event>\S+)(?P<after>.*)$")


class SparkOutputLog:
    """Stands in for a SparkSubmitHook's logger: the hook's own messages (with %-args) go to
    its logger as before; a bare line, which is spark-submit output, goes out at its level.

    A line without a level of its own takes the level of the line it continues (a stack
    trace under an ERROR stays ERROR); any other plain line is INFO, on the job's logger
    when it is the job's JSON summary. The job's lines go out at once, made readable
    (`readable`); Spark's wait for `flush`, which logs them in one folded group.
    """

    def __init__(self, hook_log: Any) -> None:
        self._hook_log = hook_log
        self._last: tuple[logging.Logger, int] | None = None
        self._in_traceback = False
        self._spark: deque[tuple[int, str]] = deque(maxlen=SPARK_LINES_KEPT)
        self._spark_seen = 0
        self.refusal: str | None = None  # the job's `REFUSED: ...` line, when it refused its run

    def __getattr__(self, name: str) -> Any:
        return getattr(self._hook_log, name)

    def info(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        if args or kwargs or not isinstance(msg, str):
            self._hook_log.info(msg, *args, **kwargs)
            return
        logger, level = self.route(msg)
        if logger.name == SPARK_LOGGER:
            self._spark.append((level, msg))
            self._spark_seen += 1
            return
        logger.log(level, "%s", readable(msg))

    def flush(self) -> None:
        """Log Spark's and the JVM's lines held so far, in one group the task log folds."""
        if not self._spark:
            return
        spark = logging.getLogger(SPARK_LOGGER)
        counts = Counter(logging.getLevelName(level).lower() for level, _ in self._spark)
        levels = ", ".join(f"{count} {name}" for name, count in sorted(counts.items()))
        dropped = self._spark_seen - len(self._spark)
        spark.info("::group::Spark and the JVM: %d lines (%s)%s", self._spark_seen, levels,
                   f", the first {dropped} not kept" if dropped else "")
        for level, line in self._spark:
            spark.log(level, "%s", line)
        spark.info("::endgroup::")
        self._spark.clear()
        self._spark_seen = 0

    def route(self, line: str) -> tuple[logging.Logger, int]:
        """The logger and level for one line of spark-submit's output."""
        spark, job = logging.getLogger(SPARK_LOGGER), logging.getLogger(JOB_LOGGER)
        if self._in_traceback and self._last is not None:
            # every line up to the exception's own, whatever it looks like, is the trace
            self._in_traceback = not (TRACEBACK_END.match(line) and not line.startswith("File "))
            return self._last
        if match := PYTHON_LINE.match(line):
            name = match.group(2)
            routed = (job if name.split(".")[0] == "foodtaster" else spark,
                      LEVELS[match.group(1)])
        elif match := LOG4J_LINE.match(line) or NOTICE_LINE.match(line):
            routed = spark, LEVELS[match.group(1)]
        elif match := JVM_LOG_LINE.match(line):
            routed = spark, LEVELS[match.group(1).upper()]
        elif line.startswith("Traceback (most recent call last)"):
            routed = self._last[0] if self._last else spark, logging.ERROR
            self._in_traceback = True
        elif self._last is not None and CONTINUATION.match(line):
            routed = self._last
        elif line.startswith(REFUSED_PREFIX):
            routed = job, logging.ERROR  # validate_batch.py's last line when it refused its run
            self.refusal = line
        elif line.startswith("{") and '"batch_id"' in line:
            routed = job, logging.INFO  # the JSON summary validate_batch.py prints last
        else:
            routed = spark, logging.INFO
        self._last = routed
        return routed



def readable(line: str) -> str:
    """One of the job's lines as a person reads it in the task log, which shows the time and
    level already: an engine line as `<event>: <fields> (<module>)`, the summary the job prints
    last as a sentence; any other line (a traceback's, a refusal) as it is."""
    if match := PYTHON_LINE.match(line):
        name, rest = match.group(2), line[match.end():]
        event = EVENT.match(rest)
        if event:
            fields = " ".join(part for part in (event["before"], event["after"].strip()) if part)
            return f"{event['event']}: {fields} ({name})"
        return f"{rest} ({name})"
    if line.startswith("{") and '"batch_id"' in line:
        try:
            summary = json.loads(line)
        except ValueError:
            return line
        return job_summary(summary)
    return line


def job_summary(summary: dict[str, Any]) -> str:
    """The summary line validate_batch.py prints last, as a sentence."""
    def count(key: str) -> str:
        return str(summary.get(key, "?"))

    rate = summary.get("quarantine_rate")
    shown = f"{float(rate):.2%}" if isinstance(rate, int | float) else "?"
    published = ("published" if summary.get("published")
                 else "staged: the read_verdict task reads the verdict, publish publishes it or it is held")
    return (f"summary: {summary.get('dataset', '?')} batch {summary.get('batch_id', '?')}: "
            f"{count('messages')} messages = {count('valid')} valid + {count('quarantined')} "
            f"quarantined + {count('duplicates_dropped')} duplicates dropped; quarantine rate "
            f"{shown}; {published}")
