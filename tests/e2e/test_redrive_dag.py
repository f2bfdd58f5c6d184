"""`airflow dags test` of `foodtaster_orders_redrive` on a real metadata DB: a held batch, the
contract fixed, a dry run that moves nothing, then a redrive and a release in one run that
publish (Asset events, ledger), then a second redrive that moves nothing. Accounts add up."""

from __future__ import annotations

import pytest
import yaml
from support.e2e import DATASET, HOLDING, VALID_URI, asset_events, fill_inbox
from support.lake import row_count

from foodtaster.registry import PROJECT_ROOT
from foodtaster.state import ledger
from foodtaster.state.accounts import check_accounts
from foodtaster.state.lake import Lake, read_json
from foodtaster.state.tables import VALID, BatchFiles, DatasetTables
from foodtaster_dev.localenv import LocalAirflow

pytestmark = pytest.mark.slow
DAG_ID, REDRIVE_DAG_ID = "foodtaster_orders", "foodtaster_orders_redrive"
DATE, BATCH = "2026-11-22", "20261122"
FIX = "foodtaster_dev.contracts.orders_fix:OrdersCurrencyFix"


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    lake = str(tmp_path_factory.mktemp("lake"))
    af = LocalAirflow(home=tmp_path_factory.mktemp("airflow"), lake=lake)
    af.migrate()
    fill_inbox(lake, DATE, seed=13, **HOLDING)
    log = tmp_path_factory.mktemp("logs") / "pipeline.log"
    run = af.dags_test(DAG_ID, DATE, log=log)
    assert run["state"] == "failed", log.read_text()[-5000:]  # held: red (docs/decisions/017)
    assert run["tasks"]["publish"] == "skipped" and run["tasks"]["verdict"] == "failed"
    # The contract fix: a registry whose orders contract accepts lowercase currency codes.
    document = yaml.safe_load((PROJECT_ROOT / "pipeline.yaml").read_text())
    document["datasets"][DATASET]["contract"] = FIX
    registry = tmp_path_factory.mktemp("registry") / "pipeline.yaml"
    registry.write_text(yaml.safe_dump(document, sort_keys=False))
    af.registry = registry
    return af, Lake(lake)


def _redrive_run(af, logical_date, conf, tmp_path):
    log = tmp_path / "redrive.log"
    run = af.dags_test(REDRIVE_DAG_ID, logical_date, conf=conf, log=log)
    assert run["state"] == "success", f"{run}\n{log.read_text()[-5000:]}"
    return run


def _redrive_partitions(lake: Lake) -> list[BatchFiles]:
    """The redrives' batches main of the valid table holds."""
    return [b for b in DatasetTables(lake, DATASET).batches(VALID) if b.batch_id.startswith("redrive-")]


def test_a_dry_run_from_the_form_moves_nothing(setting, tmp_path):
    af, lake = setting
    run = _redrive_run(af, "2026-12-01", {"date_from": DATE}, tmp_path)  # dry run is the default
    assert run["tasks"] == {"plan": "success", "wants_redrive": "success", "redrive": "success",
                            "announce": "skipped", "release": "skipped"}
    assert _redrive_partitions(lake) == []
    check_accounts(lake, DATASET)


def test_a_redrive_and_a_release_publish_and_the_ledger_tells_it(setting, tmp_path):
    af, lake = setting
    conf = {"date_from": DATE, "date_to": DATE, "dry_run": False, "why": "lowercase currency accepted",
            "release_batch": BATCH}
    run = _redrive_run(af, "2026-12-02", conf, tmp_path)
    assert run["tasks"]["announce"] == "success" and run["tasks"]["release"] == "success"
    (partition,) = _redrive_partitions(lake)
    assert partition.batch_date == DATE
    moved = partition.rows
    assert moved > 0
    assert (row_count(lake, DATASET, VALID, BATCH) > 0)  # released
    (entry,) = [e for e in ledger.batch_entries(lake, DATASET) if e["batch_id"] == BATCH]
    assert entry["verdict"] == "published" and entry["released"]["why"] == "lowercase currency accepted"
    redrives = ledger.redrive_entries(lake, DATASET)
    assert [r.get("kind", "redrive") for r in redrives] == ["release", "redrive"]  # release runs first
    assert redrives[1]["counts"]["published"] == moved
    accounts = check_accounts(lake, DATASET)
    assert accounts[BATCH]["redriven"] == moved
    events = {e["task_id"]: e["extra"] for e in asset_events(af, VALID_URI) if e["dag_id"] == REDRIVE_DAG_ID}
    assert events["announce"]["published"] == moved and events["release"]["batch_id"] == BATCH
    report = read_json(lake.report(DATASET, redrives[1]["batch_id"]) + "/redrive.json")
    assert report["by_rule"]["currency.isin"]["published"] == moved


def test_a_second_redrive_moves_nothing(setting, tmp_path):
    af, lake = setting
    run = _redrive_run(af, "2026-12-03", {"date_from": DATE, "dry_run": False, "why": "again"}, tmp_path)
    assert run["tasks"]["redrive"] == "success" and run["tasks"]["announce"] == "skipped"
    assert len(_redrive_partitions(lake)) == 1
    check_accounts(lake, DATASET)
