"""The catalog the lake's tables are kept in: one configured the way pyiceberg reads one
(`.pyiceberg.yaml`, `PYICEBERG_CATALOG__<NAME>__*`), else the lake's embedded SQLite catalog;
and moving tables from one catalog to another (docs/decisions/027-iceberg-tables-write-audit-
publish.md). The tables themselves are `foodtaster.state.tables`.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from typing import TYPE_CHECKING

from foodtaster.errors import UsageError
from foodtaster.state.lake import Lake

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

EMBEDDED_CATALOG = "_catalog/iceberg.db"
EMBEDDED_WAREHOUSE = "warehouse"


class CatalogNotConfigured(UsageError):
    """No catalog configured for a lake the embedded SQLite catalog cannot live in."""


_catalogs: dict[tuple[str, str, str], Catalog] = {}
_catalogs_lock = threading.Lock()


def embedded_catalog_properties(lake: Lake) -> dict[str, str]:
    """The embedded default: a SQLite SQL catalog in the lake, its warehouse beside it; what a
    reader with only pyiceberg passes to `SqlCatalog` to open it."""
    root = _local_root(lake)
    return {"type": "sql", "uri": f"sqlite:///{root}/{EMBEDDED_CATALOG}",
            "warehouse": f"file://{root}/{EMBEDDED_WAREHOUSE}"}


def _local_root(lake: Lake) -> str:
    root = lake.root
    if root.startswith("file://"):
        root = root[len("file://"):]
    if "://" in root:
        raise CatalogNotConfigured(
            f"the lake {lake.root} is not on a local disk, where the embedded SQLite catalog lives; "
            "configure a catalog the way pyiceberg reads one (.pyiceberg.yaml, or "
            "PYICEBERG_CATALOG__FOODTASTER__URI=...; see the README, \"Tables\")")
    return os.path.abspath(root)


def catalog(lake: Lake, name: str = "foodtaster") -> Catalog:
    """The catalog `name` as pyiceberg's configuration has it, else the lake's embedded one.
    One a process for each lake and name (a SQL catalog holds a connection pool)."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.utils.config import Config

    configured = Config().get_catalog_config(name)
    key = (lake.root, name, json.dumps(configured, sort_keys=True, default=str))
    with _catalogs_lock:
        if key not in _catalogs:
            if configured:  # pyiceberg's own reading of .pyiceberg.yaml and PYICEBERG_CATALOG__*
                _catalogs[key] = load_catalog(name, **{k: str(v) for k, v in configured.items()})
            else:
                properties = embedded_catalog_properties(lake)
                os.makedirs(os.path.dirname(properties["uri"][len("sqlite:///"):]), exist_ok=True)
                _catalogs[key] = SqlCatalog(name, uri=properties["uri"], warehouse=properties["warehouse"])
        return _catalogs[key]


def existing_catalog(lake: Lake, name: str = "foodtaster") -> Catalog | None:
    """The catalog when there is one to read: a configured one, or the lake's embedded one once a
    batch made it (reading never creates it: a lake nothing was published to stays as it was)."""
    from pyiceberg.utils.config import Config

    if not Config().get_catalog_config(name) and not os.path.exists(
            embedded_catalog_properties(lake)["uri"][len("sqlite:///"):]):
        return None
    return catalog(lake, name)


def describe_catalog(lake: Lake, name: str = "foodtaster") -> str:
    """Where the catalog is, for a person (no secret: a configured catalog by its name only)."""
    from pyiceberg.utils.config import Config

    if Config().get_catalog_config(name):
        return f"pyiceberg catalog {name!r} (as configured)"
    return f"embedded SQLite catalog {embedded_catalog_properties(lake)['uri']}"


def move_tables(source: Catalog, target: Catalog) -> list[str]:
    """Every table of `source` registered in `target` at its current metadata, then dropped from
    `source` (its files stay where they are): the way Iceberg moves a table from one catalog to
    another. A table both hold is refused by name, before anything of it moves."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    moved = []
    for namespace in source.list_namespaces():
        identifiers = source.list_tables(namespace)
        with contextlib.suppress(NamespaceAlreadyExistsError):
            target.create_namespace(namespace)
        for identifier in identifiers:
            name = ".".join(identifier)
            if target.table_exists(name):
                raise UsageError(f"{name} is in both catalogs: not moving it (drop one of them first)")
            target.register_table(name, source.load_table(name).metadata_location)
            source.drop_table(name)
            moved.append(name)
    return moved
