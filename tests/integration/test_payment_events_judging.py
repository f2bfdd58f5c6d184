"""The bundled JSON Schema dataset, payment_events, through the Spark job's judging: every line's
outcome and (rule, column) reasons equal to its generator's truth, the valid rows typed by the
schema's typed view, and the contract read from the registry as the job reads it."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path as FilePath

import pytest
from pyspark.sql import functions as F
from support.frames import lines_frame

from foodtaster.engine.judging.judging import VALID, decide_outcomes, flag_lines, validate_lines, with_outcome
from foodtaster.engine.judging.layers import named
from foodtaster.registry import get_dataset
from foodtaster_dev.sample_payments import POISON_KINDS, generate_payments

CONFIG = get_dataset("payment_events")


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    made = generate_payments(tmp_path_factory.mktemp("payments"), messages=600, seed=23, poison_rate=0.25,
                             files=2, gzip_files=1)
    lines: list[bytes] = []
    for path in made.files:
        data = FilePath(path).read_bytes()
        lines += (gzip.decompress(data) if path.endswith(".gz") else data).split(b"\n")[:-1]
    assert len(lines) == len(made.truth) == 600
    return made, lines


def test_every_line_gets_the_reasons_its_truth_lists(spark, batch):
    made, lines = batch
    contract = CONFIG.read_contract()
    rows = validate_lines(lines_frame(spark, lines), contract, CONFIG.max_message_bytes) \
        .orderBy("_row_id").collect()
    kinds = Counter()
    for truth, row in zip(made.truth, rows, strict=True):
        got = {(r.rule, r.column) for r in row["_reasons"]}
        want = {(rule, column) for rule, column in truth.reasons}
        if truth.kind in ("invalid_utf8", "nul_byte", "truncated_json", "nan", "top_level_array"):
            assert got and all(r.layer in ("bytes", "parse") for r in row["_reasons"]), (truth, got)
        else:
            assert got == want, (truth.file, truth.line, truth.kind, got, want)
        kinds[truth.kind] += 1
    assert set(POISON_KINDS) <= set(kinds) and kinds["good"] > 300


def test_the_valid_rows_hold_the_typed_view_and_the_rest_as_json_text(spark, batch):
    made, lines = batch
    contract = CONFIG.read_contract()
    flagged = flag_lines(lines_frame(spark, lines), contract, CONFIG.max_message_bytes)
    valid = with_outcome(decide_outcomes(flagged, contract), VALID)
    assert valid.count() == made.outcomes["valid"]
    types = dict(valid.select("data", "created", "livemode", "type").dtypes)
    assert types["livemode"] == "boolean" and types["type"] == "string" and types["created"] == "string"
    amount = valid.select(F.col("data.object.amount").alias("amount"), named("created")).first()
    assert str(valid.schema["data"].dataType["object"].dataType["amount"].dataType) == "LongType()"
    assert amount.amount > 0 and amount.created[0] in '"0123456789'  # a date-time's JSON text, or an integer
