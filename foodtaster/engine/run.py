"""A straight run of one batch, one owner for each effect, in order:

1. claim    the batch's lease, once, and refuse a rerun of a redriven batch (`claimed`),
            before Spark starts: a second run of the batch is refused in a second
2. land     a hand run's file or folder through the source (`sources.land_hand_run`)
3. judge    the job (`job.judge_batch`: judge, write, decide), crash isolation around it
            (`crash.run_isolating_crashes`), under the lease
4. publish  the judged run when the verdict allows, through the one publish path the DAG's
            publish task takes too (`state.publish.publish_judged`: main moved to the batch's
            audit branch); `publish=False` leaves it to that task

`spark_jobs/validate_batch.py` runs these steps with a Spark session of its own; `run_batch`
runs them on a session given (tests, the demos, the benchmark).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from pyspark.sql import SparkSession

from foodtaster.engine.batch import crash, job
from foodtaster.engine.batch.job import BatchRun
from foodtaster.errors import UsageError
from foodtaster.logs import batch_logger
from foodtaster.sources import land_hand_run
from foodtaster.state.lake import Lake
from foodtaster.state.lease import batch_lease
from foodtaster.state.publish import publish_judged
from foodtaster.summary import BatchSummary


class BatchWasRedriven(UsageError):
    """A rerun of a batch some rows of which a redrive published elsewhere: it would publish them twice."""


def run_batch(spark: SparkSession, run: BatchRun) -> BatchSummary:
    """Claim, land, judge and (when the verdict and the run allow) publish one batch on `spark`;
    returns its summary."""
    with claimed(run) as landed:
        summary = judge_isolating_crashes(spark, landed)
    return publish_if_passed(landed, summary)


@contextmanager
def claimed(run: BatchRun) -> Iterator[BatchRun]:
    """Hold the batch's lease for the block (the only place a run takes it), refuse a rerun of a
    redriven batch, and land a hand run's plain folder under the land task's limits; yields the
    run reading its landed input. Files a killed run wrote and no snapshot holds are removed
    by `foodtaster tables maintain` (`foodtaster.state.upkeep`)."""
    with batch_lease(run.lake, run.config.name, run.batch_id, run.run_id):
        check_not_redriven(run.lake, run.config.name, run.batch_id, run.batch_date)
        yield replace(run, input_path=land_hand_run(run.lake, run.config, run.input_path,
                                                    run.batch_id, run.batch_date))


def judge_isolating_crashes(spark: SparkSession, run: BatchRun) -> BatchSummary:
    """The job on the claimed batch; a message that crashes a Python check is found, listed and
    quarantined as `crash.isolated`, and the job runs again (`crash.run_isolating_crashes`)."""
    batch = crash.BatchInput(run.config, run.lake, run.input_path, run.batch_id, run.run_id)
    return crash.run_isolating_crashes(lambda isolated: job.judge_batch(spark, run, isolated), spark,
                                       batch, batch_logger(__name__, run.config.name, run.batch_id))


def publish_if_passed(run: BatchRun, summary: BatchSummary) -> BatchSummary:
    """Publish the judged run when the run asks for it and its verdict allows, as the publish
    task does; returns the summary as it is now (published, or as the job left it)."""
    if not (run.publish and summary.verdict.publish):
        return summary
    uri = run.lake.summary(run.config.name, run.batch_id)
    published = publish_judged(run.lake, run.config.name, run.batch_id, run.run_id, uri)
    # the file's keys are sorted; the summary in hand keeps its reasons most first
    return summary.with_changes(published=published.published, published_at=published.published_at,
                                tables=published.tables)


def check_not_redriven(lake: Lake, dataset: str, batch_id: str, batch_date: str) -> None:
    """Refuse to rerun a batch whose rows were redriven (foodtaster.engine.second_chances.redrive): judged
    again, they would land in the batch's own valid partition too. The refusal names the redrive
    DAG (`foodtaster_airflow.factory.redrive_dag_id_for`) and the whole command to run instead."""
    from foodtaster.state.dispositions import DUPLICATE as FOUND_DUPLICATE
    from foodtaster.state.dispositions import REDRIVEN, Dispositions

    counts = Dispositions(lake, dataset).state().counts(batch_id)
    moved = counts.get(REDRIVEN, 0) + counts.get(FOUND_DUPLICATE, 0)
    if moved:
        raise BatchWasRedriven(
            f"{dataset} batch {batch_id}: {moved} of its quarantined rows were redriven (published "
            "or found duplicate later); rerunning it would publish them twice. Redrive its "
            f"remaining quarantined rows instead: trigger the DAG foodtaster_{dataset}_redrive with "
            f"date_from {batch_date} (a dry run first, then dry_run off), or run `foodtaster redrive "
            f"--dataset {dataset} --from {batch_date} --to {batch_date} --batch {batch_id} --dry-run`"
        )
