"""spark-submit's output in the task log: each line at the level it carries, the job's own
lines apart from Spark's. Fed through the provider's own line loop (the real hook)."""

from __future__ import annotations

import logging

import pytest

from foodtaster_airflow.spark_output import JOB_LOGGER, SPARK_LOGGER
from foodtaster_airflow.spark_submit import ValidateBatchOperator

OUTPUT = """\
WARNING: Using incubator modules: jdk.incubator.vector
[0.186s][warning][cds,dynamic] Unable to use shared archive. The top archive failed to load: a.jsa
Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties
26/11/22 18:19:53 WARN Utils: Your hostname, vm, resolves to a loopback address: 127.0.0.1
26/11/22 18:19:54 INFO SparkContext: Running Spark version 4.1.3
26/11/22 18:19:58 ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 1)
java.lang.OutOfMemoryError: Java heap space
\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)
26/11/22 18:19:59 INFO TaskSetManager: Starting task 0.1 in stage 1.0
2026-11-22 18:20:01,114 WARNING foodtaster.engine.gate.gate dataset=orders batch=20261120 gate failed
2026-11-22 18:20:02,007 INFO foodtaster.engine.batch.job dataset=orders batch=20261120 event=validated \
messages=10
2026-11-22 18:20:02,010 WARNING py4j.clientserver Closing down clientserver connection
Traceback (most recent call last):
  File "validate_batch.py", line 90, in <module>
    sys.exit(main())
ValueError: no summary
{"dataset": "orders", "batch_id": "20261120", "messages": 10, "valid": 9, "quarantined": 1}
"""

SPARK_LINES = [  # (level, line start) of Spark's and the JVM's lines, in order
    (logging.WARNING, "WARNING: Using incubator"),
    (logging.WARNING, "[0.186s][warning][cds,dynamic] Unable to use"),
    (logging.INFO, "Using Spark's default"),
    (logging.WARNING, "26/11/22 18:19:53 WARN Utils"),
    (logging.INFO, "26/11/22 18:19:54 INFO SparkContext"),
    (logging.ERROR, "26/11/22 18:19:58 ERROR Executor"),
    (logging.ERROR, "java.lang.OutOfMemoryError"),
    (logging.ERROR, "at java.base"),
    (logging.INFO, "26/11/22 18:19:59 INFO TaskSetManager"),
    (logging.WARNING, "2026-11-22 18:20:02,010 WARNING py4j"),
    (logging.ERROR, "Traceback"),
    (logging.ERROR, 'File "validate_batch.py"'),
    (logging.ERROR, "sys.exit(main())"),
    (logging.ERROR, "ValueError: no summary"),
]
EXPECTED = [  # (logger, level, line) in the task log: the job's lines first, made readable
    (JOB_LOGGER, logging.WARNING, "dataset=orders batch=20261120 gate failed (foodtaster.engine.gate.gate)"),
    (JOB_LOGGER, logging.INFO,
     "validated: dataset=orders batch=20261120 messages=10 (foodtaster.engine.batch.job)"),
    (JOB_LOGGER, logging.INFO, "summary: orders batch 20261120: 10 messages = 9 valid + 1 quarantined + "
                               "? duplicates dropped; quarantine rate ?; staged: the read_verdict task reads "
                               "the verdict, publish publishes it or it is held"),
    # then Spark's, folded in one group, each at its level
    (SPARK_LOGGER, logging.INFO, "::group::Spark and the JVM: 14 lines (7 error, 3 info, 4 warning)"),
    *((SPARK_LOGGER, level, start) for level, start in SPARK_LINES),
    (SPARK_LOGGER, logging.INFO, "::endgroup::"),
]


@pytest.fixture
def hook(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    return ValidateBatchOperator(task_id="validate", application="job.py",
                                 dataset="orders").spark_hook()


def test_the_jobs_lines_come_first_and_readable_then_sparks_folded_each_at_its_level(hook, caplog):
    caplog.set_level(logging.DEBUG)
    hook._process_spark_submit_log(iter(OUTPUT.splitlines(keepends=True)))
    live = [r.name for r in caplog.records if r.name in (JOB_LOGGER, SPARK_LOGGER)]
    assert live == [JOB_LOGGER] * 3  # as the job runs, only its own lines
    hook.log.flush()
    hook.log.flush()  # nothing held twice
    routed = [(r.name, r.levelno, r.getMessage()) for r in caplog.records
              if r.name in (JOB_LOGGER, SPARK_LOGGER)]
    assert len(routed) == len(EXPECTED)
    for (name, level, message), (want_name, want_level, start) in zip(routed, EXPECTED,
                                                                       strict=True):
        assert (name, logging.getLevelName(level)) == (
            want_name, logging.getLevelName(want_level)), message
        assert message.startswith(start), message
    # the provider still keeps the tail it quotes when spark-submit fails
    assert list(hook._last_submit_log_lines)[-1].startswith('{"dataset": "orders"')


def test_the_job_lines_are_found_by_their_logger(hook, caplog):
    caplog.set_level(logging.INFO)
    hook._process_spark_submit_log(iter(OUTPUT.splitlines()))
    job = [r.getMessage() for r in caplog.records if r.name == JOB_LOGGER]
    assert any(line.startswith("validated: ") for line in job)
    assert job[-1].startswith("summary: orders batch 20261120: 10 messages")
    assert not any("SparkContext" in line for line in job)


def test_the_hooks_own_messages_keep_their_logger(hook):
    # a message with %-args is the hook speaking, not spark-submit: passed through untouched
    seen = []
    hook.log._hook_log = type("Log", (), {"info": lambda self, *a, **k: seen.append(a)})()
    hook.log.info("Spark-Submit cmd: %s", "spark-submit --master local[1]")
    assert seen == [("Spark-Submit cmd: %s", "spark-submit --master local[1]")]
