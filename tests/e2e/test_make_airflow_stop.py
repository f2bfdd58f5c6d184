"""`make airflow` stops whole: SIGTERM to make (as a supervisor, or a closed terminal's shell,
sends it) ends every process it started, Airflow's components and their workers included."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from support.environment import PROJECT_ROOT, need

from foodtaster_dev.localenv import free_port, wait_for_http

# each component's command line (the api-server names itself `airflow api_server -- host:...`)
COMPONENTS = ("api_server", "airflow scheduler", "airflow dag-processor", "airflow triggerer")


def processes() -> dict[int, tuple[int, int, str]]:
    """Every process of the machine: pid -> (parent pid, session id, command line)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":  # a zombie has ended; its parent has not read its status yet
            continue
        found[int(entry.name)] = (int(fields[1]), int(fields[3]), command)
    return found


def family(root: int) -> dict[int, tuple[int, int, str]]:
    """`root` and its descendants, and every process of their sessions: what `make airflow`
    started (Airflow's components run in a session of their own)."""
    table = processes()
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, (parent, _sid, _cmd) in table.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    sessions = {table[pid][1] for pid in tree if pid in table}
    return {pid: row for pid, row in table.items() if pid in tree or row[1] in sessions}


def left_of(started: dict[int, tuple[int, int, str]]) -> dict[int, str]:
    """What is still running of `started`, or of its sessions."""
    sessions = {sid for _parent, sid, _cmd in started.values()}
    return {pid: cmd for pid, (_parent, sid, cmd) in processes().items() if pid in started or sid in sessions}


def test_sigterm_to_make_airflow_ends_every_process_it_started(tmp_path):
    need(shutil.which("make") is not None, "make is not installed")
    need((PROJECT_ROOT / "build" / "foodtaster-jvm.jar").exists(), "no jar: run make jar")
    port, log = free_port(), tmp_path / "make-airflow.log"
    env = {**os.environ, "FOODTASTER_AIRFLOW_HOME": str(tmp_path / "home"), "AIRFLOW_PORT": str(port),
           "FOODTASTER_AIRFLOW_DB": "sqlite", "FOODTASTER_LAKE": str(tmp_path / "lake")}
    with open(log, "wb") as sink:
        # -o: the class-data-sharing archive is an optimisation this test needs not build
        make = subprocess.Popen(["make", "-o", "build/spark-cds.jsa", "airflow"], cwd=PROJECT_ROOT,
                                env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    started: dict[int, tuple[int, int, str]] = {}
    try:
        wait_for_http(f"http://127.0.0.1:{port}/api/v2/monitor/health", timeout=300, process=make, log=log)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:  # every component up, each with the children it starts
            started = family(make.pid)
            if all(any(name in cmd for _p, _s, cmd in started.values()) for name in COMPONENTS):
                break
            time.sleep(2)
        commands = [cmd for _p, _s, cmd in started.values()]
        assert all(any(name in cmd for cmd in commands) for name in COMPONENTS), commands
        make.send_signal(signal.SIGTERM)
        make.wait(timeout=90)
        deadline = time.monotonic() + 30
        while (left := left_of(started)) and time.monotonic() < deadline:
            time.sleep(1)
        assert not left, f"left running after SIGTERM: {left}\n{log.read_text()[-2000:]}"
        assert "Airflow stopped." in log.read_text()
    finally:
        for pid in left_of(started):  # only what this test started
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
