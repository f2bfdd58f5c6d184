"""The lake's tables: each dataset's valid rows and quarantine as Apache Iceberg tables.

Spark writes a batch's Parquet files into a folder of its run under the table's location
(`run_folder`); pyiceberg commits them, one snapshot a step (docs/decisions/027-iceberg-tables-
write-audit-publish.md). This module holds what every step shares: a dataset's two
tables (`DatasetTables`), their schema kept in step with the contract (`DatasetTables.ensure`),
and what a snapshot holds of a batch (`BatchFiles`), read without Spark. Publishing (the audit
branch, the guarded move of main) is `foodtaster.state.publish`; upkeep `foodtaster.state.upkeep`;
the catalog `foodtaster.state.catalog`.

Every file holds one batch: `batch_date` and `batch_id` are columns of each file, the table is
partitioned by `batch_date`, and `batch_id`'s bounds are kept whole in the manifests
(`write.metadata.metrics.column.batch_id=full`), so a batch's files are found from the manifests
alone and replacing a batch drops whole files.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from foodtaster.errors import Failed, UsageError
from foodtaster.registry import Tables, tables_of
from foodtaster.state.catalog import catalog, existing_catalog
from foodtaster.state.lake import Lake, check_batch_id, check_date, check_run_id

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

T = TypeVar("T")
L = TypeVar("L")
VALID, QUARANTINE = "valid", "quarantine"
ZONES = (VALID, QUARANTINE)
MAIN = "main"
BATCH_DATE, BATCH_ID = "batch_date", "batch_id"
# A table property: the fields the contracts that wrote the table required, each as its keys
# (JSON). A later contract that drops one, or lets it be absent, is refused (`ensure`).
REQUIRED_FIELDS = "foodtaster.required-fields"


class TableError(Failed):
    """The catalog refused a step, or a table does not hold what a step expects."""


class SchemaChangeRefused(UsageError):
    """A contract change no reader of the table could follow (a type narrowed, a required field
    dropped); refused by name before anything is written."""


AUDIT_PREFIX = "audit-"


def audit_branch(batch_id: str) -> str:
    """The branch a batch is written and judged on before main moves to it."""
    return f"{AUDIT_PREFIX}{check_batch_id(batch_id)}"


def batch_tag(batch_id: str) -> str:
    """The tag naming the snapshot that published a batch."""
    return f"batch-{check_batch_id(batch_id)}"


COMMIT_ATTEMPTS = 30


def retried(load: Callable[[], L], change: Callable[[L], T], what: str) -> T:
    """`change` done on the table as the catalog has it now, and done again on a fresh read when
    another writer committed first. The catalog refuses a commit made on a stale read
    (`CommitFailedException`), or, a snapshot's commit made while another branch moved, applies it
    to the table as it is now and finds its sequence number taken (a `ValueError` before anything
    is written): both are another writer's commit landing first."""
    from pyiceberg.exceptions import CommitFailedException

    for attempt in range(COMMIT_ATTEMPTS):
        try:
            return change(load())
        except CommitFailedException:
            pass
        except ValueError as err:
            if "sequence number" not in str(err):
                raise
        time.sleep(random.uniform(0, 0.05 * min(attempt + 1, 10)))
    raise TableError(f"{what}: other writers kept committing first, {COMMIT_ATTEMPTS} times; try again")


# ------------------------------------------------------------------------- a batch's files

@dataclass(frozen=True)
class BatchFiles:
    """What one snapshot of a table holds of one batch: its data files and their rows."""

    batch_id: str
    batch_date: str
    files: tuple[str, ...]
    rows: int


def file_batch(data_file: DataFile, field_id: int) -> str:
    """The batch a data file holds, from its `batch_id` bounds (kept whole: one value a file)."""
    lower = (data_file.lower_bounds or {}).get(field_id)
    upper = (data_file.upper_bounds or {}).get(field_id)
    if lower is None or lower != upper:
        raise TableError(f"{data_file.file_path} holds no single batch_id (bounds {lower!r}..{upper!r})")
    return bytes(lower).decode("utf-8")


