"""The batch gate: the dataset's Great Expectations suite, run on Spark over the
batch's valid rows (the staged valid Parquet; the input is not read again).

The suite lives in `expectations/<dataset>.json`; values that change with each
batch are `{"$PARAMETER": name}` in the suite and come from `batch_parameters`.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import fsspec
from pyspark.sql import DataFrame

log = logging.getLogger(__name__)


def batch_parameters(batch_date: str) -> dict[str, Any]:
    """Suite parameters for a batch: the freshness window is the batch date +- one day."""
    day = dt.datetime.fromisoformat(batch_date)
    return {
        "batch_date": batch_date,
        "created_at_min": day - dt.timedelta(days=1),
        "created_at_max": day + dt.timedelta(days=2),
    }


def load_suite(path: str | Path) -> dict[str, Any]:
    document = json.loads(Path(path).read_text())
    if not isinstance(document.get("expectations"), list) or not document.get("name"):
        raise ValueError(f"{path}: an expectation suite needs a 'name' and a list of 'expectations'")
    return document


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


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        return float(value) if hasattr(value, "__float__") else str(value)


def run_gate(
    valid_rows: DataFrame, suite_path: str | Path, dataset: str, batch_id: str, batch_date: str,
    data_docs_uri: str | None = None,
) -> dict[str, Any]:
    """Validate the valid rows against the suite; returns `passed`, `failed` and `results`.

    Data Docs are built in a local folder and copied to `data_docs_uri` (any fsspec URI).
    """
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    document = load_suite(suite_path)
    columns = suite_columns(document)
    if columns is not None:
        valid_rows = valid_rows.select(*columns)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = {"globally": False}
    docs_dir = tempfile.mkdtemp(prefix="foodtaster-docs-")
    context.add_data_docs_site(
        "batch",
        {
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": docs_dir},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        },
    )
    suite = context.suites.add(
        gx.ExpectationSuite(
            name=document["name"],
            expectations=[ExpectationConfiguration(**e).to_domain_obj() for e in document["expectations"]],
            meta=document.get("meta"),
        )
    )
    batch = (
        context.data_sources.add_spark(name="foodtaster")
        .add_dataframe_asset(name=dataset)
        .add_batch_definition_whole_dataframe(batch_id)
    )
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=f"{dataset}-{batch_id}", data=batch, suite=suite)
    )
    checkpoint = context.checkpoints.add(
        gx.Checkpoint(
            name=f"{dataset}-gate", validation_definitions=[definition],
            actions=[gx.checkpoint.UpdateDataDocsAction(name="data_docs")],
            result_format={"result_format": "BASIC"},
        )
    )
    outcome = checkpoint.run(
        batch_parameters={"dataframe": valid_rows},
        expectation_parameters=batch_parameters(batch_date),
    )
    results = []
    for run in outcome.run_results.values():
        for result in run.results:
            config = result.expectation_config
            results.append(
                {
                    "expectation": config.type,
                    "column": config.kwargs.get("column"),
                    "success": bool(result.success),
                    "observed": _jsonable(result.result.get("observed_value")),
                    "unexpected_percent": _jsonable(result.result.get("unexpected_percent")),
                }
            )
    if data_docs_uri:
        fs, target = fsspec.core.url_to_fs(data_docs_uri)
        if fs.exists(target):
            fs.rm(target, recursive=True)
        fs.put(docs_dir.rstrip("/") + "/", target, recursive=True)
    return {
        "suite": document["name"],
        "passed": bool(outcome.success),
        "failed": [r for r in results if not r["success"]],
        "results": results,
        "data_docs": (data_docs_uri.rstrip("/") + "/index.html") if data_docs_uri else None,
    }
