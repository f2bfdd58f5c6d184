"""OpenLineage from the validate and publish tasks, through Airflow's OpenLineage provider.

When a transport is configured (`[openlineage] transport`, e.g. Marquez's HTTP API; README,
"Lineage"), the provider asks each finished task for its lineage. These two tasks answer
(`get_openlineage_facets_on_complete`) with the batch as judged, from its summary in the lake:

- input: the raw batch (`raw/<dataset>`), its `dataQualityMetrics` (messages);
- outputs: the valid and quarantine Iceberg tables, each named by its location (as
  OpenLineage names an Iceberg table) with `symlinks` (the catalog's `<namespace>.<table>`),
  `catalog` (iceberg, the catalog's name), `version` (the snapshot this run made: the valid rows'
  on their audit branch, or on main once published; the quarantine's), `dataQualityMetrics` (its
  rows of the batch), `dataQualityAssertions` (every rule that quarantined messages, failed, at
  its column path; each expectation of the batch gate, passed or not; the batch's quarantine
  rate against alert_rate and hold_rate) and `foodtaster_batch` (the verdict, the counts and
  the quarantine rate, a facet of our own).

The publish task names the valid table alone, at the snapshot it published. Without a transport
the provider asks nothing and nothing here runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from airflow.providers.standard.operators.python import PythonOperator

from foodtaster.contract.path import Path, PathError
from foodtaster.landing import LandingResult
from foodtaster.registry import get_dataset
from foodtaster.state.lake import Lake, exists, read_json
from foodtaster.summary import BatchSummary
from foodtaster_airflow.spark_submit import ValidateBatchOperator

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors.base import OperatorLineage

FACET_SCHEMA = "urn:foodtaster:facet:foodtaster_batch:1"  # a facet of our own (README, "Lineage")
LAYER_RULES = re.compile(r"^(line|file|json|registry|crash|group|retry)\.")  # rules of no column


@cache
def batch_facet_class() -> type:
    """`foodtaster_batch`: the batch this run judged and its verdict, on both outputs (made when
    lineage is first asked for: parsing a DAG imports no OpenLineage client)."""
    import attr
    from openlineage.client.generated.base import DatasetFacet

    @attr.define
    class FoodtasterBatchDatasetFacet(DatasetFacet):
        batchId: str  # noqa: N815
        batchDate: str  # noqa: N815
        verdict: str  # published | held | staged
        messages: int
        valid: int
        quarantined: int
        duplicatesDropped: int  # noqa: N815
        quarantineRate: float  # noqa: N815
        why: list[str] = attr.field(factory=list)

        @staticmethod
        def _get_schema() -> str:
            return FACET_SCHEMA

    return FoodtasterBatchDatasetFacet


def namespace_and_root(lake_root: str) -> tuple[str, str]:
    """OpenLineage's namespace and the path prefix of the lake's datasets: `file:///srv/lake` is
    (`file`, `/srv/lake`), `s3a://bucket/lake` is (`s3://bucket`, `lake`)."""
    scheme, sep, rest = lake_root.partition("://")
    if not sep:
        return "file", lake_root.rstrip("/") or "/"
    if scheme == "file":
        return "file", "/" + rest.lstrip("/").rstrip("/")
    bucket, _, path = rest.partition("/")
    return f"{'s3' if scheme in ('s3a', 's3n') else scheme}://{bucket}", path.rstrip("/")


def _column(rule: str) -> str | None:
    """The column path a rule id names (`data.lines[].qty.greater_than_or_equal_to(1)` ->
    `data.lines[].qty`), None for a rule of the bytes, parse or registry layers."""
    if LAYER_RULES.match(rule):
        return None
    path, dot, _check = _before_arguments(rule).rpartition(".")
    if not dot or not path:
        return None
    try:
        return str(Path.parse(path))
    except PathError:
        return None


def _before_arguments(rule: str) -> str:
    """A rule id up to its arguments: its first '(' outside a quoted key (`["a(b"]`)."""
    decoder, at = json.JSONDecoder(), 0
    while at < len(rule):
        if rule.startswith('["', at):
            try:
                _key, at = decoder.raw_decode(rule, at + 1)
            except ValueError:
                return rule[:at]
            continue
        if rule[at] == "(":
            return rule[:at]
        at += 1
    return rule


def assertions(summary: BatchSummary, alert_rate: float, hold_rate: float) -> list[Any]:
    """Every check of the batch as an OpenLineage assertion."""
    from openlineage.client.facet_v2 import data_quality_assertions_dataset

    assertion = data_quality_assertions_dataset.Assertion
    found = [assertion(assertion=rule, success=False, column=_column(rule), severity="quarantine",
                       actual=f"{count} messages") for rule, count in summary.reasons.items()]
    for result in summary.gate.results:
        found.append(assertion(assertion=str(result.get("expectation")), success=bool(result.get("success")),
                               column=result.get("column"), severity="error",
                               actual=None if result.get("observed") is None else str(result["observed"])))
    rate = summary.quarantine_rate
    for name, threshold, severity in (("alert_rate", alert_rate, "warn"), ("hold_rate", hold_rate, "error")):
        found.append(assertion(assertion=f"quarantine_rate_below_{name}", success=rate < threshold,
                               severity=severity, expected=f"< {threshold}", actual=f"{rate:.6f}"))
    return found


def batch_lineage(dataset: str, summary: BatchSummary, lake_root: str, *, published: bool | None = None,
                  zones: tuple[str, ...] = ("valid", "quarantine")) -> OperatorLineage:
    """The batch's lineage: the raw batch in, `zones` out, with the facets above."""
    from airflow.providers.openlineage.extractors.base import OperatorLineage
    from openlineage.client.event_v2 import InputDataset, OutputDataset
    from openlineage.client.facet_v2 import (
        data_quality_assertions_dataset,
        data_quality_metrics_dataset,
        data_quality_metrics_input_dataset,
    )

    config = get_dataset(dataset)
    namespace, root = namespace_and_root(lake_root)
    shown = ("published" if (summary.published if published is None else published)
             else "held" if not summary.verdict.publish else "staged")
    batch = batch_facet_class()(
        batchId=summary.batch_id, batchDate=summary.batch_date, verdict=shown,
        messages=summary.messages, valid=summary.valid, quarantined=summary.quarantined,
        duplicatesDropped=summary.duplicates_dropped, quarantineRate=summary.quarantine_rate,
        why=list(summary.verdict.why))
    assertions_facet = data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(
        assertions=assertions(summary, config.alert_rate, config.hold_rate))
    rows = {"valid": batch.valid, "quarantine": batch.quarantined}
    outputs = [OutputDataset(*_table_name(dataset, zone, lake_root), facets={
        **_table_facets(summary, zone),
        "dataQualityMetrics": data_quality_metrics_dataset.DataQualityMetricsDatasetFacet(
            columnMetrics={}, rowCount=rows[zone]),
        # the spec types it an input facet; the checks are the outputs' too, so they carry it
        "dataQualityAssertions": cast(Any, assertions_facet),
        "foodtaster_batch": batch}) for zone in zones]
    raw = InputDataset(namespace=namespace, name=f"{root}/raw/{dataset}", inputFacets={
        "dataQualityMetrics": data_quality_metrics_input_dataset.DataQualityMetricsInputDatasetFacet(
            columnMetrics={}, rowCount=batch.messages),
        "dataQualityAssertions": assertions_facet})
    return OperatorLineage(inputs=[raw], outputs=outputs)