def grouped_by_batch(data_files: Iterable[DataFile], field_id: int) -> list[BatchFiles]:
    """Data files grouped by batch, in data order (batch date, then batch id)."""
    found: dict[str, tuple[str, list[str], int]] = {}
    for data_file in data_files:
        batch_id = file_batch(data_file, field_id)
        day = data_file.partition[0]
        day_text = str(_as_date(day))
        _, files, rows = found.get(batch_id, (day_text, [], 0))
        files.append(data_file.file_path)
        found[batch_id] = (day_text, files, rows + data_file.record_count)
    return sorted((BatchFiles(b, d, tuple(sorted(f)), r) for b, (d, f, r) in found.items()),
                  key=lambda b: (b.batch_date, b.batch_id))


def _as_date(value: Any) -> Any:
    """A partition's date: pyiceberg keeps an identity date partition as days since the epoch."""
    if isinstance(value, int):
        from datetime import date, timedelta

        return date(1970, 1, 1) + timedelta(days=value)
    return value


# -------------------------------------------------------------------- a dataset's two tables

class DatasetTables:
    """A dataset's valid and quarantine tables in the lake's catalog."""

    def __init__(self, lake: Lake, dataset: str, names: Tables | None = None) -> None:
        self.lake, self.dataset = lake, dataset
        self.names = names or tables_of(dataset)

    @property
    def catalog(self) -> Catalog:
        return catalog(self.lake, self.names.catalog)

    def identifier(self, zone: str) -> str:
        return self.names.identifier(zone)

    def load(self, zone: str) -> Table | None:
        """The table, as the catalog has it now; None before its first batch."""
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        found = existing_catalog(self.lake, self.names.catalog)
        if found is None:
            return None
        try:
            return found.load_table(self.identifier(zone))
        except (NoSuchTableError, NoSuchNamespaceError):
            return None

    def table(self, zone: str) -> Table:
        found = self.load(zone)
        if found is None:
            raise TableError(f"{self.dataset}: no table {self.identifier(zone)} in the catalog yet")
        return found

    def run_folder(self, zone: str, table: Table, batch_date: str, batch_id: str, run_id: str) -> str:
        """Where one run writes a batch's files: under the table's data, a folder of the run's
        own (unreferenced until committed, so two runs never write over each other)."""
        return (f"{table.location().rstrip('/')}/data/{BATCH_DATE}={check_date(batch_date)}/"
                f"{BATCH_ID}={check_batch_id(batch_id)}/run={check_run_id(run_id)}")

    # ------------------------------------------------------------------------------- schema

    def ensure(self, zone: str, schema: pa.Schema, required: list[tuple[str, ...]]) -> Table:
        """The table, created on first use or its schema evolved to hold `schema`'s columns (an
        Arrow schema: Spark's, with `batch_date` and `batch_id`): a new field is added as
        optional; a type Iceberg cannot promote, or a field `required` by an earlier contract that
        this one drops, is refused by name (`SchemaChangeRefused`) before anything is written."""
        from pyiceberg.exceptions import NamespaceAlreadyExistsError, TableAlreadyExistsError

        schema = optional(schema)
        table = self.load(zone)
        if table is None:
            with contextlib.suppress(NamespaceAlreadyExistsError):
                self.catalog.create_namespace(self.names.namespace)
            try:
                table = self._create(zone, schema, required)
            except TableAlreadyExistsError:  # another run made it meanwhile
                table = self.table(zone)
        return self._evolve(zone, table, schema, required)

    def _create(self, zone: str, schema: pa.Schema, required: list[tuple[str, ...]]) -> Table:
        from pyiceberg.table import TableProperties
        from pyiceberg.transforms import IdentityTransform

        table = self.catalog.create_table(
            self.identifier(zone), schema=schema,
            properties={
                "write.metadata.metrics.column.batch_id": "full",
                # pyiceberg 0.12's own retry replays a snapshot with its stale sequence number when
                # another branch moved meanwhile; every commit is retried from a fresh read instead
                TableProperties.COMMIT_NUM_RETRIES: "0",
                TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED: "true",
                TableProperties.METADATA_PREVIOUS_VERSIONS_MAX: "200",
                "foodtaster.dataset": self.dataset, "foodtaster.zone": zone,
                REQUIRED_FIELDS: json.dumps(sorted(list(r) for r in required)),
            },
        )
        with table.transaction() as tx:
            tx.update_spec().add_field(BATCH_DATE, IdentityTransform(), BATCH_DATE).commit()
            tx.set_properties({TableProperties.DEFAULT_NAME_MAPPING:
                               tx.table_metadata.schema().name_mapping.model_dump_json()})
            # A branch needs a snapshot to start from: the table's first is empty.
            with tx.update_snapshot(snapshot_properties={"foodtaster.operation": "create"}).fast_append():
                pass
        return self.table(zone)

    def _evolve(self, zone: str, table: Table, schema: pa.Schema, required: list[tuple[str, ...]]) -> Table:
        from pyiceberg.exceptions import ValidationError

        identifier = self.identifier(zone)
        kept = {tuple(r) for r in json.loads(table.properties.get(REQUIRED_FIELDS, "[]"))}
        lost = sorted(kept - set(required))
        if lost:
            names = ", ".join(".".join(keys) for keys in lost)
            raise SchemaChangeRefused(
                f"{self.dataset}: the contract no longer requires {names}, which the contract that "
                f"wrote {identifier} required: its readers rely on it. Keep the field required, or "
                f"publish to a new table (tables: {{{zone}: <name>}} in pipeline.yaml)")
        narrowed = list(_narrowed(table.schema().as_arrow(), schema))
        if narrowed:
            raise SchemaChangeRefused(
                f"{self.dataset}: the contract narrows {', '.join(narrowed)} of {identifier}: its "
                "readers hold the wider type, and a narrower contract would change what its rows promise. "
                "Keep the type, write the field under a new name, or publish to a new table "
                f"(tables: {{{zone}: <name>}})")

        def evolve(current: Table) -> None:
            with current.update_schema() as update:
                update.union_by_name(schema)

        try:
            retried(lambda: self.table(zone), evolve, identifier)
        except (ValidationError, ValueError, TypeError) as err:
            raise SchemaChangeRefused(
                f"{self.dataset}: the contract's columns cannot be written to {identifier}: {err}. "
                "A reader of the table could not follow a type narrowed or changed (Iceberg promotes "
                "int to long, float to double and widens a decimal's precision only); write the "
                f"field under a new name, or publish to a new table (tables: {{{zone}: <name>}})") from err
        now_required = json.dumps(sorted(list(r) for r in kept | set(required)))

        def require(current: Table) -> Table:
            if current.properties.get(REQUIRED_FIELDS) != now_required:
                with current.transaction() as tx:
                    tx.set_properties({REQUIRED_FIELDS: now_required})
                current = self.table(zone)
            return current

        return retried(lambda: self.table(zone), require, identifier)

    # ------------------------------------------------------------------------------- reads

    def batches(self, zone: str, ref: str = MAIN, table: Table | None = None) -> list[BatchFiles]:
        """Every batch a snapshot of the table holds (main by default), in data order."""
        table = table or self.load(zone)
        if table is None:
            return []
        snapshot = table.snapshot_by_name(ref)
        if snapshot is None:
            return []
        return grouped_by_batch(data_files(table, snapshot.snapshot_id), batch_field_id(table))

    def batch(self, zone: str, batch_id: str, ref: str = MAIN, table: Table | None = None
              ) -> BatchFiles | None:
        return next((b for b in self.batches(zone, ref, table) if b.batch_id == batch_id), None)

    def staged_batches(self) -> list[BatchFiles]:
        """Each batch waiting on its audit branch of the valid table (held, or not yet published):
        what the branch holds of it."""
        table = self.load(VALID)
        if table is None:
            return []
        waiting = []
        for ref in table.metadata.refs:
            if ref.startswith(AUDIT_PREFIX):
                found = self.batch(VALID, ref[len(AUDIT_PREFIX):], ref, table)
                if found is not None:
                    waiting.append(found)
        return waiting

    def files(self, zone: str, batch_ids: Iterable[str] | None = None, ref: str = MAIN) -> list[str]:
        """The data files of `batch_ids` (all, by default) in a snapshot: what Spark reads."""
        wanted = None if batch_ids is None else set(batch_ids)
        return [f for b in self.batches(zone, ref) if wanted is None or b.batch_id in wanted for f in b.files]

    def read(self, zone: str, batch_id: str | None = None, columns: list[str] | None = None,
             ref: str = MAIN) -> pa.Table:
        """A batch's rows (or every row) in a snapshot, only `columns` when given, as the table's
        current schema has them (a column added later is null in older files)."""
        from pyiceberg.expressions import AlwaysTrue

        table = self.load(zone)
        snapshot = None if table is None else table.snapshot_by_name(ref)
        if table is None or snapshot is None:
            return pa.table({name: [] for name in columns or ()})
        # a batch id is letters, digits and `_.-` (`check_batch_id`): safe in a filter's text
        wanted = f"{BATCH_ID} == '{check_batch_id(batch_id)}'" if batch_id else AlwaysTrue()
        scan = table.scan(row_filter=wanted,
                          selected_fields=tuple(columns) if columns else ("*",),
                          snapshot_id=snapshot.snapshot_id)
        return scan.to_arrow()

    def columns(self, zone: str) -> list[str]:
        """The table's top-level columns, as its current schema has them."""
        table = self.load(zone)
        return [] if table is None else [f.name for f in table.schema().fields]


