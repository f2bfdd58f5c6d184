"""`make airflow` in the foreground, stopped whole: a command in a process group of its own, every
process of which ends when this one is told to stop."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from typing import Any

from foodtaster.registry import PROJECT_ROOT
from foodtaster_dev.localenv import stop_group

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_GRACE_S = 15.0  # after SIGTERM, what is left of the group is killed


def supervise(command: list[str], env: dict[str, str],
              started: Callable[[subprocess.Popen], None] | None = None) -> int:
    """Run `command` in a process group of its own, output on this terminal, until it ends or
    this process is told to stop (Ctrl-C, SIGTERM from `make` or a supervisor, SIGHUP): then the
    whole group stops, every process it started (api-server, scheduler, dag-processor,
    triggerer, the executor's workers, spark-submit), by SIGTERM and, after STOP_GRACE_S, SIGKILL
    (`airflow standalone` alone leaves its components running, and the workers ignore SIGTERM)."""
    process = subprocess.Popen(command, env=env, cwd=PROJECT_ROOT, start_new_session=True)
    asked: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        asked.append(signum)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        if started is not None:  # what is done once it runs (`started` waits for what it needs)
            _quietly(started, process)
        process.wait()
    except KeyboardInterrupt:
        print(f"\nStopping Airflow (signal {signal.Signals(asked[0]).name if asked else 'SIGINT'}): "
              "every process it started ...", flush=True)
    finally:
        for sig in STOP_SIGNALS:  # a second Ctrl-C does not leave the group half stopped
            signal.signal(sig, signal.SIG_IGN)
        stop_group(process, grace=STOP_GRACE_S)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("Airflow stopped.", flush=True)
    return 0 if asked else (process.returncode or 0)


def _quietly(work: Callable[[subprocess.Popen], None], process: subprocess.Popen) -> None:
    try:
        work(process)
    except Exception as err:  # noqa: BLE001 - said, never stops the group
        print(f"after start: {err}", flush=True)
