"""A key of several fields on Spark, and one contract as ODCS, pandera and JSON Schema.

The bundled shipments contract (`contracts/shipments.odcs.yaml`) keys a parcel by its carrier
and tracking number: copies of a key are redeliveries or conflicts, the poison list names a key
by its JSON array text, a redrive finds a published key. The same rules written as a pandera
model and as a JSON Schema give each message the same verdict and the same failing paths."""

from __future__ import annotations

import json

import pandera.pandas as pa
from pandera.typing import Series
from pyspark.sql import functions as F
from support.frames import lines_frame

from foodtaster.contract import read_contract
from foodtaster.contract.documents import read_document
from foodtaster.contract.json_schema import read_json_schema
from foodtaster.engine.judging.judging import (
    decide_outcomes,
    flag_lines,
    unique_key,
    validate_lines,
    with_reasons,
)
from foodtaster.engine.judging.listed import poison_frame
from foodtaster.engine.second_chances.redrive import mark_published
from foodtaster.registry import PROJECT_ROOT
from foodtaster.state.poison import Entry

ODCS = read_document(PROJECT_ROOT / "contracts" / "shipments.odcs.yaml")
KEY = unique_key(ODCS)


def scan(carrier="DHL", tracking_no="1ZA00000001", weight=900, **more):
    message = {"carrier": carrier, "tracking_no": tracking_no, "scanned_at": "2026-11-20T10:00:00Z",
               "status": "IN_TRANSIT", "weight_g": weight,
               "recipient": {"name": "Ada", "postcode": "10115", "country": "DE"},
               "events": [{"code": "PICKUP", "at": "2026-11-20T09:00:00Z"}], **more}
    return json.dumps({k: v for k, v in message.items() if v is not None})


def judged(spark, lines, poison=None):
    flagged = flag_lines(lines_frame(spark, [line.encode() for line in lines]), ODCS, 1 << 20, poison)
    return with_reasons(decide_outcomes(flagged, ODCS), ODCS, 1 << 20).orderBy("_row_id")


def test_a_key_of_two_fields_through_duplicates_the_poison_list_and_a_redrive(spark):
    """Copies of a key are redeliveries or conflicts; the poison list names a key, and a redrive
    finds a published one, by its JSON array text."""
    entry = Entry(id="p1", match="key", value='["POST","1ZA00000001"]', why="crashes the scanner app",
                  source="operator", added_by="t", added_at="2026-11-22T00:00:00+00:00")
    a, other = scan(), scan(tracking_no="X1234567")
    lines = [a, scan(carrier="UPS"), a, other, scan(tracking_no="X1234567", weight=901),
             scan(carrier=None), scan(carrier=None), scan(carrier="POST")]
    # a redrive finds the published keys (here UPS's) and drops a valid row of one as a duplicate
    published = spark.createDataFrame([("UPS", "1ZA00000001")], "carrier string, tracking_no string") \
        .select(F.to_json(F.array("carrier", "tracking_no")).alias("_published_key"))
    rows = mark_published(judged(spark, lines, poison_frame(spark, [entry])), published, KEY) \
        .orderBy("_row_id").collect()
    conflict, missing = ["(carrier,tracking_no).conflicting_duplicate"], ["carrier.required"]
    assert [(r._outcome, sorted(x.rule for x in r.reasons)) for r in rows][:7] == [
        ("valid", []), ("duplicate", []), ("duplicate", []), ("quarantined", conflict),
        ("quarantined", conflict), ("quarantined", missing), ("quarantined", missing)]
    (reason,) = rows[3].reasons
    assert (reason.column, reason.value) == ("(carrier,tracking_no)", '["DHL","X1234567"]')
    assert "appears 2 times" in reason.message
    assert rows[7]._outcome == "quarantined" and [x.message for x in rows[7].reasons] == [entry.why]


STATUSES = ["LABEL_CREATED", "IN_TRANSIT", "OUT_FOR_DELIVERY", "DELIVERED", "RETURNED"]


class Shipment(pa.DataFrameModel):
    """The shipments contract's top-level rules as pandera writes them."""

    carrier: Series[str] = pa.Field(isin=["DHL", "UPS", "FEDEX", "POST"])
    tracking_no: Series[str] = pa.Field(str_contains="^[A-Z0-9]{8,22}$")
    scanned_at: Series[str]
    status: Series[str] = pa.Field(isin=STATUSES)
    weight_g: Series[int] = pa.Field(gt=0, le=70000)

    class Config:
        unique = ["carrier", "tracking_no"]


SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
          "required": ["carrier", "tracking_no", "scanned_at", "status", "weight_g"],
          "properties": {
              "carrier": {"enum": ["DHL", "UPS", "FEDEX", "POST"]},
              "tracking_no": {"type": "string", "pattern": "^[A-Z0-9]{8,22}$"},
              "scanned_at": {"type": "string"},
              "status": {"enum": STATUSES},
              "weight_g": {"type": "integer", "exclusiveMinimum": 0, "maximum": 70000}}}

ODCS_TOP = """\
apiVersion: v3.1.0
kind: DataContract
id: t
version: 1.0.0
status: active
schema:
  - name: shipment
    properties:
      - {name: carrier, logicalType: string, required: true, primaryKey: true, primaryKeyPosition: 1,
         enum: [{value: DHL}, {value: UPS}, {value: FEDEX}, {value: POST}]}
      - {name: tracking_no, logicalType: string, required: true, primaryKey: true, primaryKeyPosition: 2,
         logicalTypeOptions: {pattern: "^[A-Z0-9]{8,22}$"}}
      - {name: scanned_at, logicalType: string, required: true}
      - name: status
        logicalType: string
        required: true
        quality: [{metric: invalidValues, mustBe: 0, arguments: {validValues: [LABEL_CREATED, IN_TRANSIT,
                   OUT_FOR_DELIVERY, DELIVERED, RETURNED]}}]
      - {name: weight_g, logicalType: integer, required: true, logicalTypeOptions: {exclusiveMinimum: 0,
         maximum: 70000}}
"""


def test_odcs_pandera_and_json_schema_give_the_same_verdicts_and_failing_paths(spark, tmp_path):
    (tmp_path / "s.odcs.yaml").write_text(ODCS_TOP)
    (tmp_path / "s.schema.json").write_text(json.dumps(SCHEMA))
    contracts = [read_document(tmp_path / "s.odcs.yaml"), read_contract(Shipment),
                 read_json_schema(tmp_path / "s.schema.json")]
    assert {str(unique_key(c)) for c in contracts[:2]} == {"(carrier,tracking_no)"}
    top = {"carrier": "DHL", "tracking_no": "1ZA00000001", "scanned_at": "2026-11-20T10:00:00Z",
           "status": "DELIVERED", "weight_g": 10}
    messages = [top, {**top, "carrier": "DPD"}, {**top, "tracking_no": "short"}, {**top, "weight_g": 0},
                {**top, "weight_g": 70001, "status": "LOST"}, {**top, "weight_g": 1.5},
                {k: v for k, v in top.items() if k != "status"}, {**top, "tracking_no": None},
                {**top, "carrier": 7, "weight_g": "9"}]
    lines = [json.dumps(m).encode() for m in messages]
    verdicts = []
    for contract in contracts:
        rows = validate_lines(lines_frame(spark, lines), contract, 1 << 20).orderBy("_row_id").collect()
        verdicts.append([sorted({x.column for x in r._reasons}) for r in rows])
    assert verdicts[0] == verdicts[1] == verdicts[2]
    assert verdicts[0] == [[], ["carrier"], ["tracking_no"], ["weight_g"], ["status", "weight_g"],
                           ["weight_g"], ["status"], ["tracking_no"], ["carrier", "weight_g"]]


def test_the_shipments_generator_writes_what_its_truth_says(spark, tmp_path):
    """`make demo`'s shipments day (foodtaster_dev.sample_shipments): the ODCS contract gives each
    line exactly its truth's outcome and (rule, column) reasons, the key of two fields included."""
    from foodtaster_dev.sample_shipments import generate_shipments

    batch = generate_shipments(tmp_path, messages=60, poison_rate=0.4, seed=3)
    lines = (tmp_path / batch.files[0]).read_text().splitlines()
    rows = judged(spark, lines).collect()
    outcome = {"valid": "valid", "quarantined": "quarantined", "duplicate_dropped": "duplicate"}
    got = [(r._outcome, frozenset((x.rule, x.column) for x in r.reasons or [])) for r in rows]
    assert got == [(outcome[t.expected], t.reasons) for t in batch.truth]
    assert {t.kind for t in batch.truth} >= {"conflicting_duplicate", "redelivery", "unknown_status"}
