# The two commands: `make demo` (the main job on bundled sample data) and `make test`.
# Each creates the virtual environment on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt constraints.txt pyproject.toml | cksum | cut -d' ' -f1)
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)

.PHONY: demo demo-engine test typecheck unit integration e2e bench bench-dqx-venv venv jar cds clean lock airflow compose-tools browser-tools

venv: $(STAMP)

# The strict line parser (jvm/): compiled against the Jackson and Spark jars of the installed pyspark,
# never committed. build_session and the submit operator put it on spark.jars.
JAR := build/foodtaster-jvm.jar
JAVA_SOURCES := $(shell find jvm/src -name '*.java')
jar: $(JAR)

$(JAR): $(JAVA_SOURCES) jvm/build_jar.sh $(STAMP)
	@bash scripts/check_java.sh
	bash jvm/build_jar.sh $(BIN)/python $@

# A class-data-sharing archive for a local env's short Spark JVMs (scripts/cds_archive.py), made
# once by one training job; each later spark-submit of a small batch and each `airflow dags test`
# starts with Spark's classes mapped (docs/decisions/009-short-jvms-class-data-sharing-and-c1.md).
# Never fails the build.
CDS := build/spark-cds.jsa
cds: $(CDS)

$(CDS): $(JAR) $(STAMP) scripts/cds_archive.py
	@$(BIN)/python scripts/cds_archive.py $@ || echo "no class-data-sharing archive: Spark's JVMs start without one"

$(STAMP): requirements.txt constraints.txt pyproject.toml
	@bash scripts/check_java.sh
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==26.3
	$(BIN)/pip install --quiet --no-cache-dir -r requirements.txt -c constraints.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	@rm -f $(VENV)/.installed-* && touch $@

# The main job: `airflow dags test` on a clean and a poisoned day, in the Airflow home .airflow/ and
# the metadata database `make airflow` shows (PostgreSQL's foodtaster_airflow, else SQLite in .airflow/).
demo: $(STAMP) $(JAR) $(CDS)
	$(BIN)/python -m foodtaster_dev.demo_airflow

# The engine alone: one generated batch through the Spark job, no Airflow. Its Spark JVM (started by
# spark-submit, which reads SPARK_SUBMIT_OPTS) maps the class-data-sharing archive when one was built.
demo-engine: $(STAMP) $(JAR)
	$(if $(wildcard $(CDS)),SPARK_SUBMIT_OPTS="$$SPARK_SUBMIT_OPTS -XX:SharedArchiveFile=$(abspath $(CDS))") \
	$(BIN)/python -m foodtaster_dev demo

# Airflow standalone with the UI on http://localhost:8080 (admin / admin), the demo's runs in it;
# AIRFLOW_PORT=8090 make demo airflow to move it (the demo's alerts link to that port)
airflow: $(STAMP) $(JAR) $(CDS)
	$(BIN)/python -m foodtaster_dev.demo_airflow airflow

# Debian's docker-compose checks docker-compose.yaml without a container engine (tests/integration/test_compose.py)
compose-tools:
	@command -v docker-compose >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null) || echo "could not install docker-compose: the compose test skips (fails under CI=true)"

# Debian's chromium, which Playwright drives in the browser tests (tests/support/browser.py): it
# launches this executable, never a browser of its own (`playwright install` downloads one)
browser-tools:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null) || echo "could not install chromium: the browser test skips (fails under CI=true)"

# Two workers, a test module to a worker (its module-scoped servers stay in one process): run one at
# a time, the end-to-end tests' Spark and Airflow processes leave the two cores idle much of the time
# (docs/decisions/011-two-test-workers.md). Every tier in one run, so the longest modules start first
# (tests/conftest.py).
test: $(STAMP) $(JAR) $(CDS) compose-tools browser-tools
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder

# mypy on the packages, as configured in pyproject.toml ([tool.mypy])
typecheck: $(STAMP)
	$(BIN)/mypy

# The tiers, each alone. unit: the packages' logic on small inputs; its tests start no JVM and no
# Spark session, run no DAG and need no jar. Two workers, test by test: its 110 CPU-seconds (the
# sample generators' pools, the CLI's subprocesses) fill both cores, under a minute.
unit: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist load tests/unit

# integration: the engine on a local Spark session, and real services in process (SMTP and webhook
# sinks, NATS JetStream, the batches page's app, docker-compose's config check); no Airflow run.
integration: $(STAMP) $(JAR) $(CDS) compose-tools
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder tests/integration

# e2e: Airflow (the DAG files parsed, `airflow dags test`, `airflow standalone`, the UI in a browser),
# spark-submit and the Spark cluster, the demos.
e2e: $(STAMP) $(JAR) $(CDS) browser-tools
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder tests/e2e

# bench/README.md: the options, e.g. a smoke run: make bench BENCH_ARGS="--messages 20000 --repeat 1 --skip-naive"
BENCH_ARGS ?=
bench: $(STAMP) $(JAR)
	$(BIN)/python bench/bench_validate.py $(BENCH_ARGS)

# The peer's own venv (bench/README.md, "The peer: DQX"): Databricks Labs DQX and the same pyspark,
# kept apart from the project's; bench/bench_peers.py runs bench/bench_dqx.py with it.
DQX_VENV := bench/.venv-dqx
DQX_STAMP := $(DQX_VENV)/.installed-$(shell cat bench/dqx/requirements.txt bench/dqx/constraints.txt | cksum | cut -d' ' -f1)
bench-dqx-venv: $(DQX_STAMP)

$(DQX_STAMP): bench/dqx/requirements.txt bench/dqx/constraints.txt
	@test -x $(DQX_VENV)/bin/python || $(PYTHON) -m venv $(DQX_VENV)
	$(DQX_VENV)/bin/pip install --quiet --upgrade pip==26.3
	$(DQX_VENV)/bin/pip install --quiet -r bench/dqx/requirements.txt -c bench/dqx/constraints.txt
	@rm -f $(DQX_VENV)/.installed-* && touch $@

# The lake, the Airflow home and the demo's PostgreSQL metadata database, which would show runs
# of batches no longer in the lake
clean:
	rm -rf data/ .airflow/ spark-warehouse/
	@test ! -x $(BIN)/python || $(BIN)/python -m foodtaster_dev.demo_airflow clean

# Re-pin constraints.txt from the current environment after changing requirements.txt.
lock:
	$(BIN)/pip install --quiet -r requirements.txt
	(echo "# Exact versions of every package, from a tested install (pip freeze). Update: make lock"; \
	 $(BIN)/pip freeze --all --exclude-editable | grep -v -i -E '^(foodtaster|pip)==') > constraints.txt
