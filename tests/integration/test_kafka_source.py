"""Landing from a Kafka-protocol broker (Tansu, started for this module and stopped by its pid):
three partitions, keys and headers kept, bytes exact, a limit cutting a partition; kill -9
between poll and landing, between landing and commit and during the commit; a second consumer
joining mid-run; every offset of the topic in exactly one batch, the group committed after the
lake holds it. And the job and the dead-letter topic on a landed batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from support.environment import PROJECT_ROOT
from support.kafka import (  # noqa: F401  (the fixtures kafka_broker and kafka_topic)
    committed,
    connection,
    fresh_topic,
    landed_records,
    tansu_broker,
    topic_messages,
)
from support.lake import batch_rows

from foodtaster.registry import KafkaSource, SourceConfigError, source_from_entry
from foodtaster.sources.kafka import FETCH_BATCH, KafkaSettingsError, SourceUnavailable, land_batch
from foodtaster.state.lake import FAULT_AT_ENV, FAULT_DIR_ENV, Lake, read_json
from foodtaster_dev.kafka_broker import create_topic, free_port, produce

DATE = "2026-11-20"
DATASET = "orders"
MANY = 3 * FETCH_BATCH  # more than one read of the client: a landing is held with partitions unread


def numbered(n: int, poison: dict[int, bytes | None] | None = None) -> list[tuple]:
    """n messages (key, value, headers, partition None: the key decides), some replaced by poison."""
    poison = poison or {}
    return [(b"key-%d" % (i % 11), poison.get(i, b'{"n": %d}' % i), [("trace", b"t-%d" % i)], None)
            for i in range(n)]


def check_every_offset_once(broker, topic: str, lake: Lake, group: str) -> list[dict]:
    """Every message of the topic is in exactly one landed batch, byte for byte, and the group's
    committed offsets are the partitions' ends."""
    produced = {(m.partition(), m.offset()): m.value() for m in topic_messages(broker, topic)}
    records = landed_records(lake, DATASET)
    places = Counter((r["partition"], r["offset"]) for r in records)
    assert [place for place, n in places.items() if n > 1] == [], "landed twice"
    assert set(places) == set(produced), f"lost: {sorted(set(produced) - set(places))[:10]}"
    assert all(r["payload"] == (produced[(r["partition"], r["offset"])] or b"") for r in records)
    ends = Counter(p for p, _ in produced)
    assert committed(broker, group, topic) == {p: ends.get(p, 0) for p in range(3)}
    return records


def test_three_partitions_land_with_keys_headers_and_exact_bytes(kafka_broker, kafka_topic, tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    poison = {3: b"\xff\xfe not utf-8", 7: b"", 9: None, 12: b'{"a": 1}\n{"b": 2}'}
    messages = numbered(40, poison)
    messages[5] = (None, b'{"n": 5}', [("h", b"one"), ("h", b"two"), ("bin", b"\x00\xff")], 2)
    produce(kafka_broker.bootstrap, kafka_topic, messages)
    source = KafkaSource(topic=kafka_topic, group=f"{kafka_topic}-lander")

    result = land_batch(source, lake, DATASET, DATE, connection=connection(kafka_broker))

    records = check_every_offset_once(kafka_broker, kafka_topic, lake, source.group)
    assert result.messages == len(records) == 40 and len({r["partition"] for r in records}) == 3
    by_value = {r["payload"]: r for r in records}
    assert by_value[b"\xff\xfe not utf-8"]["key"] == b"key-3"
    assert by_value[b'{"a": 1}\n{"b": 2}']["headers"] == [{"key": "trace", "value": b"t-12"}]
    assert [r for r in records if r["value_is_null"]][0]["key"] == b"key-9"  # a tombstone: no bytes
    fifth = by_value[b'{"n": 5}']
    assert (fifth["key"], fifth["partition"]) == (None, 2)
    assert [(h["key"], h["value"]) for h in fifth["headers"]] == [("h", b"one"), ("h", b"two"),
                                                                 ("bin", b"\x00\xff")]
    assert all(r["timestamp"] is not None and r["topic"] == kafka_topic for r in records)
    manifest = read_json(f"{result.raw_path}/_manifest.json")
    ranges = {r["partition"]: (r["first"], r["last"]) for r in manifest["source"]["offset_ranges"]}
    assert ranges == {p: (0, sum(1 for r in records if r["partition"] == p) - 1) for p in range(3)}
    assert manifest["files"][0]["source"] == f"kafka://{kafka_topic}"

    again = land_batch(source, lake, DATASET, DATE, batch_id="later", connection=connection(kafka_broker))
    assert again.empty and again.messages == 0  # nothing waits: nothing landed twice


def test_a_batch_limit_cuts_a_partition_and_the_next_batches_take_the_rest(kafka_broker, kafka_topic,
                                                                          tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    produce(kafka_broker.bootstrap, kafka_topic, [(None, b'{"n": %d}' % i, None, i % 3) for i in range(60)])
    source = KafkaSource(topic=kafka_topic, group=f"{kafka_topic}-lander", max_messages=25)

    sizes = [land_batch(source, lake, DATASET, DATE, batch_id=f"b{i}", connection=connection(kafka_broker)
                        ).messages for i in range(4)]

    assert sizes == [25, 25, 10, 0]
    records = check_every_offset_once(kafka_broker, kafka_topic, lake, source.group)
    cut = [p for p in range(3) if len({r["batch"] for r in records if r["partition"] == p}) > 1]
    assert cut, "no partition was cut between two batches"
    for p in range(3):  # each batch holds one run of offsets of a partition: no gap, no overlap
        spans = sorted((min(o), max(o)) for o in _offsets_by_batch(records, p).values())
        assert spans[0][0] == 0 and all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:], strict=False))
    bytes_cut = KafkaSource(topic=kafka_topic, group=f"{kafka_topic}-bytes", max_bytes=50)
    small = land_batch(bytes_cut, lake, "bytes_cut", DATE, connection=connection(kafka_broker))
    assert 1 <= small.messages <= 6  # ~9 bytes a message, at most 50 bytes


