"""One front-end against the other on the same messages: order_events judged by its pandera
contract (contracts/order_events.py) or by the same rules as a JSON Schema
(bench/contracts/order_events.schema.json), in a fresh process each (`local[2]`, a 6 GiB
driver, as `bench_validate.py` builds it), the judging and the valid rows' write included (what
a contract changes in the job).

    .venv/bin/python bench/bench_json_schema.py generate --messages 200000 --input W/in
    .venv/bin/python bench/bench_json_schema.py compare --input W/in --out W --rounds 3

`compare` runs the two judges in alternating rounds, each a fresh process, and prints each
round's wall seconds, the medians and the median of the paired ratios (JSON Schema / pandera).

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
    compare = verbs.add_parser("compare")
    compare.add_argument("--input", required=True)
    compare.add_argument("--out", required=True)
    compare.add_argument("--rounds", type=int, default=3)
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
    if args.verb == "compare":
        return _compare(args.input, args.out, args.rounds)
    return _judge(args.contract, args.input, args.out)


def _compare(input_dir: str, out: str, rounds: int) -> int:
    import os
    import statistics
    import subprocess

    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    seconds: dict[str, list[float]] = {"pandera": [], "json-schema": []}
    for number in range(rounds):
        for kind in ("pandera", "json-schema") if number % 2 == 0 else ("json-schema", "pandera"):
            started = time.perf_counter()
            subprocess.run([sys.executable, __file__, "judge", "--contract", kind, "--input", input_dir,
                            "--out", f"{out}/{kind}"], check=True, capture_output=True)
            seconds[kind].append(time.perf_counter() - started)
        print(f"round {number + 1}: pandera {seconds['pandera'][-1]:.1f} s, "
              f"json-schema {seconds['json-schema'][-1]:.1f} s")
    ratios = [js / pa for js, pa in zip(seconds["json-schema"], seconds["pandera"], strict=True)]
    print(f"median: pandera {statistics.median(seconds['pandera']):.1f} s, json-schema "
          f"{statistics.median(seconds['json-schema']):.1f} s, json-schema / pandera "
          f"{statistics.median(ratios):.2f} (paired, {rounds} rounds); load average {os.getloadavg()[0]:.2f}")
    return 0


def _judge(kind: str, input_dir: str, out: str) -> int:
    from foodtaster.contract import read_contract
    from foodtaster.contract.json_schema import read_json_schema
    from foodtaster.engine.batch.ingest import read_lines
    from foodtaster.engine.judging.judging import VALID, decide_outcomes, flag_lines, with_outcome
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_validate import build_spark  # the driver's heap set as every bench sets it

    if kind == "pandera":
        from contracts.order_events import OrderEvents

        contract = read_contract(OrderEvents)
    else:
        contract = read_json_schema(SCHEMA)
    spark = build_spark("local[2]", "6g")
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
