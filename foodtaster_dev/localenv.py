"""A self-contained local Airflow for `make demo`, `make airflow` and the end-to-end tests.

Everything lives in one folder (AIRFLOW_HOME: config, SQLite DB unless a database URL
is given, logs, the simple auth manager's password file); nothing is read from or
written to ~/airflow. Servers run in their own process group, so stopping them stops
every child (api-server workers, scheduler, dag-processor, triggerer, spark-submit).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foodtaster.engine.spark import DEFAULT_CDS_ARCHIVE, JVM_OPTIONS, with_cds
from foodtaster.registry import PROJECT_ROOT

VENV_BIN = Path(sys.executable).parent
ADMIN_USER = "admin"
# The embedded default's users, one a role (name: role); each one's password is its name, the
# admin's `LocalAirflow.password`. Raw payloads: op and admin (foodtaster_airflow.raw_payloads).
ROLE_USERS = {ADMIN_USER: "admin", "op": "op", "viewer": "viewer"}
LOCAL_SPARK = {"conn_type": "spark", "host": "local[2]"}
DB_CACHE_ENV = "FOODTASTER_AIRFLOW_DB_CACHE"  # a folder for migrated SQLite DBs, one an Airflow version
# The JIT of a local env's JVMs: a few hundred rows a batch, where C2's compiling costs more
# than it gives back, so C1 only. Not for a real deployment, whose batches of millions of rows
# need C2: the engine's JVM_OPTIONS stay
# (docs/decisions/009-short-jvms-class-data-sharing-and-c1.md).
SMALL_JVM_OPTIONS = f"{JVM_OPTIONS} -XX:TieredStopAtLevel=1"
# A class-data-sharing archive of the classes a small validate job loads (`make cds`, from
# scripts/cds_archive.py): a JVM maps 16,300 of the 24,400 classes it loads (most others are
# made at run time: lambdas, generated code) parsed and verified instead of reading them from
# Spark's jars, which shortens every short job's start
# (docs/decisions/009-short-jvms-class-data-sharing-and-c1.md). Only when it exists: `make demo`,
# `make airflow` and `make test` build it first, a plain checkout has none. A stale one
# (Spark's jars changed since) is not used: the JVM says so in one warning line.
CDS_ARCHIVE = DEFAULT_CDS_ARCHIVE


def small_spark_conf(archive: Path | None = CDS_ARCHIVE, jvm_options: str = SMALL_JVM_OPTIONS) -> str:
    """A local env's FOODTASTER_SPARK_CONF: `jvm_options`, plus the class-data-sharing archive
    when `archive` is a file, on the driver and executors."""
    jvm_options = with_cds(jvm_options, archive)
    return ("spark.sql.shuffle.partitions=2,spark.ui.enabled=false,"
            "spark.ui.showConsoleProgress=false,"
            f"spark.driver.extraJavaOptions={jvm_options},"
            f"spark.executor.extraJavaOptions={jvm_options}")


# The `airflow` CLI as a local env runs it: Airflow's own entry point, with the garbage collector
# frozen at exit. The interpreter's teardown otherwise walks Airflow's whole heap in full
# collections after every command (docs/decisions/009-short-jvms-class-data-sharing-and-c1.md).
# Registered before Airflow loads, it runs after Airflow's own exit handlers. -P: sys.path as
# the `airflow` script has it (no working directory in front).
AIRFLOW_CLI = ("import atexit, gc, sys; atexit.register(gc.freeze); sys.argv[0] = 'airflow'; "
               "from airflow.__main__ import main; sys.exit(main())")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def connection_value(value: str | dict[str, Any]) -> str:
    """An AIRFLOW_CONN_* value: a URI as is, a dict as Airflow's JSON form."""
    return value if isinstance(value, str) else json.dumps(value)


