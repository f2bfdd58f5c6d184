"""The Airflow glue's own logic, without a running Airflow: run dates, the gate step,
ledger entries, the self-pause rule, connections -> senders, the Spark submit command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.airflow_api import FakeAirflowApi
from support.environment import PROJECT_ROOT
from support.lake import reason, write_batch
from support.task_documents import landed, ledger_entry, summary

from foodtaster.errors import refusal
from foodtaster.registry import get_dataset
from foodtaster.state import ledger
from foodtaster.state.lake import Lake, write_json
from foodtaster.state.refusals import alert_stem, refusals
from foodtaster_airflow import channels, ledger_step, steps
from foodtaster_airflow.rest import AirflowApi
from foodtaster_airflow.spark_submit import (
    ValidateBatchOperator,
    job_environment,
    parse_conf,
    submit_exit_code,
)


def conn(**fields):
    base = {"conn_type": "http", "host": None, "port": None, "login": None, "password": None,
            "schema": None, "extra_dejson": {}}
    return SimpleNamespace(**{**base, **fields})


# ----------------------------------------------------------------- run dates


def test_the_run_date_is_the_logical_date_of_dags_test_backfills_and_schedules():
    context = {"logical_date": datetime(2026, 11, 20, tzinfo=UTC),
               "data_interval_start": datetime(2026, 11, 19, tzinfo=UTC)}
    assert steps.run_interval(context, {}, "@daily") == ("2026-11-20", None)


def test_the_batch_date_param_wins_and_hourly_schedules_take_the_hour():
    context = {"logical_date": datetime(2026, 11, 20, 7, tzinfo=UTC)}
    assert steps.run_interval(context, {"batch_date": "2026-11-02"}, "@daily") == (
        "2026-11-02", None)
    assert steps.run_interval(context, {}, "@hourly") == ("2026-11-20", 7)


def test_a_manual_run_without_logical_date_takes_the_last_complete_day():
    context = {"logical_date": None, "data_interval_start": None,
               "run_after": datetime(2026, 11, 21, 9, tzinfo=UTC)}
    assert steps.run_interval(context, {}, "@daily") == ("2026-11-20", None)


def test_a_named_batch_is_found_under_its_date(tmp_path):
    lake = Lake(str(tmp_path))
    (tmp_path / "raw/orders/batch_date=2026-11-03/batch_id=20261103").mkdir(parents=True)
    assert steps.landed_date(lake, "orders", "20261103") == "2026-11-03"
    with pytest.raises(steps.BatchNotLanded, match="never landed") as raised:
        steps.landed_date(lake, "orders", "nope")
    assert refusal(raised.value)  # the land task fails at once: a retry cannot land it


def test_a_never_landed_batch_id_gets_the_expected_form_and_the_ids_landed_near_its_date(
    tmp_path,
):
    lake = Lake(str(tmp_path))
    for day in ("2026-11-01", "2026-11-10", "2026-11-12"):
        (tmp_path / f"raw/orders/batch_date={day}/batch_id={day.replace('-', '')}").mkdir(
            parents=True)
    with pytest.raises(steps.BatchNotLanded) as err:
        steps.landed_date(lake, "orders", "2026-11-11")
    message = str(err.value)
    assert "a batch id is YYYYMMDD as a daily run lands it (YYYYMMDDHH hourly)" in message
    assert ("landed within 3 days of 2026-11-11: 20261110 (2026-11-10), 20261112 (2026-11-12)"
            in message)
    assert "20261101" not in message
    with pytest.raises(steps.BatchNotLanded, match=r"latest landed: 20261101 \(2026-11-01\), "
                       r"20261110 \(2026-11-10\), 20261112"):
        steps.landed_date(lake, "orders", "nope")
    with pytest.raises(steps.BatchNotLanded, match="no batch was landed yet"):
        steps.landed_date(lake, "payments", "20261111")


def test_the_trigger_form_refuses_a_batch_id_no_batch_can_have_and_shows_no_markup():
    from airflow.sdk.exceptions import ParamValidationError

    from foodtaster.state.lake import BATCH_ID_PATTERN
    from foodtaster_airflow.factory import reprocess_params, run_params, valid_asset

    params = reprocess_params()
    batch_id = params["batch_id"]
    assert batch_id.schema["pattern"] == BATCH_ID_PATTERN.pattern
    for accepted in ("20261111", "2026111108"):
        assert batch_id.resolve(accepted) == accepted
    for refused in ("2026 11 11", "../20261111", "", "x" * 65):
        with pytest.raises(ParamValidationError, match="does not match"):
            batch_id.resolve(refused)
    with pytest.raises(ParamValidationError):
        batch_id.resolve(None)  # the reprocess DAG's one question: the form asks it first
    # the scheduled DAG's Backfill tab shows every param and passes none on: it has none
    assert run_params("orders") == {}
    for param in [*params.values(), *run_params("orders").values()]:  # descriptions are plain text
        assert "`" not in param.description
    # the Assets view's search matches names: the name is the URI the README gives
    asset = valid_asset("orders")
    assert asset.name == asset.uri == "foodtaster://valid/orders"


# ---------------------------------------------------------------------- gate


def test_gate_reads_the_summary_and_passes_on_its_verdict(tmp_path):
    lake = Lake(str(tmp_path))
    write_json(lake.summary("orders", "20261120"), summary())
    decision = steps.read_verdict("orders", landed(lake))
    assert decision["verdict"]["publish"] and decision["verdict"]["alert"]  # 9% >= 2%
    assert decision["top_reasons"] == [["b.rule", 7], ["a.rule", 2], ["c.rule", 2]]
    assert decision["counts"]["messages"] == 100
    json.dumps(decision)  # an XCom: JSON only


def test_gate_holds_a_batch_whose_counts_do_not_add_up(tmp_path):
    lake = Lake(str(tmp_path))
    write_json(lake.summary("orders", "20261120"), summary(valid=95, quarantine_rate=0.01))
    verdict = steps.read_verdict("orders", landed(lake))["verdict"]
    assert not verdict["publish"] and verdict["severity"] == "critical"
    assert "do not add up" in verdict["why"][-1]


def test_gate_fails_when_the_job_wrote_no_summary(tmp_path):
    with pytest.raises(steps.PipelineError, match="no summary"):
        steps.read_verdict("orders", landed(Lake(str(tmp_path))))


# --------------------------------------------------------------------- retry


def test_the_retry_tasks_check_reads_the_contract_and_the_lake_without_the_engine(tmp_path):
    rule = "customer_id.references(customers.customer_id)"  # contracts/orders.py: retryable
    write_batch(tmp_path, "2026-11-20", "20261120", [b'{"a": 1}', b'{"a": 2}'],
                {2: [reason(rule, "c-9 is not among the published customer_id", column="customer_id")]})
    probe = ("import sys; from foodtaster_airflow.spark_submit import retry_work; "
             "print(repr(retry_work('orders', sys.argv[1]))); "
             "print(sorted(m for m in sys.modules if m.startswith('foodtaster.engine')))")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True,
                          timeout=120, cwd=PROJECT_ROOT, env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    why, engine_modules = done.stdout.splitlines()[-2:]
    assert "a retryable row is due (20261120|" in why  # landed in 1970: long due
    assert engine_modules == "[]"


# -------------------------------------------------------------------- ledger


@pytest.mark.parametrize("outcome", ["empty", "published", "held"])
def test_ledger_entries_are_accepted_by_the_ledger(tmp_path, outcome):
    lake = Lake(str(tmp_path))
    write_json(lake.summary("orders", "20261120"), summary())
    decision = None if outcome == "empty" else steps.read_verdict("orders", landed(lake))
    published = {"valid": 90} if outcome == "published" else None
    entry = ledger_entry(lake, decision, published, "dag", "run")
    ledger.record_batch(lake, "orders", entry)
    (recorded,) = ledger.batch_entries(lake, "orders")
    assert recorded["verdict"] == outcome


def test_the_run_note_leads_with_the_verdict_and_names_the_batch_and_its_inbox_date(tmp_path):
    lake = Lake(str(tmp_path))
    notes = {}
    for outcome, changes in [("published", {}), ("empty", {}),
                             ("held", {"quarantine_rate": 0.3, "quarantined": 30, "valid": 69})]:
        write_json(lake.summary("orders", "20261120"), summary(**changes))
        decision = None if outcome == "empty" else steps.read_verdict("orders", landed(lake))
        published = {"valid": 90} if outcome == "published" else None
        notes[outcome] = ledger_step.run_note(ledger_entry(lake, decision, published, "dag", "run"))
    assert notes["published"] == (
        "published: batch 20261120, inbox date 2026-11-20: 90 valid, 9 quarantined of 100 (9.00%)")
    assert notes["empty"] == "empty: batch 20261120, inbox date 2026-11-20: no new files in the inbox"
    assert notes["held"].startswith(
        "HELD, not published: batch 20261120, inbox date 2026-11-20: 30 quarantined of 100 "
        "(30.00%); quarantine rate 30.00% >= hold_rate")
    assert ledger_step.landing_note(landed(lake)) == (
        "batch 20261120, inbox date 2026-11-20: 100 messages landed")


def test_the_run_note_is_set_on_the_run_through_the_rest_api_and_never_fails_the_run():
    run_id = "manual__2026-11-20T00:00:00+00:00"
    with FakeAirflowApi() as server:
        api = AirflowApi(server.url, "admin", "admin", timeout=5)
        assert ledger_step.note_run("orders", "20261120", "foodtaster_orders", run_id, "HELD: x",
                              api=api)
    assert server.requests[-1] == (
        "PATCH",
        "/api/v2/dags/foodtaster_orders/dagRuns/manual__2026-11-20T00%3A00%3A00%2B00%3A00"
        "?update_mask=note",
        {"note": "HELD: x"},
    )
    # the server is gone: the note is logged, the run goes on
    assert not ledger_step.note_run("orders", "20261120", "foodtaster_orders", run_id, "HELD: x",
                              api=AirflowApi(server.url, "admin", "admin", timeout=5))


def test_a_run_note_the_api_failed_to_store_is_sent_again(caplog):
    """HTTP 500 from the API (its SQLite database locked by the scheduler's writes): the note is
    sent again, up to NOTE_TRIES times; after the last failure it is only logged."""
    run_id = "manual__2026-11-20T00:00:00+00:00"
    with FakeAirflowApi(failed_patches=2) as server:
        api = AirflowApi(server.url, "admin", "admin", timeout=5)
        assert ledger_step.note_run("orders", "20261120", "foodtaster_orders", run_id, "HELD: x", api=api)
    assert [method for method, *_ in server.requests].count("PATCH") == 3
    with FakeAirflowApi(failed_patches=ledger_step.NOTE_TRIES) as server:
        api = AirflowApi(server.url, "admin", "admin", timeout=5)
        assert not ledger_step.note_run("orders", "20261120", "foodtaster_orders", run_id, "HELD: x",
                                        api=api)
    assert [method for method, *_ in server.requests].count("PATCH") == ledger_step.NOTE_TRIES
    assert "event=run_note_failed" in caplog.text and "HTTP 500" in caplog.text


def test_a_run_note_without_an_api_fails_at_sign_in_before_importing_the_client(monkeypatch):
    """`airflow dags test` has no api-server: the note gives up without paying for the import."""
    import requests

    with FakeAirflowApi() as server:
        url = server.url
    monkeypatch.setitem(sys.modules, "airflow_client.client", None)  # importing it would raise
    with pytest.raises(requests.ConnectionError):
        AirflowApi(url, "admin", "admin", timeout=5).set_note("foodtaster_orders", "r", "x")


def test_the_first_landing_after_a_self_pause_re_enables_the_dataset_and_says_so(
    tmp_path, monkeypatch, caplog
):
    import logging

    lake = Lake(str(tmp_path))
    monkeypatch.setenv("FOODTASTER_LAKE", lake.root)
    inbox = Path(lake.inbox("orders", "2026-11-20"))
    inbox.mkdir(parents=True)
    (inbox / "a.jsonl").write_text('{"a": 1}\n')
    ledger.record_disabled(lake, "orders", "3 held batches in a row")
    caplog.set_level(logging.INFO, logger="foodtaster")
    landed = steps.land("orders", "2026-11-20", None, None)
    assert not ledger.is_disabled(lake, "orders")
    assert any(r.getMessage().startswith(f"dataset=orders batch={landed['batch_id']} event=re_enabled")
               for r in caplog.records)


@pytest.mark.parametrize(("streak", "after", "pause"), [
    (0, 5, False), (4, 5, False), (5, 5, True), (6, 5, False), (10, 5, True), (2, 2, True),
])
def test_the_dag_pauses_every_disable_after_held_batches_in_a_row(streak, after, pause):
    assert ledger.should_disable(streak, after) is pause


# --------------------------------------------------------------- connections


def test_the_run_link_is_built_from_airflows_base_url(monkeypatch):
    run_id = "manual__2026-11-20T00:00:00+00:00"
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/team/")
    assert channels.run_url("foodtaster_orders", run_id) == (
        "https://airflow.example.com/team/dags/foodtaster_orders/runs/"
        "manual__2026-11-20T00%3A00%3A00%2B00%3A00")
    monkeypatch.delenv("AIRFLOW__API__BASE_URL")
    assert channels.run_url("d", "r").startswith("http://localhost:8080/dags/d/runs/r")


def test_smtp_settings_follow_the_smtp_providers_conventions():
    # SSL and STARTTLS unless the connection disables them, as SmtpHook does
    plain = channels.smtp_settings(conn(host="mail", port=1025, extra_dejson={
        "from_email": "ft@example.com", "disable_tls": "true", "disable_ssl": True}))
    assert plain == {"host": "mail", "port": 1025, "sender": "ft@example.com", "login": None,
                     "ssl": False, "starttls": False}
    tls = channels.smtp_settings(conn(host="mail", login="bot@example.com", password="pw",
                                      extra_dejson={"disable_ssl": "true"}))
    assert tls["starttls"] and not tls["ssl"]
    assert tls["sender"] == "bot@example.com" and tls["port"] == 25


def test_the_smtp_client_follows_the_connection_and_retries_a_dropped_connect(monkeypatch):
    import smtplib

    opened = []

    class Server:
        def __init__(self, **where):
            opened.append(where)
            if len(opened) < 3:
                raise smtplib.SMTPServerDisconnected("not yet")
            self.calls = []

        def starttls(self, context=None):
            self.calls.append("starttls")

        def ehlo(self):
            self.calls.append("ehlo")

        def login(self, user, password):
            self.calls.append(("login", user, password))

    monkeypatch.setattr(smtplib, "SMTP", Server)
    client = channels.smtp_client(conn(host="mail", port=587, login="bot", password="pw",
                                       extra_dejson={"disable_ssl": "true", "retry_limit": 2,
                                                     "timeout": 7}))
    assert opened == [{"host": "mail", "port": 587, "timeout": 7}] * 3
    assert client.calls == ["starttls", "ehlo", ("login", "bot", "pw")]
    opened.clear()
    with pytest.raises(smtplib.SMTPServerDisconnected):
        channels.smtp_client(conn(host="mail", extra_dejson={"disable_ssl": "true",
                                                             "retry_limit": 1}))
    assert opened == [{"host": "mail", "timeout": 30}] * 2  # no port: smtplib's default


def test_the_api_client_from_a_connection():
    api = AirflowApi.from_connection(conn(host="localhost", port=8080, login="admin",
                                          password="pw"))
    assert (api.base_url, api.username, api.password) == ("http://localhost:8080", "admin", "pw")


# --------------------------------------------------------------------- spark


def test_spark_conf_pairs_are_parsed():
    assert parse_conf("spark.a=1, spark.b = x=y\nspark.c=") == {
        "spark.a": "1", "spark.b": "x=y", "spark.c": ""}
    assert parse_conf(None) == {}
    with pytest.raises(ValueError, match="key=value"):
        parse_conf("spark.a")


def test_a_local_envs_jvms_keep_the_engines_options_and_compile_with_c1_only(tmp_path):
    """LocalAirflow's small batches: its FOODTASTER_SPARK_CONF replaces the engine's JVM options
    (JVM_CONF) with the same options plus C1 only, driver and executors; no class-data-sharing
    archive where none was built."""
    from foodtaster.engine.spark import JVM_CONF, JVM_OPTIONS
    from foodtaster_dev.localenv import small_spark_conf

    conf = parse_conf(small_spark_conf(tmp_path / "none.jsa"))
    java_options = [key for key in JVM_CONF if key.endswith(".extraJavaOptions")]
    assert len(java_options) == 2 and set(java_options) <= set(conf)
    for key in java_options:
        assert conf[key].split() == [*JVM_OPTIONS.split(), "-XX:TieredStopAtLevel=1"]


def test_a_local_envs_jvms_map_the_class_data_sharing_archive_once_it_is_built(tmp_path, monkeypatch):
    """The archive is looked for each time a local env's settings are made, not at import: a
    test session or demo that starts before `make cds` built it uses it once it exists. Never
    -Xshare:on, which stops a JVM whose archive is stale."""
    from foodtaster_dev import localenv

    archive = tmp_path / "spark-cds.jsa"
    monkeypatch.setattr(localenv, "CDS_ARCHIVE", archive)
    air = localenv.LocalAirflow(home=tmp_path / "home", lake=str(tmp_path / "lake"))

    def java_options() -> list[list[str]]:
        conf = parse_conf(air.env()["FOODTASTER_SPARK_CONF"])
        return [conf[f"spark.{side}.extraJavaOptions"].split() for side in ("driver", "executor")]

    assert all(not any("Share" in option for option in options) for options in java_options())
    archive.write_bytes(b"an archive")
    for options in java_options():
        assert options[:-1] == localenv.SMALL_JVM_OPTIONS.split()
        assert options[-1] == f"-XX:SharedArchiveFile={archive}"


def test_a_deployments_driver_maps_the_archive_where_one_was_built(tmp_path, monkeypatch):
    """The engine's own spark-submit conf: its driver maps the class-data-sharing archive
    (FOODTASTER_CDS_ARCHIVE, else build/'s) once the file exists, and only then; the executors,
    which may run where it is not, keep the engine's options."""
    from foodtaster.engine.spark import CDS_ARCHIVE_ENV, JVM_OPTIONS
    from foodtaster_airflow.spark_submit import submit_conf

    archive = tmp_path / "spark-cds.jsa"
    monkeypatch.setenv(CDS_ARCHIVE_ENV, str(archive))
    without = submit_conf("python3", None)
    assert without["spark.driver.extraJavaOptions"] == JVM_OPTIONS
    archive.write_bytes(b"an archive")
    conf = submit_conf("python3", None)
    assert conf["spark.driver.extraJavaOptions"].split() == [JVM_OPTIONS, f"-XX:SharedArchiveFile={archive}"]
    assert conf["spark.executor.extraJavaOptions"] == JVM_OPTIONS
    deployment = submit_conf("python3", "spark.driver.extraJavaOptions=-Xss4m")  # a deployment's wins
    assert deployment["spark.driver.extraJavaOptions"] == "-Xss4m"


def test_a_local_env_runs_airflows_own_cli(tmp_path):
    """LocalAirflow runs `airflow` through Airflow's entry point (AIRFLOW_CLI, which freezes the
    GC at exit): the arguments reach it and its output and exit code come back."""
    from importlib.metadata import version

    from foodtaster_dev.localenv import LocalAirflow

    done = LocalAirflow(home=tmp_path / "home", lake=str(tmp_path / "lake")).airflow("version")
    assert done.returncode == 0 and done.stdout.strip() == version("apache-airflow")


def test_the_job_gets_this_interpreter_and_the_deployment_paths(monkeypatch):
    monkeypatch.setenv("FOODTASTER_LAKE", "s3a://lake")
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    env = job_environment()
    assert env["FOODTASTER_LAKE"] == "s3a://lake"
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"]


@pytest.mark.parametrize(("connection", "master"), [
    (None, "local[*]"),
    ('{"conn_type": "spark", "host": "local[2]"}', "local[2]"),
    ('{"conn_type": "spark", "host": "spark://10.0.0.5", "port": 7077}', "spark://10.0.0.5:7077"),
    ("spark://spark-master:7077?deploy-mode=client", "spark://spark-master:7077"),
    ('{"conn_type": "spark", "host": "yarn", "extra": {"queue": "etl"}}', "yarn"),
])
def test_spark_default_picks_the_master_and_local_is_the_default(monkeypatch, connection, master):
    if connection is None:
        monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    else:
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", connection)
    operator = ValidateBatchOperator(task_id="validate", application="job.py", dataset="orders")
    command = operator.spark_hook()._build_spark_submit_command("job.py")
    assert command[command.index("--master") + 1] == master
    assert command[-1] == "--no-publish"
    assert "--dataset" in command and "orders" in command


def test_only_what_a_retry_may_change_is_not_a_refusal():
    from foodtaster.engine.batch.accounting import CountsDoNotAddUp
    from foodtaster.engine.run import BatchWasRedriven
    from foodtaster.registry import RegistryError
    from foodtaster.state.lease import LeaseHeld

    for refused in (BatchWasRedriven("redriven"), LeaseHeld("held"), RegistryError("no contract"),
                    steps.BatchNotLanded("never landed")):
        assert refusal(refused)
    for retried in (CountsDoNotAddUp("lost rows"), steps.PipelineError("no summary"), OSError("disk")):
        assert not refusal(retried)


def test_a_missing_spark_connection_is_local_and_says_so(monkeypatch, caplog):
    import logging

    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    caplog.set_level(logging.INFO, logger="foodtaster_airflow")
    operator = ValidateBatchOperator(task_id="validate", application="job.py", dataset="orders")
    connection = operator.spark_hook().get_connection("spark_default")
    assert (connection.conn_type, connection.host) == ("spark", "local[*]")
    assert "connection spark_default is not defined: running on local[*]" in caplog.text


def test_the_exit_code_is_read_from_the_submit_failure():
    from airflow.sdk.exceptions import AirflowException

    failed = AirflowException("Cannot execute: spark-submit --master local[1] app.py --why "
                              "'Error code is: 9.'. Error code is: 2.\nLast spark-submit output:\nx")
    assert submit_exit_code(failed) == 2
    assert submit_exit_code(AirflowException("No driver id is known")) is None


def test_killing_the_task_kills_the_submission_in_flight():
    operator = ValidateBatchOperator(task_id="validate", application="job.py", dataset="orders")
    operator.on_kill()  # nothing submitted yet: nothing to kill
    killed = []
    operator.submission = SimpleNamespace(on_kill=lambda: killed.append(True))
    operator.on_kill()
    assert killed == [True]


@pytest.mark.parametrize(("dag", "why"), [
    ("scheduled", "foodtaster_orders lands inbox dates; reprocess a landed batch with the DAG "
                  "foodtaster_orders_reprocess"),
    ("reprocess", "batch 20261121 of orders was never landed"),
])
def test_a_batch_id_the_land_task_cannot_reprocess_is_refused_at_once(tmp_path, monkeypatch, dag, why):
    """A batch id in a scheduled run's conf (the API, the CLI), or one never landed, fails the
    land task without retries, noted on the run and alerted."""
    from airflow.sdk.exceptions import AirflowFailException

    from foodtaster_airflow.factory import build_dag, build_reprocess_dag

    monkeypatch.setenv("FOODTASTER_LAKE", str(tmp_path / "lake"))
    notes = []
    monkeypatch.setattr(ledger_step, "note_run", lambda *args: notes.append(args[-1]))
    built = (build_dag if dag == "scheduled" else build_reprocess_dag)(get_dataset("orders"))
    context = {"params": {"batch_id": "20261121"}, "run_id": "manual__1",
               "logical_date": datetime(2026, 11, 22, tzinfo=UTC)}
    with pytest.raises(AirflowFailException, match="^REFUSED: .*" + why):
        built.task_dict["land"].python_callable(**context)
    # Filed under its own run, which landed nothing: batch 20261121 is only named by its conf
    # (another run's batch, which may well have published fine).
    assert notes and notes[0].startswith("REFUSED: run manual__1, nothing landed") and why in notes[0]
    (refused,) = refusals(Lake(str(tmp_path / "lake")), "orders")
    assert (refused.batch_id, refused.run_id, refused.task) == (None, "manual__1", "land")
    assert refused.batch_date == ("2026-11-22" if dag == "scheduled" else None)
    alerts = sorted(path.name for path in (tmp_path / "lake/_state/alerts/orders").iterdir())
    assert alerts == [f"{alert_stem('manual__1')}.html", f"{alert_stem('manual__1')}.json"]
    page = (tmp_path / "lake/_state/alerts/orders" / alerts[0]).read_text()
    assert "orders run manual__1: REFUSED by the land task" in page and "nothing landed" in page


def test_what_dags_test_printed_is_cut_into_each_tasks_attempts():
    """`LocalAirflow.keep_task_logs` files each task's lines where the UI reads them: a task's
    lines run from its start to its end, a retried task's attempts apart, the run's own lines
    (before, between and after the tasks) in none."""
    from foodtaster_dev.localenv import task_sections

    printed = "".join(f"2026-11-28T06:50:0{n}Z [info] {line}\n" for n, line in enumerate([
        "Created dag run", "[DAG TEST] starting task_id=land map_index=-1", "landed 3 files",
        "[DAG TEST] end task task_id=land map_index=-1", "No tasks to run",
        "[DAG TEST] starting task_id=validate map_index=-1", "spark-submit exited 1",
        "[DAG TEST] starting task_id=validate map_index=-1", "batch 20261120: published",
        "[DAG TEST] end task task_id=validate map_index=-1", "[DAG TEST] starting task_id=each map_index=2",
        "mapped"]))
    sections = task_sections(printed)
    assert list(sections) == [("land", -1), ("validate", -1), ("each", 2)]
    (land,) = sections[("land", -1)]
    assert land.count("\n") == 3 and "landed 3 files" in land and "Created dag run" not in land
    first, second = sections[("validate", -1)]
    assert "spark-submit exited 1" in first and "published" not in first and "No tasks" not in first
    assert "batch 20261120: published" in second
    assert second.endswith("end task task_id=validate map_index=-1\n")
    assert sections[("each", 2)][0].endswith("mapped\n")


def test_no_spark_submit_on_path_fails_at_once_saying_what_to_do(monkeypatch, tmp_path):
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    operator = ValidateBatchOperator(task_id="validate", application="job.py", dataset="orders",
                                     env_vars={"PATH": str(tmp_path)})
    with pytest.raises(AirflowFailException, match=f"spark-submit is not on PATH \\({tmp_path}\\): "
                                                   "install pyspark into the environment"):
        operator.check_spark_binary(operator.spark_hook())
    (tmp_path / "spark-submit").write_text("#!/bin/sh\n")
    (tmp_path / "spark-submit").chmod(0o755)
    operator.check_spark_binary(operator.spark_hook())  # there: no failure
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(
        {"conn_type": "spark", "host": "local[*]", "extra": {"spark-binary": "spark3-submit"}}))
    with pytest.raises(AirflowFailException, match="spark3-submit is not on PATH"):  # the connection's
        operator.check_spark_binary(operator.spark_hook())
