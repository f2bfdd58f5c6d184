"""The batch gate: the dataset's Great Expectations suite, run on Spark over the
batch's valid rows (the staged valid Parquet; the input is not read again).

The suite lives in `expectations/<dataset>.json`; values that change with each
batch are `{"$PARAMETER": name}` in the suite and come from `batch_parameters`.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import fsspec
from pyspark.sql import DataFrame

from foodtaster.engine.gate.gate_page import BATCH_PAGE, DOCS_SITE, batch_page, batch_parameters, offline_docs
from foodtaster.engine.gate.gate_privacy import Masker, mask_results
from foodtaster.logs import batch_logger


def load_suite(path: str | Path) -> dict[str, Any]:
    document = json.loads(Path(path).read_text())
    if not isinstance(document.get("expectations"), list) or not document.get("name"):
        raise ValueError(f"{path}: an expectation suite needs a 'name' and a list of 'expectations'")
    return document


def with_contract_expectations(document: dict[str, Any], added: Sequence[Any]) -> dict[str, Any]:
    """The suite with the expectations the contract states (an ODCS document's quality rules,
    `foodtaster.contract.odcs.Expectation`) after its own, each with its rule's name in `meta`."""
    if not added:
        return document
    return {**document, "expectations": [*document["expectations"], *(e.configuration() for e in added)]}


# Expectations on the table as a whole that read no column.
TABLE_LEVEL = frozenset({"expect_table_row_count_to_be_between", "expect_table_row_count_to_equal"})
COLUMN_KWARGS = ("column", "column_A", "column_B")


def suite_columns(document: dict[str, Any]) -> list[str] | None:
    """The columns a suite reads, or None when an expectation may read the table's shape.

    GX's uniqueness check shuffles every column it is given; giving it only these is
    the same verdict for less work.
    """
    columns: list[str] = []
    for expectation in document["expectations"]:
        kwargs = expectation.get("kwargs", {})
        named = [kwargs[k] for k in COLUMN_KWARGS if k in kwargs] + list(kwargs.get("column_list", []))
        if not named and expectation["type"] not in TABLE_LEVEL:
            return None
        columns.extend(named)
    return list(dict.fromkeys(columns))


def suite_frame(rows: DataFrame, columns: list[str]) -> DataFrame:
    """The columns a suite reads, each a top-level column named by its path (`data.total`).

    A nested dataset's suite names a field under an object by its path. GX 1.24 checks that a
    column exists against the frame's column names, and Spark's `approxQuantile` (the median)
    selects the column before reading it back by name, so a struct field reached through its
    parent is not found by either. A top-level column whose name is the dotted path is: GX
    lists it as `` `data.total` `` and hands its metrics the backticked name, and the results and
    Data Docs keep the suite's own spelling. The column is read through the structs by its parsed
    path, so a quoted key holding a dot (`data["app.name"]`) is one name, never two.
    """
    from foodtaster.contract.path import Path
    from foodtaster.engine.judging.layers import written_column

    return rows.select(*[written_column(Path.parse(column)).alias(column) for column in columns])


def _error(info: dict[str, Any] | None) -> str | None:
    """GX's message when an expectation could not be computed (it then only says "failed")."""
    infos = [info or {}, *[v for v in (info or {}).values() if isinstance(v, dict)]]
    return next((i.get("exception_message") for i in infos if i.get("raised_exception")), None)


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        return float(value) if hasattr(value, "__float__") else str(value)


QUANTILE_WITHIN_ERROR = "expect_column_quantile_values_to_be_between_within_error"


