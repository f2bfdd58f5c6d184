"""spark-submit entrypoint: the retry pass of a dataset (foodtaster.engine.second_chances.retry).

    spark-submit spark_jobs/retry_rows.py --dataset orders --lake ROOT [--run-id ID]

Re-evaluates the quarantined rows of retryable rules that are due, publishes those that
pass and the held messages of released groups (as a redrive), and counts attempts. A
dataset with no retryable rule and no `group_by` has nothing to do: no Spark is started.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the engine, when run from a checkout

from foodtaster.lake_paths import lake_root  # noqa: E402
from foodtaster.logs import configure  # noqa: E402
from foodtaster.registry import get_dataset  # noqa: E402
from foodtaster.state.lake import Lake, new_run_id, run_id_from  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True, help="a dataset of pipeline.yaml")
    parser.add_argument("--lake", default=None, help="lake root (default: $FOODTASTER_LAKE or ./data/lake)")
    parser.add_argument("--run-id", type=run_id_from, default=None, help="this pass's name")
    parser.add_argument("--master", default=None, help="Spark master (default: spark-submit's)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure()
    config = get_dataset(args.dataset)
    from foodtaster.contract_references import read_references

    if not config.group_by and not any(ref.retry for ref in read_references(config.load_contract())):
        print(json.dumps({"dataset": config.name, "nothing_to_retry": True}))
        return 0
    from foodtaster.engine.second_chances.retry import run_retries
    from foodtaster.engine.spark import build_session

    spark = build_session(f"foodtaster-{args.dataset}-retry", master=args.master)
    try:
        summary = run_retries(spark, config, Lake(args.lake or lake_root()),
                              run_id=args.run_id or new_run_id())
    finally:
        spark.stop()
    print(json.dumps({k: v for k, v in summary.items() if k != "paths"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