def _offsets_by_batch(records: list[dict], partition: int) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for r in records:
        if r["partition"] == partition:
            found.setdefault(r["batch"], []).append(r["offset"])
    return found


def _landing_process(broker, source: KafkaSource, lake: Lake, batch_id: str, fault: str,
                     folder) -> subprocess.Popen:
    script = (
        "from foodtaster.registry import KafkaSource; from foodtaster.sources.kafka import land_batch;"
        "from foodtaster.state.lake import Lake;"
        f"land_batch(KafkaSource(topic={source.topic!r}, group={source.group!r},"
        f" max_messages={source.max_messages}), Lake({lake.root!r}), {DATASET!r}, {DATE!r},"
        f" batch_id={batch_id!r}, connection={connection(broker)!r})"
    )
    env = {**os.environ, FAULT_AT_ENV: fault, FAULT_DIR_ENV: str(folder), "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True)


def _wait_for(marker, process: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert process.poll() is None, f"the landing ended ({process.returncode}) before {marker.name}"
        assert time.monotonic() < deadline, f"the landing never reached {marker.name}"
        time.sleep(0.1)


def _kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.parametrize("fault", ["kafka.polled", "kafka.written", "kafka.landed", "kafka.committing"])
def test_a_landing_killed_loses_nothing_and_lands_nothing_twice(kafka_broker, kafka_topic, tmp_path, fault):
    """kill -9 between poll and landing, between the file and the manifest, between landing and
    commit, and between two partitions' commits: the landing's retry (the same batch) starts
    where the lake ends; every offset lands once."""
    lake = Lake(str(tmp_path / "lake"))
    produce(kafka_broker.bootstrap, kafka_topic, [(None, b'{"n": %d}' % i, None, i % 3) for i in range(45)])
    source = KafkaSource(topic=kafka_topic, group=f"{kafka_topic}-lander", max_messages=1000)
    killed = _landing_process(kafka_broker, source, lake, "killed", fault, tmp_path)
    try:
        _wait_for(tmp_path / f"{fault}.reached", killed)
    finally:
        _kill(killed)
    landed_before = len(landed_records(lake, DATASET))
    assert landed_before == (0 if fault == "kafka.polled" else 45)  # "written": a file, no manifest
    group_before = committed(kafka_broker, source.group, kafka_topic)
    assert sum(o > 0 for o in group_before.values()) == (1 if fault == "kafka.committing" else 0)
    produce(kafka_broker.bootstrap, kafka_topic, [(None, b'{"late": %d}' % i, None, i % 3) for i in range(6)])

    rerun = land_batch(source, lake, DATASET, DATE, batch_id="killed", connection=connection(kafka_broker))

    assert rerun.messages == 51  # the batch holds what it held and what waited since
    assert sum(f["lines"] for f in read_json(f"{rerun.raw_path}/_manifest.json")["files"]) == 51
    check_every_offset_once(kafka_broker, kafka_topic, lake, source.group)


def test_a_second_consumer_joining_mid_run_lands_nothing_twice(kafka_broker, kafka_topic, tmp_path):
    """A landing held mid-read while a second landing of the same group joins: the group splits
    the partitions, the first drops what it read of those it lost, each lands its own."""
    lake = Lake(str(tmp_path / "lake"))
    produce(kafka_broker.bootstrap, kafka_topic, [(None, b'{"n": %d}' % i, None, i % 3) for i in range(MANY)])
    source = KafkaSource(topic=kafka_topic, group=f"{kafka_topic}-lander")
    first = _landing_process(kafka_broker, source, lake, "first", "kafka.reading", tmp_path)
    second: dict = {}
    joiner = threading.Thread(target=lambda: second.update(result=land_batch(
        source, lake, DATASET, DATE, batch_id="second", connection=connection(kafka_broker))))
    try:
        _wait_for(tmp_path / "kafka.reading.reached", first)
        joiner.start()
        # The second member's JoinGroup is in and Tansu's join delay (half the session timeout) is
        # over: the group is rebalancing when the first polls again (docs/decisions/028).
        time.sleep(6.0)
        (tmp_path / "kafka.reading.go").touch()
        assert first.wait(timeout=120) == 0
        joiner.join(timeout=120)
    finally:
        _kill(first)
    assert not joiner.is_alive() and "result" in second
    landed = landed_records(lake, DATASET)
    by_batch = Counter(r["batch"] for r in landed)
    partitions = {b: {r["partition"] for r in landed if r["batch"] == b} for b in by_batch}
    rest = land_batch(source, lake, DATASET, DATE, batch_id="rest", connection=connection(kafka_broker))
    records = check_every_offset_once(kafka_broker, kafka_topic, lake, source.group)
    assert len(records) == MANY and rest.messages == MANY - sum(by_batch.values())
    assert set(by_batch) == {"first", "second"}, by_batch  # both members landed
    assert not partitions["first"] & partitions["second"], partitions  # each its own partitions


def test_an_unreachable_cluster_or_a_missing_topic_fails_and_commits_nothing(kafka_broker, tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    nowhere = KafkaSource(topic="orders", group="g", connect_timeout_seconds=3)
    with pytest.raises(SourceUnavailable, match="cannot be reached|cannot be read"):
        land_batch(nowhere, lake, DATASET, DATE, connection={"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    missing = KafkaSource(topic="no-such-topic", group="g", connect_timeout_seconds=10)
    with pytest.raises(SourceUnavailable, match="no-such-topic"):
        land_batch(missing, lake, DATASET, DATE, connection=connection(kafka_broker))
    assert not (tmp_path / "lake" / "raw").exists()


def test_a_connection_sharing_the_landing_group_or_without_servers_is_refused(tmp_path):
    source = KafkaSource(topic="orders", group="foodtaster-orders")
    lake = Lake(str(tmp_path / "lake"))
    with pytest.raises(KafkaSettingsError, match="group.id 'foodtaster-orders' is the landing's group"):
        land_batch(source, lake, DATASET, DATE, connection={"bootstrap.servers": "127.0.0.1:1",
                                                            "group.id": "foodtaster-orders"})
    with pytest.raises(KafkaSettingsError, match="bootstrap.servers"):
        land_batch(source, lake, DATASET, DATE, connection={})
    with pytest.raises(KafkaSettingsError) as refused:  # a typo in the extra, its secret not echoed
        land_batch(source, lake, DATASET, DATE, connection={"bootstrap.servers": "127.0.0.1:1",
                                                            "sasl.pasword": "hunter2-secret"})
    assert "hunter2-secret" not in str(refused.value)


def test_a_kafka_source_entry_is_checked_by_name():
    entry = {"kind": "kafka", "topic": "orders", "group": "foodtaster-orders"}
    parsed = source_from_entry("orders", entry)
    assert isinstance(parsed, KafkaSource) and parsed.kafka_conn_id == "kafka_default"
    assert parsed.dead_letter_topic is None and not parsed.wake_on_messages
    refused = {
        "unknown keys": {"topics": "orders"},
        "max_messages must be an integer > 0": {"max_messages": "many"},
        "wake_on_messages is true or false": {"wake_on_messages": "yes"},
        "dead_letter_topic 'orders' is the topic read": {"dead_letter_topic": "orders"},
        "topic must be a name": {"topic": "orders topic"},
    }
    for message, change in refused.items():
        with pytest.raises(SourceConfigError, match=message):
            source_from_entry("orders", {**entry, **change})
    with pytest.raises(SourceConfigError, match="missing 1 required positional argument: 'group'"):
        source_from_entry("orders", {"kind": "kafka", "topic": "orders"})


def test_the_job_judges_a_kafka_batch_and_the_dead_letter_topic_holds_each_poison_once(
        spark, kafka_broker, kafka_topic, tmp_path):
    """The Spark job on a landed Kafka batch: lineage in Kafka's words, a non-UTF-8 value
    quarantined by the bytes layer, every message counted. Then its quarantined messages on the
    dead-letter topic, each once with its reasons, also after a crash between producing and
    remembering."""
    import dataclasses

    from foodtaster.engine.batch.job import BatchRun
    from foodtaster.engine.run import run_batch
    from foodtaster.registry import get_dataset
    from foodtaster.sources import dead_letters
    from foodtaster_dev.sample import generate_batch

    generated = generate_batch(tmp_path / "gen", messages=200, seed=5, poison_rate=0.1, files=1,
                               gzip_files=0, max_message_bytes=4096, batch_date=DATE)
    lines = (tmp_path / "gen" / generated.files[0]).read_bytes().splitlines()
    extra = [b"\xc3\x28 broken utf-8", b""]
    produce(kafka_broker.bootstrap, kafka_topic,
            [(b"k%d" % i, line, [("producer", b"checkout")], None) for i, line in enumerate(lines + extra)])
    dlq = f"{kafka_topic}-dlq"
    create_topic(kafka_broker.bootstrap, dlq, partitions=2)
    source = KafkaSource(topic=kafka_topic, group=f"{kafka_topic}-lander", dead_letter_topic=dlq)
    lake = Lake(str(tmp_path / "lake"))
    landed = land_batch(source, lake, DATASET, DATE, batch_id="k1", connection=connection(kafka_broker))
    config = dataclasses.replace(get_dataset("orders"), max_message_bytes=4096, source=source)

    summary = run_batch(spark, BatchRun(config=config, input_path=landed.raw_path, lake=lake,
                                        batch_id="k1", batch_date=DATE, gate=False)).to_json()

    assert summary["messages"] == len(lines) + 2 == landed.messages
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
    assert summary["quarantined"] == generated.counts()["quarantined"] + 2
    rows = {(r["_source_file"], r["_line_number"]): r
            for r in batch_rows(lake, DATASET, "quarantine", "k1").to_pylist()}
    by_place = {(f"kafka://{kafka_topic}/{m['partition']}", m["offset"]): m
                for m in landed_records(lake, DATASET)}
    assert all(bytes(r["_raw"]) == by_place[place]["payload"] for place, r in rows.items())
    not_utf8 = next(r for place, r in rows.items() if by_place[place]["payload"] == extra[0])
    assert "line.not_utf8" in {reason["rule"] for reason in not_utf8["reasons"]}
    valid = batch_rows(lake, DATASET, "valid", "k1").column("_source_file").to_pylist()  # published
    assert len(valid) == summary["valid"] and all(f.startswith(f"kafka://{kafka_topic}/") for f in valid)

    sent = dead_letters.send(source, lake, DATASET, DATE, "k1", connection(kafka_broker))
    assert (sent.quarantined, sent.sent, sent.sent_before) == (summary["quarantined"],) * 2 + (0,)
    letters = topic_messages(kafka_broker, dlq, partitions=2)
    assert len(letters) == summary["quarantined"]
    for letter in letters:
        context = dict(letter.headers())
        place = (f"kafka://{kafka_topic}/{context['__foodtaster.errors.partition'].decode()}",
                 int(context["__foodtaster.errors.offset"]))
        row = rows[place]
        assert letter.value() == by_place[place]["payload"] and letter.key() == by_place[place]["key"]
        assert context["producer"] == b"checkout"  # the original headers, then the context
        assert context["__foodtaster.errors.batch.id"] == b"k1"
        assert context["__foodtaster.errors.rule"].decode() == row["reasons"][0]["rule"]
        import json
        assert [r["rule"] for r in json.loads(context["__foodtaster.errors.reasons"])] == \
            [reason["rule"] for reason in row["reasons"]]

    again = dead_letters.send(source, lake, DATASET, DATE, "k1", connection(kafka_broker))
    assert (again.sent, again.sent_before) == (0, summary["quarantined"])
    log = tmp_path / "lake" / "_state" / "dead_letters" / DATASET / "events"
    (sent_event,) = [p for p in log.glob("*.json") if '"type": "sent"' in p.read_text()]
    sent_event.unlink()  # as if the run died after producing, before remembering it
    after_crash = dead_letters.send(source, lake, DATASET, DATE, "k1", connection(kafka_broker))
    assert after_crash.sent == 0 and after_crash.sent_before == summary["quarantined"]
    assert len(topic_messages(kafka_broker, dlq, partitions=2)) == summary["quarantined"]