@dataclass
class LocalAirflow:
    home: Path
    lake: str
    registry: Path = PROJECT_ROOT / "pipeline.yaml"
    db_url: str | None = None  # default: SQLite in home
    api_port: int = 8080
    password: str = "admin"
    connections: dict[str, str | dict[str, Any]] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home = Path(self.home).resolve()
        self.home.mkdir(parents=True, exist_ok=True)
        secret_file = self.home / "jwt_secret"
        if not secret_file.exists():
            secret_file.write_text(secrets.token_hex(32))
        passwords = self.home / "passwords.json"
        passwords.write_text(json.dumps({user: self.password if user == ADMIN_USER else user
                                         for user in ROLE_USERS}) + "\n")

    @property
    def base_url(self) -> str:
        return f"http://localhost:{self.api_port}"

    def env(self) -> dict[str, str]:
        conns = {"spark_default": LOCAL_SPARK, **self.connections}
        env = {
            **os.environ,
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT_ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base_url}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{user}:{role}"
                                                                 for user, role in ROLE_USERS.items()),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.home / "passwords.json"),
            "AIRFLOW__API__PORT": str(self.api_port),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__BASE_URL": self.base_url,
            "AIRFLOW__API_AUTH__JWT_SECRET": (self.home / "jwt_secret").read_text().strip(),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.db_url
            or f"sqlite:///{self.home / 'airflow.db'}",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.task_logs),
            "PYTHONWARNINGS": "ignore::UserWarning",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "FOODTASTER_LAKE": str(self.lake),
            "FOODTASTER_REGISTRY": str(self.registry),
            "FOODTASTER_SPARK_CONF": small_spark_conf(CDS_ARCHIVE),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            # the checkout in every Airflow process (started with -P): the installed distribution
            # leaves out foodtaster_dev, whose contracts the demos and tests point datasets at
            "PYTHONPATH": os.pathsep.join(filter(None, (str(PROJECT_ROOT),
                                                        os.environ.get("PYTHONPATH")))),
            "AIRFLOW_CONN_AIRFLOW_API": f"http://{ADMIN_USER}:{self.password}@localhost:"
            f"{self.api_port}",
            **{f"AIRFLOW_CONN_{conn_id.upper()}": connection_value(value)
               for conn_id, value in conns.items()},
            **self.extra_env,
        }
        env.pop("AIRFLOW_CONFIG", None)
        return env

    def airflow(self, *args: str, timeout: float = 600, check: bool = True,
                log: Path | None = None) -> subprocess.CompletedProcess:
        """Run an `airflow` CLI command in this home; its output goes to `log` if given."""
        command = [sys.executable, "-P", "-c", AIRFLOW_CLI, *args]
        if log is None:
            done = subprocess.run(command, env=self.env(), capture_output=True, text=True,
                                  timeout=timeout, cwd=PROJECT_ROOT)
        else:
            with open(log, "a") as sink:
                done = subprocess.run(command, env=self.env(), stdout=sink,
                                      stderr=subprocess.STDOUT, text=True, timeout=timeout,
                                      cwd=PROJECT_ROOT)
        if check and done.returncode != 0:
            where = f"see {log}" if log else (done.stderr or done.stdout)[-3000:]
            raise RuntimeError(f"airflow {' '.join(args)} exited {done.returncode}: {where}")
        return done

    def migrate(self) -> None:
        """`airflow db migrate`; a new SQLite home copies the migrated DB of
        $FOODTASTER_AIRFLOW_DB_CACHE instead, when that is set (the tests set it: one
        migration a session rather than one a module)."""
        cache, database = os.environ.get(DB_CACHE_ENV), self.home / "airflow.db"
        if self.db_url is not None or not cache or database.exists():
            self.airflow("db", "migrate", timeout=600)
            return
        shutil.copyfile(migrated_sqlite(Path(cache)), database)

    def dags_test(self, dag_id: str, date: str, conf: dict[str, Any] | None = None,
                  log: Path | None = None) -> dict[str, Any]:
        """`airflow dags test`, then the run's real state and its tasks' states from the
        metadata DB. The command exits 1 when the run failed, which a held batch's run does
        (docs/decisions/017): only a run it never made is an error here."""
        args = ["dags", "test", dag_id, date]
        if conf:
            args += ["-c", json.dumps(conf)]
        before = log.stat().st_size if log is not None and log.exists() else 0
        done = self.airflow(*args, timeout=900, log=log, check=False)
        try:
            run = self.run_of(dag_id, date)
        except RuntimeError as err:
            run, why = None, str(err)
        if run is not None:
            printed = (log.read_bytes()[before:].decode("utf-8", errors="replace") if log is not None
                       else (done.stdout or "") + (done.stderr or ""))
            self.keep_task_logs(dag_id, run["run_id"], printed)
        if run is not None and (done.returncode == 0 or run["state"] == "failed"):
            self.started_when_it_ran(dag_id, run["run_id"])
            return run
        where = f"see {log}" if log else (done.stderr or done.stdout)[-3000:]
        state = f"its run is {run['state']}" if run is not None else why
        raise RuntimeError(f"airflow {' '.join(args)} exited {done.returncode} ({state}): {where}")

    def run_of(self, dag_id: str, date: str) -> dict[str, Any]:
        """The latest run of `dag_id` on `date` (as `airflow dags list-runs` shows it) with
        its tasks' states, read from the metadata DB itself: an `airflow` CLI process spends
        tens of seconds importing Airflow for each of these two reads."""
        runs = self.query("SELECT run_id, state, logical_date, start_date, end_date FROM dag_run"
                          " WHERE dag_id = :dag_id", dag_id=dag_id)
        mine = [run for run in runs if str(run["logical_date"] or "").startswith(date)]
        if not mine:
            raise RuntimeError(f"no run of {dag_id} for {date}: {runs}")
        latest = max(mine, key=lambda r: str(r["start_date"] or ""))
        run = {"dag_id": dag_id, **{key: "" if value is None else str(value)
                                    for key, value in latest.items()}}
        states = self.query("SELECT task_id, state FROM task_instance WHERE dag_id = :dag_id"
                            " AND run_id = :run_id", dag_id=dag_id, run_id=run["run_id"])
        run["tasks"] = {ti["task_id"]: ti["state"] or "" for ti in states}
        return run

    @property
    def task_logs(self) -> Path:
        """Where Airflow's log reader finds task logs (`[logging] base_log_folder`)."""
        return self.home / "logs"

    def keep_task_logs(self, dag_id: str, run_id: str, printed: str) -> None:
        """`airflow dags test` runs each task in its own process and prints its log there, into
        no file: the UI said "Log file not found on worker" for every task of the demo's runs.
        Each task's lines of what it printed go where the UI reads them, as each attempt's file
        (`[logging] log_filename_template`'s default layout)."""
        tries = {(ti["task_id"], int(ti["map_index"])): int(ti["try_number"] or 1) for ti in self.query(
            "SELECT task_id, map_index, try_number FROM task_instance WHERE dag_id = :dag_id"
            " AND run_id = :run_id", dag_id=dag_id, run_id=run_id)}
        sections = task_sections(printed)
        for (task_id, map_index), texts in sections.items():
            first = max(1, tries.get((task_id, map_index), len(texts)) - len(texts) + 1)
            folder = (self.task_logs / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
                      / (f"map_index={map_index}" if map_index >= 0 else ""))
            folder.mkdir(parents=True, exist_ok=True)
            for attempt, text in enumerate(texts, first):
                (folder / f"attempt={attempt}.log").write_text(text)

    def started_when_it_ran(self, dag_id: str, run_id: str) -> None:
        """`airflow dags test` records its run as started at its logical date (Airflow's
        `dag.test()`: `start_date=logical_date`): the demo's run of 2026-11-20 showed a duration of
        days in the UI, which set the scale of the grid and the chart. The run's start becomes its
        first task's start, when it really began."""
        from sqlalchemy import create_engine, text

        engine = create_engine(self.env()["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
        first = ("SELECT MIN(ti.start_date) FROM task_instance ti"
                 " WHERE ti.dag_id = dag_run.dag_id AND ti.run_id = dag_run.run_id")
        try:
            with engine.begin() as conn:
                conn.execute(text(f"UPDATE dag_run SET start_date = ({first}) WHERE dag_id = :dag_id"
                                  f" AND run_id = :run_id AND ({first}) IS NOT NULL"),
                             {"dag_id": dag_id, "run_id": run_id})
        finally:
            engine.dispose()

    def query(self, sql: str, **params: Any) -> list[dict[str, Any]]:
        """The rows of one read-only SQL query on this home's metadata DB (SQLite or not)."""
        from sqlalchemy import create_engine, text

        url = self.env()["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
        engine = create_engine(url)
        try:
            with engine.connect() as conn:
                return [dict(row) for row in conn.execute(text(sql), params).mappings()]
        finally:
            engine.dispose()

    def start_standalone(self, log: Path) -> subprocess.Popen:
        """`airflow standalone` (api-server, scheduler, dag-processor, triggerer) in its own
        process group; stop it with `stop_group`."""
        return start_group([str(VENV_BIN / "airflow"), "standalone"], self.env(), log)


def migrated_sqlite(cache: Path) -> Path:
    """A freshly migrated SQLite metadata DB of the installed Airflow in `cache`, migrated
    (in a home of its own, then moved in whole) the first time it is asked for."""
    from importlib.metadata import version

    cache.mkdir(parents=True, exist_ok=True)
    done = cache / f"airflow-{version('apache-airflow')}.db"
    if not done.exists():
        builder = LocalAirflow(home=cache / f"migrating-{os.getpid()}", lake=str(cache / "no-lake"))
        builder.airflow("db", "migrate", timeout=600)
        os.replace(builder.home / "airflow.db", done)
        shutil.rmtree(builder.home, ignore_errors=True)
    return done


def postgres_settings() -> dict[str, Any]:
    """Where a local PostgreSQL is: FOODTASTER_PG{HOST,PORT,USER}, default 127.0.0.1:5432 postgres."""
    return {"host": os.environ.get("FOODTASTER_PGHOST", "127.0.0.1"),
            "port": int(os.environ.get("FOODTASTER_PGPORT", "5432")),
            "user": os.environ.get("FOODTASTER_PGUSER", "postgres")}


def postgres_database(name: str, *, fresh: bool = False, template: str | None = None) -> str:
    """Create database `name` on the local PostgreSQL if missing (or anew, with `fresh`), a
    copy of database `template` if given; returns its SQLAlchemy URL. Raises
    psycopg2.OperationalError when unreachable."""
    import psycopg2

    pg = postgres_settings()
    conn = psycopg2.connect(dbname="postgres", connect_timeout=5, **pg)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            if fresh:
                cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if cur.fetchone() is None:
                cur.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    finally:
        conn.close()
    return f"postgresql+psycopg2://{pg['user']}@{pg['host']}:{pg['port']}/{name}"


def drop_postgres_database(name: str) -> None:
    import psycopg2

    conn = psycopg2.connect(dbname="postgres", connect_timeout=5, **postgres_settings())
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        conn.close()


TASK_STARTS = re.compile(r"\[DAG TEST\] starting task_id=(\S+) map_index=(-?\d+)")
TASK_ENDS = re.compile(r"\[DAG TEST\] end task task_id=(\S+)")


def task_sections(printed: str) -> dict[tuple[str, int], list[str]]:
    """What `airflow dags test` printed for each task, attempt by attempt: by (task_id,
    map_index), the lines from the task's `[DAG TEST] starting task_id=` line to its `end task`
    line (or to the next task's start, or the end)."""
    attempts: dict[tuple[str, int], list[list[str]]] = {}
    key: tuple[str, int] | None = None
    for line in printed.splitlines(keepends=True):
        started = TASK_STARTS.search(line)
        if started:
            key = (started[1], int(started[2]))
            attempts.setdefault(key, []).append([])
        if key is not None:
            attempts[key][-1].append(line)
            if TASK_ENDS.search(line):
                key = None
    return {key: ["".join(lines) for lines in texts] for key, texts in attempts.items()}


def start_group(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start a server in a new session (its own process group), output to `log`."""
    sink = open(log, "ab")  # noqa: SIM115 - the child keeps it; closed with the process
    try:
        return subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                cwd=PROJECT_ROOT, start_new_session=True)
    finally:
        sink.close()


def stop_group(process: subprocess.Popen | None, grace: float = 20.0) -> None:
    """SIGTERM the process group, then SIGKILL what is left after `grace` seconds."""
    if process is None:
        return
    try:
        pgid = os.getpgid(process.pid)
    except ProcessLookupError:
        process.wait()
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _group_alive(pgid):
            time.sleep(0.2)
            process.poll()
        if not _group_alive(pgid):
            break
    process.poll()
    if process.returncode is None:
        process.wait(timeout=10)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_for_http(url: str, timeout: float = 180.0, process: subprocess.Popen | None = None,
                  log: Path | None = None) -> None:
    """Until `url` answers (any HTTP status), or raise with the log's tail."""
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            break
        try:
            requests.get(url, timeout=5)
            return
        except requests.RequestException:
            time.sleep(1)
    tail = log.read_text(errors="replace")[-4000:] if log and log.exists() else ""
    raise RuntimeError(f"{url} did not come up within {timeout:.0f}s\n{tail}")
