"""The OpenLineage facets a judged batch is sent with (foodtaster_airflow.lineage), serialized as
the provider's client sends them."""

from __future__ import annotations

import json

from openlineage.client.serde import Serde

from foodtaster.summary import BatchSummary
from foodtaster_airflow.lineage import _column, batch_lineage, namespace_and_root


def _summary(**document) -> BatchSummary:
    """A judged batch of orders as the job writes its summary; `document` the keys a test sets."""
    verdict = {"publish": True, "alert": False, "severity": "ok", **document.pop("verdict", {})}
    return BatchSummary.from_json({"dataset": "orders", "run_id": "r1", "verdict": verdict, **document})


def test_the_lake_names_the_namespace_and_a_rule_its_column_path():
    assert namespace_and_root("/srv/lake") == ("file", "/srv/lake")
    assert namespace_and_root("file:///srv/lake/") == ("file", "/srv/lake")
    assert namespace_and_root("s3a://bucket/lake") == ("s3://bucket", "lake")
    assert _column("amount.greater_than_or_equal_to(0)") == "amount"
    assert _column("data.lines[].qty.greater_than_or_equal_to(1)") == "data.lines[].qty"
    assert _column("json.invalid") is None and _column("registry.listed") is None
    assert _column('data["a(b.c"].greater_than(1)') == 'data["a(b.c"]'  # a quoted key, read whole
    assert _column("currency.isin") == "currency"


def test_the_outputs_carry_metrics_assertions_and_the_verdict():
    summary = _summary(batch_id="20261121", batch_date="2026-11-21", messages=500, valid=350,
                       quarantined=146, duplicates_dropped=4, quarantine_rate=0.292,
                       reasons={"currency.isin": 60, "json.invalid": 40},
                       gate={"passed": True, "results": [{
                           "expectation": "expect_column_values_to_not_be_null", "column": "order_id",
                           "success": True, "observed": None}]},
                       verdict={"publish": False, "why": ["quarantine rate 29.20% >= hold_rate 20.00%"]})
    lineage = batch_lineage("orders", summary, "/srv/lake")
    events = [json.loads(Serde.to_json(dataset)) for dataset in lineage.outputs]
    by_zone = {dataset["name"]: dataset["facets"] for dataset in events}
    assert set(by_zone) == {"/srv/lake/valid/orders", "/srv/lake/quarantine/orders"}
    quarantine = by_zone["/srv/lake/quarantine/orders"]
    assert quarantine["dataQualityMetrics"]["rowCount"] == 146
    assert by_zone["/srv/lake/valid/orders"]["dataQualityMetrics"]["rowCount"] == 350
    checks = {a["assertion"]: a for a in quarantine["dataQualityAssertions"]["assertions"]}
    assert {key: checks["currency.isin"].get(key) for key in ("success", "column", "severity", "actual")} == {
        "success": False, "column": "currency", "severity": "quarantine", "actual": "60 messages"}
    assert checks["expect_column_values_to_not_be_null"]["success"] is True
    assert checks["quarantine_rate_below_hold_rate"]["success"] is False
    batch = quarantine["foodtaster_batch"]
    assert (batch["verdict"], batch["quarantineRate"], batch["why"]) == (
        "held", 0.292, ["quarantine rate 29.20% >= hold_rate 20.00%"])
    assert batch["_schemaURL"].startswith("urn:foodtaster:")
    (raw,) = [json.loads(Serde.to_json(dataset)) for dataset in lineage.inputs]
    assert raw["name"] == "/srv/lake/raw/orders"
    assert raw["inputFacets"]["dataQualityMetrics"]["rowCount"] == 500


def test_the_tables_are_named_by_their_location_with_the_catalogs_name_and_the_snapshot(tmp_path):
    import pyarrow as pa
    from support.lake import commit_rows

    from foodtaster.state.lake import Lake
    from foodtaster.state.tables import QUARANTINE, VALID, DatasetTables

    lake = Lake(str(tmp_path / "lake"))
    commit_rows(lake, "orders", VALID, "2026-11-21", "20261121", pa.table({"message_id": ["m1"]}),
                publish=False)
    commit_rows(lake, "orders", QUARANTINE, "2026-11-21", "20261121", pa.table({"_raw": [b"{"]}))
    tables = DatasetTables(lake, "orders")
    staged = tables.table(VALID).snapshot_by_name("audit-20261121").snapshot_id
    quarantined = tables.table(QUARANTINE).current_snapshot().snapshot_id
    summary = _summary(batch_id="20261121", batch_date="2026-11-21", messages=2, valid=1,
                       quarantined=1, duplicates_dropped=0, quarantine_rate=0.5, verdict={"publish": False},
                       tables={"names": {"valid": "orders", "quarantine": "orders_quarantine",
                                         "namespace": "foodtaster", "catalog": "foodtaster"},
                               "branch": "audit-20261121", "staged_snapshot": staged,
                               "quarantine_snapshot": quarantined})
    events = [json.loads(Serde.to_json(d)) for d in batch_lineage("orders", summary, lake.root).outputs]
    by_table = {d["facets"]["symlinks"]["identifiers"][0]["name"]: d for d in events}
    assert set(by_table) == {"foodtaster.orders", "foodtaster.orders_quarantine"}
    valid = by_table["foodtaster.orders"]
    assert (valid["namespace"], valid["name"]) == ("file", tables.table(VALID).location().removeprefix("file://"))
    assert valid["facets"]["version"]["datasetVersion"] == str(staged)  # not published: the branch's
    assert by_table["foodtaster.orders_quarantine"]["facets"]["version"]["datasetVersion"] == str(quarantined)
    catalog = valid["facets"]["catalog"]
    assert (catalog["framework"], catalog["name"]) == ("iceberg", "foodtaster")
