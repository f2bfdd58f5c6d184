"""spark-submit entrypoint: taste one batch of a dataset.

    spark-submit spark_jobs/validate_batch.py --dataset orders --input PATH --batch-id ID \\
        --lake ROOT [--batch-date YYYY-MM-DD] [--run-id ID] [--no-publish] [--no-gate]

Also runs as `python spark_jobs/validate_batch.py ...` on local Spark. Poison
messages never fail the job; only infrastructure errors do (and are retried). A run the
job refuses (a rerun of a redriven batch, a batch a live run holds, a contract that cannot
be read) exits with `foodtaster.errors.REFUSED_EXIT_CODE` and prints `REFUSED: <why and
what to do instead>` as its last line: a retry would be refused the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the engine, when run from a checkout

from foodtaster.engine.batch.job import BatchRun  # noqa: E402
from foodtaster.engine.run import claimed, judge_isolating_crashes, publish_if_passed  # noqa: E402
from foodtaster.engine.spark import build_session  # noqa: E402
from foodtaster.errors import REFUSED_EXIT_CODE, REFUSED_PREFIX, FoodtasterError, refusal  # noqa: E402
from foodtaster.lake_paths import lake_root  # noqa: E402
from foodtaster.logs import configure  # noqa: E402
from foodtaster.registry import get_dataset  # noqa: E402
from foodtaster.state.lake import Lake, check_batch_id, check_date, new_run_id, run_id_from  # noqa: E402


def _checked(check):
    """argparse shows an ArgumentTypeError's own words; a ValueError it would hide."""

    def convert(value: str) -> str:
        try:
            return check(value)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from err

    return convert


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", required=True, help="a dataset of pipeline.yaml")
    parser.add_argument("--input", required=True, help="a file or a folder of JSON-lines files (.gz allowed)")
    parser.add_argument("--batch-id", required=True, type=_checked(check_batch_id))
    parser.add_argument("--lake", default=None, help="lake root (default: $FOODTASTER_LAKE or ./data/lake)")
    parser.add_argument("--batch-date", type=_checked(check_date), default=date.today().isoformat())
    parser.add_argument("--run-id", type=_checked(run_id_from), default=None,
                        help="this run's name (its output paths, its lease); default: time + random")
    parser.add_argument("--master", default=None,
                        help="Spark master (default: spark-submit's, else local[*])")
    parser.add_argument("--no-publish", dest="publish", action="store_false",
                        help="leave valid rows staged; the pipeline's publish task publishes")
    parser.add_argument("--no-gate", dest="gate", action="store_false",
                        help="skip the Great Expectations batch gate")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure()
    try:
        return validate(args)
    except FoodtasterError as err:
        if not refusal(err):
            raise
        print(REFUSED_PREFIX + " ".join(str(err).split()), file=sys.stderr, flush=True)
        return REFUSED_EXIT_CODE


def validate(args: argparse.Namespace) -> int:
    config = get_dataset(args.dataset)
    config.read_contract()  # a contract that cannot be read is refused before Spark starts
    run = BatchRun(config=config, input_path=args.input, lake=Lake(args.lake or lake_root()),
                   batch_id=args.batch_id, batch_date=args.batch_date, publish=args.publish,
                   gate=args.gate, run_id=args.run_id or new_run_id())
    # Claimed before Spark starts (`foodtaster.engine.run`), so a second run of the batch, or a
    # rerun of a redriven one, is refused in a second; published after the lease is let go, as
    # the publish task publishes.
    with claimed(run) as landed:
        spark = build_session(f"foodtaster-{args.dataset}-{args.batch_id}", master=args.master)
        try:
            summary = judge_isolating_crashes(spark, landed)
        finally:
            spark.stop()
    summary = publish_if_passed(landed, summary)
    document = summary.to_json()
    print(json.dumps({k: document[k] for k in (
        "dataset", "batch_id", "run_id", "messages", "valid", "quarantined", "duplicates_dropped",
        "quarantine_rate", "published",
    )}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
