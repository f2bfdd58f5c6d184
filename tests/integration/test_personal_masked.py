"""Personal data masked wherever a person reads (docs/decisions/023): one real batch with planted
personal values (an email, a name, a phone number inside an array element) in messages that fail
for personal and for other reasons, that pass, and that are no JSON at all; every surface a
person reads is grepped for every planted value: the summary, the alert in every channel (email
over loopback SMTP, Slack over a loopback webhook, the file in the lake), `foodtaster quarantine
show`, the logs and the gate's Data Docs. The quarantine still holds the exact bytes."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.frames import batch_frame
from support.servers import SmtpSink, WebhookSink

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.ops import cli
from foodtaster.ops.alerts import build_batch_alert
from foodtaster.policy import Facts, decide
from foodtaster.privacy import KEY_ENV
from foodtaster.registry import load_registry
from foodtaster.sources.inbox import land_batch
from foodtaster.state.lake import Lake
from foodtaster.state.tables import QUARANTINE
from foodtaster_airflow import channels

DAY, BATCH, DATASET = "2026-11-20", "people-1", "people"
EMAIL, NAME, PHONE = "zelda.quartermaine@planted.example", "Zelda Quartermaine", "+1 415 555 0199"
PLANTED = {
    "email": EMAIL, "name": NAME, "phone": PHONE,
    "bad email": "agnes.hiddenfield@@planted", "long name": "Ignatius " + "Plantwell" * 8,
    "long phone": "+1 (202) 555-0147 x9", "email in a list": "listed.person@planted.example",
    "not json": "Ophelia Notjson", "not json email": "ophelia@planted.example",
    "not utf-8": "Bartholomew Badbytes", "array": "Cornelius Arrayman",
}


def message(n: int, name: str = NAME, email: object = EMAIL, phone: str = PHONE, qty: int = 1) -> bytes:
    lines = [{"recipient": "Front desk", "qty": 1}, {"recipient": phone, "qty": qty}]
    return json.dumps({"id": f"p-{n}", "name": name, "contact": {"email": email}, "lines": lines}).encode()


LINES = [
    message(1), message(2), message(3),                        # valid: the gate sees them
    message(4, qty=0),                                         # fails a rule on no personal field
    message(5, email=PLANTED["bad email"]),                    # fails a rule on a personal field
    message(6, name=PLANTED["long name"], phone=PLANTED["long phone"], qty=0),  # personal and not
    message(7, email=[PLANTED["email in a list"]]),            # a personal field of the wrong type
    b"{'name': 'Ophelia Notjson', 'email': 'ophelia@planted.example'}",  # no JSON: no byte shown
    b'{"name": "Bartholomew Badbytes\xff"}',                   # not UTF-8
    b'["Cornelius Arrayman"]',                                 # JSON, but no object
]
SUITE = {"name": "people", "expectations": [
    {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 1}},
    {"type": "expect_column_value_lengths_to_be_between", "kwargs": {"column": "name", "max_value": 5}},
    {"type": "expect_column_values_to_not_match_regex", "kwargs": {"column": "contact.email",
                                                                   "regex": "planted"}},
    *({"type": f"expect_column_{what}_to_be_in_set", "kwargs": {"column": "name", "value_set": ["nobody"]}}
      for what in ("distinct_values", "most_common_value")),
    {"type": "expect_column_values_to_match_regex", "kwargs": {"column": "id", "regex": "^p-"}},
]}


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture(scope="module")
def tasted(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("masked")
    (root / "people.json").write_text(json.dumps(SUITE))
    (root / "pipeline.yaml").write_text(textwrap.dedent(f"""
        datasets:
          people:
            contract: support.contracts:People
            expectation_suite: {root / "people.json"}
            alert_rate: 0.01
            hold_rate: 0.99
            personal: ["lines[].recipient"]
            alerts:
              email_to: [oncall@example.com]
    """))
    saved = {k: os.environ.get(k) for k in ("FOODTASTER_REGISTRY", KEY_ENV)}
    os.environ["FOODTASTER_REGISTRY"] = str(root / "pipeline.yaml")
    os.environ.pop(KEY_ENV, None)  # the key the lake keeps
    lake = Lake(str(root / "lake"))
    inbox = Path(lake.inbox(DATASET, DAY))
    inbox.mkdir(parents=True)
    (inbox / "people.jsonl").write_bytes(b"\n".join(LINES) + b"\n")
    config = load_registry()[DATASET]
    kept = _Kept()
    # Airflow's logging set-up, run when the alert looks its connections up, replaces the root
    # logger's handlers: the kept lines are taken where they are logged, and from the root too.
    loggers = [logging.getLogger(name) for name in ("", "foodtaster", "foodtaster_airflow", "airflow")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(kept)
        logger.setLevel(logging.INFO)
    try:
        landed = land_batch(lake, DATASET, DAY, batch_id=BATCH)
        summary = run_batch(spark, BatchRun(config=config, input_path=landed.raw_path, lake=lake,
                                            batch_id=BATCH, batch_date=DAY, publish=True)).to_json()
        alert = build_batch_alert(summary, decide(Facts.of_summary(summary), config), config, {}, lake=lake)
        with SmtpSink() as smtp, WebhookSink() as slack, contextlib.ExitStack() as stack:
            stack.callback(os.environ.pop, "AIRFLOW_CONN_SMTP_DEFAULT", None)
            stack.callback(os.environ.pop, "AIRFLOW_CONN_SLACK_DEFAULT", None)
            os.environ["AIRFLOW_CONN_SMTP_DEFAULT"] = json.dumps({
                "conn_type": "smtp", "host": smtp.host, "port": smtp.port,
                "extra": {"from_email": "foodtaster@example.com", "disable_ssl": True, "disable_tls": True,
                          "timeout": 30, "retry_limit": 0}})
            os.environ["AIRFLOW_CONN_SLACK_DEFAULT"] = json.dumps({"conn_type": "slackwebhook",
                                                                   "password": slack.url})
            delivery = channels.deliver(alert, config, lake)
        cli_out = {}
        for name, extra in (("table", []), ("json", ["--json"]), ("raw", ["--raw"])):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert cli.main(["quarantine", "show", "--dataset", DATASET, "--batch", BATCH,
                                 "--lake", lake.root, *extra]) == 0
            cli_out[name] = out.getvalue()
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(kept)
            logger.setLevel(level)
        for key, value in saved.items():
            os.environ.pop(key, None)
            if value is not None:
                os.environ[key] = value
    quarantine = batch_frame(spark, lake, DATASET, QUARANTINE, BATCH)
    return {
        "lake": lake, "registry": root / "pipeline.yaml", "inbox": inbox / "people.jsonl",
        "summary": summary, "delivery": delivery, "cli": cli_out, "logs": "\n".join(kept.lines),
        "email": [m.as_string() + "".join(p.get_content() for p in m.walk()
                                          if p.get_content_maintype() == "text") for m in smtp.messages],
        "slack": [body.decode("utf-8") for _, _, body in slack.requests],
        "quarantine": [r.asDict(recursive=True) for r in quarantine.collect()],
        "docs": {p: p.read_text(encoding="utf-8", errors="replace")
                 for p in Path(lake.report(DATASET, BATCH), "data_docs").rglob("*") if p.is_file()},
    }


def _never_shown(text: str, where: str) -> None:
    assert text
    for what, value in PLANTED.items():
        # a JSON text escapes nothing in these values; an HTML page may escape `@`, `+`: check both
        assert value not in text and json.dumps(value)[1:-1] not in text, f"{what} in {where}"


def test_nothing_is_lost_and_the_quarantine_keeps_the_exact_bytes(tasted):
    summary = tasted["summary"]
    assert summary["messages"] == len(LINES) == summary["valid"] + summary["quarantined"]
    assert (summary["valid"], summary["quarantined"]) == (3, 7)
    kept = {r["_line_number"]: bytes(r["_raw"]) for r in tasted["quarantine"]}
    assert kept == {n: LINES[n - 1] for n in range(4, 11)}


def test_the_reasons_name_their_rules_and_mask_their_values(tasted):
    by_line = {r["_line_number"]: r["reasons"] for r in tasted["quarantine"]}
    rules = {n: {r["rule"] for r in reasons} for n, reasons in by_line.items()}
    assert "lines[].qty.greater_than_or_equal_to(1)" in rules[4]
    assert any(r.startswith("contact.email.str_matches") for r in rules[5])
    assert {"name.str_length(min_value=1,max_value=60)", "lines[].qty.greater_than_or_equal_to(1)",
            "lines[].recipient.str_length(min_value=3,max_value=16)"} <= rules[6]
    [email] = [r for r in by_line[5] if r["column"] == "contact.email"]
    assert email["value"].startswith("‹personal: text, 26 chars, #")
    assert email["message"] == f"contact.email: value {email['value']} fails {email['rule']}"
    [qty] = [r for r in by_line[6] if r["column"] == "lines[1].qty"]
    assert qty["value"] == "0" and "must be >= 1" in qty["message"]  # not personal: as it was
    for n in (8, 9, 10):
        assert all(r["value"] is None or r["value"].startswith("‹not shown: ") for r in by_line[n])
    _never_shown(json.dumps(by_line, ensure_ascii=False), "the reasons")


def test_the_summary_samples_are_masked(tasted):
    samples = tasted["summary"]["samples"]
    assert len(samples) == 5
    first = json.loads(samples[0]["raw"])
    assert first["id"] == "p-4" and first["lines"][0] == {"recipient": "‹personal: text, 10 chars, #"
                                                           + first["lines"][0]["recipient"][-7:], "qty": 1}
    assert first["contact"]["email"].startswith("‹personal: email, 34 chars, #")
    _never_shown(json.dumps(tasted["summary"], ensure_ascii=False), "summary.json")


def test_no_alert_channel_shows_a_personal_value(tasted):
    delivery = tasted["delivery"]
    assert delivery.email == ["oncall@example.com"] and delivery.slack
    assert len(tasted["email"]) == 1 and len(tasted["slack"]) == 1
    assert "p-4" in tasted["email"][0] and "p-4" in tasted["slack"][0]  # the samples are there
    for n, mail in enumerate(tasted["email"]):
        _never_shown(mail, f"email {n}")
    for n, post in enumerate(tasted["slack"]):
        _never_shown(post, f"slack post {n}")
    files = list(Path(delivery.file).parent.iterdir())
    assert len(files) >= 2
    for path in files:
        _never_shown(path.read_text(encoding="utf-8"), str(path))


def test_quarantine_show_masks_and_only_raw_shows_the_bytes(tasted):
    table, lines = tasted["cli"]["table"], tasted["cli"]["json"]
    assert "p-4" in table and "‹not shown: " in table and "‹personal: " in table
    _never_shown(table, "quarantine show")
    _never_shown(lines, "quarantine show --json")
    assert "raw_base64" not in lines
    assert NAME in tasted["cli"]["raw"]  # the exact bytes, for one allowed to read them


def test_contract_check_masks_the_reasons_it_prints(tasted):
    """`foodtaster contract check` prints the reasons of a file's lines: masked as the job's."""
    tests = str(Path(__file__).parents[1])  # support.contracts: the test registry's contract
    env = {**os.environ, "FOODTASTER_REGISTRY": str(tasted["registry"]),
           "FOODTASTER_LAKE": tasted["lake"].root,
           "PYTHONPATH": os.pathsep.join(filter(None, (tests, os.environ.get("PYTHONPATH"))))}
    env.pop(KEY_ENV, None)
    command = [sys.executable, "-m", "foodtaster", "contract", "check", DATASET, str(tasted["inbox"])]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"{len(LINES)} judged, 3 ok" in done.stdout and "‹personal: " in done.stdout
    assert (f"personal values masked with the mask key of the lake at {tasted['lake'].root} "
            "(_state/mask_key/)") in done.stdout  # the job's key: the same masks
    _never_shown(done.stdout, "contract check")


def test_the_logs_show_no_personal_value(tasted):
    assert "event=validated" in tasted["logs"] and "alert emailed" in tasted["logs"]
    _never_shown(tasted["logs"], "the logs")


def test_the_gate_data_docs_show_no_personal_value(tasted):
    gate = tasted["summary"]["gate"]
    assert not gate["passed"]
    assert {f["expectation"] for f in gate["failed"]} == {
        "expect_column_value_lengths_to_be_between", "expect_column_values_to_not_match_regex",
        "expect_column_distinct_values_to_be_in_set", "expect_column_most_common_value_to_be_in_set"}
    [common] = [f for f in gate["failed"] if "most_common" in f["expectation"]]  # observes the values
    assert common["observed"] and all(v.startswith("‹personal: ") for v in common["observed"])
    pages = tasted["docs"]
    assert any(p.suffix == ".html" and "validations" in p.parts for p in pages)
    assert any("‹personal: " in text for text in pages.values())  # GX rendered the masks
    for path, text in pages.items():
        _never_shown(text, str(path))


def test_the_spark_masks_are_the_python_ones(spark):
    """`engine/judging/masking.py` says what `Masker` says: which exact paths hold something personal
    (quoted keys included), and the same mask of a string (the keyed hash from two `sha2`s)."""
    from pyspark.sql import functions as F

    from foodtaster.engine.judging.masking import holding_regex, mask_column
    from foodtaster.privacy import Masker

    masker = Masker.of(["contact.email", 'meta["a.b"].who', "lines[].recipient", "card"], b"a key")
    paths = ["contact.email", "contact", "contact.id", 'meta["a.b"].who', 'meta["a.b"]', "meta.a", "meta",
             "lines[12].recipient", "lines[3]", "lines", "lines[3].qty", "card.number", "cards", "name"]
    values = [EMAIL, NAME, PHONE, "12345", "Ünïcödé ☃", ""]
    rows = spark.createDataFrame([(p, v) for p in paths for v in values[:1]] + [("x", v) for v in values],
                                 "path string, value string")
    got = rows.select("path", "value", F.col("path").rlike(holding_regex(masker)).alias("holds"),
                      mask_column(F.col("value"), masker).alias("mask")).collect()
    assert {r["path"]: r["holds"] for r in got} == {p: masker.holds_personal(p) for p in [*paths, "x"]}
    assert {r["value"]: r["mask"] for r in got} == {v: masker.mask(v) for v in values}
