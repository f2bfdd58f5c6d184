# The two commands: `make demo` (the main job on bundled sample data) and `make test`.
# Each creates the virtual environment on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt constraints.txt pyproject.toml | cksum | cut -d' ' -f1)
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)

.PHONY: demo test bench venv clean lock

venv: $(STAMP)

$(STAMP): requirements.txt constraints.txt pyproject.toml
	@bash scripts/check_java.sh
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==26.3
	$(BIN)/pip install --quiet --no-cache-dir -r requirements.txt -c constraints.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	@rm -f $(VENV)/.installed-* && touch $@

demo: $(STAMP)
	$(BIN)/python -m foodtaster demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/bench_validate.py

clean:
	rm -rf data/ .airflow/ spark-warehouse/

# Re-pin constraints.txt from the current environment after changing requirements.txt.
lock:
	$(BIN)/pip install --quiet -r requirements.txt
	(echo "# Exact versions of every package, from a tested install (pip freeze). Update: make lock"; \
	 $(BIN)/pip freeze --all --exclude-editable | grep -v -i -E '^(foodtaster|pip)==') > constraints.txt