def _table_name(dataset: str, zone: str, lake_root: str) -> tuple[str, str]:
    """An Iceberg table as OpenLineage names it: the namespace and path of its location."""
    from foodtaster.state.tables import DatasetTables

    table = DatasetTables(Lake(lake_root), dataset).load(zone)
    if table is None:  # not made yet: the zone's place in the lake
        namespace, root = namespace_and_root(lake_root)
        return namespace, f"{root}/{zone}/{dataset}"
    return namespace_and_root(table.location())


def _table_facets(summary: BatchSummary, zone: str) -> dict[str, Any]:
    """`symlinks` (the catalog's name of the table), `catalog` and `version` (the snapshot this run
    made), from the summary's tables."""
    from openlineage.client.generated.catalog_dataset import CatalogDatasetFacet
    from openlineage.client.generated.dataset_version_dataset import DatasetVersionDatasetFacet
    from openlineage.client.generated.symlinks_dataset import Identifier, SymlinksDatasetFacet

    tables = summary.tables
    if tables is None:
        return {}
    identifier = tables.names.identifier(zone)
    snapshot = (tables.quarantine_snapshot if zone == "quarantine"
                else tables.published_snapshot or tables.staged_snapshot)
    facets: dict[str, Any] = {
        "symlinks": SymlinksDatasetFacet(identifiers=[
            Identifier(namespace=f"iceberg://{tables.names.catalog}", name=identifier, type="TABLE")]),
        "catalog": CatalogDatasetFacet(framework="iceberg", type="iceberg", name=tables.names.catalog),
    }
    if snapshot is not None:
        facets["version"] = DatasetVersionDatasetFacet(datasetVersion=str(snapshot))
    return facets


def _landed_summary(landing: LandingResult | None) -> tuple[BatchSummary, str] | None:
    """The summary of the batch the run landed, and the lake's root; None when there is none."""
    if landing is None or landing.empty or not landing.dataset:
        return None
    uri = Lake(landing.lake).summary(landing.dataset, landing.batch_id)
    return (BatchSummary.from_json(read_json(uri)), landing.lake) if exists(uri) else None


# The provider asks for lineage in a process it forks after the task: that process has no channel
# to Airflow's API of its own, so the batch is read while the task runs and kept on the operator.


class ValidateWithLineage(ValidateBatchOperator):
    """The validate task, answering the OpenLineage provider with the batch it judged."""

    judged: tuple[BatchSummary, str] | None = None

    def execute(self, context: Any) -> dict[str, Any] | None:
        done = super().execute(context)
        self.judged = _landed_summary(self.landing())
        return done

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> OperatorLineage | None:
        return batch_lineage(self.dataset, *self.judged) if self.judged else None


class PublishWithLineage(PythonOperator):
    """The publish task, answering with the valid rows it made visible: a PythonOperator whose
    `landed` is the land task's result (its XComArg, resolved to its JSON form when it runs)."""

    template_fields: Sequence[str] = (*PythonOperator.template_fields, "landed")
    judged: tuple[str, BatchSummary, str] | None = None

    def __init__(self, *, landed: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.landed = landed

    def execute(self, context: Any) -> Any:
        done = super().execute(context)
        landing = LandingResult.from_dict(self.landed) if isinstance(self.landed, dict) else None
        found = _landed_summary(landing)
        self.judged = (landing.dataset, *found) if landing and found else None
        return done

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> OperatorLineage | None:
        if not self.judged:
            return None
        dataset, summary, lake_root = self.judged
        return batch_lineage(dataset, summary, lake_root, published=True, zones=("valid",))