def batch_field_id(table: Table) -> int:
    return table.schema().find_field(BATCH_ID).field_id


def data_files(table: Table, snapshot_id: int) -> Iterator[DataFile]:
    """The data files a snapshot holds, from its manifests (no data read)."""
    for task in table.scan(snapshot_id=snapshot_id).plan_files():
        yield task.file


def _narrowed(table: pa.Schema | pa.DataType, new: pa.Schema | pa.DataType, at: str = "") -> Iterator[str]:
    """The fields (by path) whose new type is narrower than the table's: an int where the table has
    a long, a float where it has a double, a decimal of less precision. (Any other change of type is
    refused by the table's own schema update.)"""
    if isinstance(table, pa.Schema) or pa.types.is_struct(table):
        if not (isinstance(new, pa.Schema) or pa.types.is_struct(new)):
            return
        have = {f.name: f.type for f in table}
        for field in new:
            if field.name in have:
                yield from _narrowed(have[field.name], field.type, f"{at}.{field.name}" if at else field.name)
        return
    if _is_list(table) and _is_list(new):
        yield from _narrowed(table.value_type, new.value_type, f"{at}[]")
    elif pa.types.is_map(table) and pa.types.is_map(new):
        yield from _narrowed(table.item_type, new.item_type, f"{at}{{}}")
    elif ((pa.types.is_int64(table) and pa.types.is_int32(new))
          or (pa.types.is_float64(table) and pa.types.is_float32(new))
          or (pa.types.is_decimal(table) and pa.types.is_decimal(new) and new.scale == table.scale
              and new.precision < table.precision)):
        yield f"{at} ({table} to {new})"


def _is_list(kind: pa.DataType) -> bool:
    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def optional(schema: pa.Schema) -> pa.Schema:
    """The schema with every field, at every depth, optional: Spark writes most columns as
    optional, and an Iceberg field required in the table refuses a file where it is optional."""
    return pa.schema([_optional_field(f) for f in schema], metadata=None)


def _optional_field(field: pa.Field) -> pa.Field:
    return field.with_type(_optional_type(field.type)).with_nullable(True)


def _optional_type(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(kind):
        return pa.struct([_optional_field(kind.field(i)) for i in range(kind.num_fields)])
    if pa.types.is_large_list(kind):
        return pa.large_list(_optional_field(kind.value_field))
    if pa.types.is_list(kind):
        return pa.list_(_optional_field(kind.value_field))
    if pa.types.is_map(kind):
        return pa.map_(kind.key_field, _optional_field(kind.item_field))
    return kind
