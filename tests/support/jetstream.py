"""The real NATS JetStream the tests use (127.0.0.1:4222, or FOODTASTER_TEST_NATS): a stream of
its own for each test, publishing, and the durable consumer's state."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid

import pytest

from support.environment import need

NATS_URL = os.environ.get("FOODTASTER_TEST_NATS", "nats://127.0.0.1:4222")


def _reachable(url: str) -> bool:
    host, port = url.removeprefix("nats://").split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(name="stream")
def nats_stream():
    """A stream of its own for each test, deleted afterwards."""
    need(_reachable(NATS_URL), f"NATS JetStream at {NATS_URL} is not reachable")
    name = f"FT_{uuid.uuid4().hex[:10].upper()}"
    subject = f"ft.{name.lower()}"
    _run(_admin(lambda js: js.add_stream(name=name, subjects=[f"{subject}.>"])))
    yield name, subject
    _run(_admin(lambda js: js.delete_stream(name)))


def _run(coroutine):
    return asyncio.run(coroutine)


async def _admin(action):
    import nats

    client = await nats.connect(NATS_URL)
    try:
        return await action(client.jetstream())
    finally:
        await client.close()


def publish(subject: str, payloads: list[bytes], headers: dict[str, str] | None = None) -> list[int]:
    async def send(js):
        return [(await js.publish(f"{subject}.orders", p, headers=headers)).seq for p in payloads]

    return _run(_admin(send))


def consumer_state(stream: str, durable: str) -> tuple[int, int]:
    """(messages not yet delivered, delivered but not acknowledged)."""
    info = _run(_admin(lambda js: js.consumer_info(stream, durable)))
    return info.num_pending, info.num_ack_pending