@functools.cache
def _register_expectations() -> None:
    """Register the one expectation the suites use that GX 1.24 does not ship as such.

    GX's `expect_column_quantile_values_to_be_between` asks Spark for `approxQuantile` with
    `allow_relative_error` as the relative error, but types that field `bool | str`: a number
    becomes the string "0.01", and the Spark metric then refuses anything but a float, so on
    Spark the expectation can only be exact. Its verdicts are also numpy booleans, which the
    validation results store cannot serialise. This subclass widens the field to keep the
    number and turns the verdicts into Python booleans; the metric and the verdict are GX's.
    """
    from typing import Union

    from great_expectations.compatibility import pydantic
    from great_expectations.core.suite_parameters import SuiteParameterDict
    from great_expectations.expectations.core.expect_column_quantile_values_to_be_between import (
        ExpectColumnQuantileValuesToBeBetween,
    )
    from great_expectations.validator.metric_configuration import MetricConfiguration

    class ExpectColumnQuantileValuesToBeBetweenWithinError(ExpectColumnQuantileValuesToBeBetween):
        # The widened field is the point (GX's `bool | str` loses the number); mypy sees only
        # that a subclass changes a field's type, which pydantic allows.
        allow_relative_error: Union[float, bool, str, SuiteParameterDict] = pydantic.Field(  # type: ignore[assignment]  # noqa: UP007
            default=False,
            description="Spark's approxQuantile relative error: a number between 0 and 1, or False (exact).",
        )

        def get_validation_dependencies(self, execution_engine=None, runtime_configuration=None):  # noqa: ANN001, ANN202
            # GX's quantile metric hands the suite's column name to `approxQuantile` as it is, and
            # Spark reads a dot in it as a struct field: a path column (`suite_frame`) is named
            # in backticks for that metric alone, which GX's column lookup accepts as the name.
            dependencies = super().get_validation_dependencies(execution_engine, runtime_configuration)
            metric = dependencies.get_metric_configuration("column.quantile_values")
            column = metric.metric_domain_kwargs.get("column") if metric else None
            if column and "." in column and not column.startswith("`"):
                dependencies.set_metric_configuration(
                    "column.quantile_values",
                    MetricConfiguration(
                        metric_name=metric.metric_name,
                        metric_domain_kwargs={**metric.metric_domain_kwargs, "column": f"`{column}`"},
                        metric_value_kwargs=metric.metric_value_kwargs,
                    ),
                )
            return dependencies

        def _validate(self, metrics, runtime_configuration=None, execution_engine=None):  # noqa: ANN001, ANN202
            outcome = super()._validate(metrics, runtime_configuration, execution_engine)
            details = outcome["result"]["details"]
            details["success_details"] = [bool(ok) for ok in details["success_details"]]
            return {**outcome, "success": bool(outcome["success"])}

    # This module's annotations are strings (`from __future__ import annotations`): resolve them here.
    ExpectColumnQuantileValuesToBeBetweenWithinError.update_forward_refs(
        Union=Union, SuiteParameterDict=SuiteParameterDict
    )
    assert ExpectColumnQuantileValuesToBeBetweenWithinError.expectation_type == QUANTILE_WITHIN_ERROR


_GX_MODULES = (
    "great_expectations",
    "great_expectations.core.run_identifier",
    "great_expectations.expectations.expectation_configuration",
)


