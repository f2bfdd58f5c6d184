"""One front-end against the other on the same messages: order_events judged by its pandera
contract (contracts/order_events.py) or by the same rules as a JSON Schema
(bench/contracts/order_events.schema.json), in a fresh process each, the judging and the
valid rows' write included (what a contract changes in the job).

    .venv/bin/python bench/bench_json_schema.py generate --messages 200000 --input W/in
    B=".venv/bin/python bench/bench_json_schema.py judge --input W/in"
    farm-bench -n 3 --timeout 1800 --vs "$B --contract pandera --out W/pa" \\
        -- $B --contract json-schema --out W/js

Each judge run prints its counts (they must be the same for both contracts but for the rules
JSON Schema words otherwise: an ISO timestamp and a date by pattern, a decimal as a number).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SCHEMA = Path(__file__).resolve().parent / "contracts" / "order_events.schema.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    generate = verbs.add_parser("generate")
    generate.add_argument("--messages", type=int, default=200_000)
    generate.add_argument("--input", required=True)
    judge = verbs.add_parser("judge")
    judge.add_argument("--contract", choices=("pandera", "json-schema"), required=True)
    judge.add_argument("--input", required=True)
    judge.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.verb == "generate":
        from foodtaster_dev.sample_events import generate_events

        made = generate_events(args.input, messages=args.messages, poison_rate=0.02, files=4,
                               keep_truth=False)
        print(f"{made.messages} messages in {len(made.files)} files: {made.outcomes}")
        return 0
    return _judge(args.contract, args.input, args.out)


def _judge(kind: str, input_dir: str, out: str) -> int:
    from foodtaster.contract import read_contract
    from foodtaster.contract.json_schema import read_json_schema
    from foodtaster.engine.ingest import read_lines
    from foodtaster.engine.judging import VALID, decide_outcomes, flag_lines, with_outcome
    from foodtaster.engine.spark import build_session

    if kind == "pandera":
        from contracts.order_events import OrderEvents

        contract = read_contract(OrderEvents)
    else:
        contract = read_json_schema(SCHEMA)
    spark = build_session(f"bench-{kind}")
    started = time.perf_counter()
    flagged = flag_lines(read_lines(spark, input_dir), contract, 1 << 20)
    decided = decide_outcomes(flagged, contract).cache()
    valid = with_outcome(decided, VALID).drop("_verdict", "_failed", "_outcome", "_conflict")
    valid.write.mode("overwrite").parquet(out)
    counts = {r["_outcome"]: r["count"] for r in decided.groupBy("_outcome").count().collect()}
    print(f"{kind}: {counts} in {time.perf_counter() - started:.1f} s (judged and written)")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