def _import_gx() -> list[ModuleType]:
    """The Great Expectations modules the gate uses, in `_GX_MODULES` order; its usage
    analytics stay off unless the environment asks for them."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    return [importlib.import_module(module) for module in _GX_MODULES]


@functools.cache
def import_ahead() -> threading.Thread:
    """Import Great Expectations on a thread while Spark runs the batch: about as long as the
    gate's own work in a fresh process, and the driver's Python mostly waits on the JVM by
    then. `run_gate`'s imports find the modules loaded, or wait for them (Python's import lock).
    Once a process: a second call (a crash isolation's rerun, the next batch) gets the same
    thread."""
    thread = threading.Thread(target=_import_gx, name="import-great-expectations", daemon=True)
    thread.start()
    return thread


def run_gate(
    valid_rows: DataFrame, suite_path: str | Path, dataset: str, batch_id: str, batch_date: str,
    data_docs_uri: str | None = None, masker: Masker | None = None, added: Sequence[Any] = (),
) -> dict[str, Any]:
    """Validate the valid rows against the suite; returns `passed`, `failed` and `results`.

    The GX run is named after the batch and its asset after the dataset, so Data Docs list
    them by the names an operator greps for. Data Docs are built in a local folder, made
    readable offline (`offline_docs`) and copied to `data_docs_uri` (any fsspec URI); the
    returned `data_docs` is the batch's own page there; what `masker` marks personal, masked.
    """
    gx, gx_runs, gx_configs = _import_gx()
    _register_expectations()
    document = with_contract_expectations(load_suite(suite_path), added)
    columns = suite_columns(document)
    if columns is not None:
        valid_rows = suite_frame(valid_rows, columns)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = {"globally": False}
    docs_dir = tempfile.mkdtemp(prefix="foodtaster-docs-")
    context.add_data_docs_site(
        DOCS_SITE,
        {
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": docs_dir},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        },
    )
    suite = context.suites.add(
        gx.ExpectationSuite(
            name=document["name"],
            expectations=[gx_configs.ExpectationConfiguration(**e).to_domain_obj()
                          for e in document["expectations"]],
            meta=document.get("meta"),
        )
    )
    batch = (
        # Not cached: GX would cache the rows before its first aggregate and keep them cached after
        # the gate. Each of the suite's few aggregates reads its Parquet columns about as fast
        # as the cache serves them (docs/decisions/008-the-gate-on-the-written-rows.md).
        context.data_sources.add_spark(name="foodtaster", persist=False)
        .add_dataframe_asset(name=dataset)
        .add_batch_definition_whole_dataframe(batch_id)
    )
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=f"{dataset}-{batch_id}", data=batch, suite=suite)
    )
    checkpoint = context.checkpoints.add(
        gx.Checkpoint(
            name=f"{dataset}-gate", validation_definitions=[definition],
            result_format={"result_format": "BASIC"},
        )
    )
    outcome = checkpoint.run(
        batch_parameters={"dataframe": valid_rows},
        expectation_parameters=batch_parameters(batch_date),
        run_id=gx_runs.RunIdentifier(run_name=batch_id, run_time=dt.datetime.now(dt.UTC)),
    )
    results = []
    for key, run in outcome.run_results.items():
        # A dataframe asset's batch spec carries no asset name, and Data Docs read it from there
        # ("Data asset: None"); the result is stored again with it before the docs are built.
        run.meta.setdefault("batch_spec", {})["data_asset_name"] = dataset
        mask_results(run.results, masker)
        context.validation_results_store.set(key, run)
        for result in run.results:
            config = result.expectation_config
            results.append(
                {
                    "expectation": config.type,
                    "column": config.kwargs.get("column"),
                    "success": bool(result.success),
                    "observed": _jsonable(result.result.get("observed_value")),
                    "unexpected_percent": _jsonable(result.result.get("unexpected_percent")),
                    "error": _error(result.exception_info),
                }
            )
    gate = {
        "suite": document["name"],
        "passed": bool(outcome.success),
        "failed": [r for r in results if not r["success"]],
        "results": results,
        "data_docs": None,
    }
    if data_docs_uri:
        context.build_data_docs(site_names=[DOCS_SITE])
        offline_docs(Path(docs_dir))
        pages = sorted(p.relative_to(docs_dir).as_posix()
                       for p in Path(docs_dir, "validations").rglob("*.html"))
        page = batch_page(gate, document, dataset, batch_id, batch_date, pages)
        (Path(docs_dir) / BATCH_PAGE).write_text(page, encoding="utf-8")
        fs, target = fsspec.core.url_to_fs(data_docs_uri)
        if fs.exists(target):
            fs.rm(target, recursive=True)
        fs.put(docs_dir.rstrip("/") + "/", target, recursive=True)
        gate["data_docs"] = data_docs_uri.rstrip("/") + "/" + BATCH_PAGE
    shutil.rmtree(docs_dir, ignore_errors=True)  # a local copy; the docs live at data_docs_uri
    batch_logger(__name__, dataset, batch_id).event(
        "gate", suite=document["name"], passed=gate["passed"],
        failed=",".join(f"{r['expectation']}({r['column'] or ''})" for r in gate["failed"]) or "-",
        data_docs=gate["data_docs"] or "-",
    )
    return gate
