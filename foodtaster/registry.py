"""The dataset registry: `pipeline.yaml`, one entry a dataset."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import yaml

from foodtaster.contract.path import Path as ValuePath
from foodtaster.contract.path import PathError
from foodtaster.errors import UsageError

if TYPE_CHECKING:  # the registry is read without pandera (the CLI, DAG parsing)
    from pandera.pandas import DataFrameModel

    from foodtaster.contract.model import Contract
    from foodtaster.contract.path import Path as ContractPath

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CONTRACT_FILE_MODULE = "foodtaster_contract_file"  # the module name of a contract given by its file
DEFAULT_REGISTRY = PROJECT_ROOT / "pipeline.yaml"
DATASET_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,62}$"
DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024
DEFAULT_MAX_FILE_BYTES = 512 * 1024 * 1024
DEFAULT_PYTHON_CHECK_TIMEOUT_S = 10.0
DEFAULT_PYTHON_CHECK_MEMORY_MB = 2048
# A contract given as a document: a JSON Schema, an ODCS data contract or an AsyncAPI document.
DOCUMENT_SUFFIXES = (".json", ".yaml", ".yml")


def line_read_bytes(max_message_bytes: int) -> int:
    """The line length (bytes with the terminator) at which the Spark reader skips a line
    instead of holding it: past any message plus a `\\r\\n`, so only lines already too large
    are skipped (landing records them for the quarantine)."""
    return max_message_bytes + 3


class RegistryError(UsageError):
    """pipeline.yaml is missing, malformed, or names something that does not exist."""


class SourceConfigError(RegistryError):
    """A dataset's `source` entry in pipeline.yaml is malformed."""


class PersonalPathError(RegistryError):
    """A path listed as personal that names no pattern: bad text, or an element by its index."""


def personal_pattern(text: str, where: str = "personal") -> str:
    """A personal path as its pattern's printed form; refused by name when it is not one."""
    if not isinstance(text, str):
        raise PersonalPathError(f"{where}: a path is a string, got {text!r}")
    try:
        path = ValuePath.parse(text)
    except PathError as err:
        raise PersonalPathError(f"{where}: {err}") from err
    if not path:
        raise PersonalPathError(f"{where}: the empty path is the whole message; name its fields")
    if path.pattern != path:
        raise PersonalPathError(f"{where}: {text!r} names one element by its index; write "
                                f"{str(path.pattern)!r} for every element")
    return str(path)


@dataclass(frozen=True)
class InboxSource:
    """Files dropped by producers in the lake's inbox folder (`foodtaster.sources.inbox`)."""

    kind: str = "inbox"


@dataclass(frozen=True)
class NatsSource:
    """A JetStream stream read through a durable pull consumer; its acks are the bookmark
    (`foodtaster.sources.nats`)."""

    url: str
    stream: str
    subject: str  # the consumer's filter subject, e.g. `orders.>`
    durable: str  # the durable consumer's name: the read position lives in the broker
    max_messages: int = 1_000_000  # one batch takes at most this many messages
    max_bytes: int = 1024**3  # ... and at most this many payload bytes
    ack_wait_seconds: float = 300.0  # a delivered message not acked by then is redelivered
    connect_timeout_seconds: float = 5.0
    kind: str = "nats"


KAFKA_NAME_PATTERN = r"^[A-Za-z0-9._-]{1,249}$"  # a Kafka topic's legal name (and a group's, here)


@dataclass(frozen=True)
class KafkaSource:
    """A Kafka topic read by a consumer group of the land task's own; the lake's manifests are
    the bookmark, the group's committed offsets their mirror (`foodtaster.sources.kafka`)."""

    topic: str
    group: str  # the land task's consumer group: committed only after a batch is in the lake
    kafka_conn_id: str = "kafka_default"  # an Airflow connection of type `kafka`: its extra is
    # the librdkafka config (bootstrap.servers, security.protocol, sasl.*, ssl.*)
    max_messages: int = 1_000_000  # one batch takes at most this many messages
    max_bytes: int = 1024**3  # ... and at most this many payload bytes
    wake_on_messages: bool = False  # an AssetWatcher on the provider's trigger wakes the DAG
    dead_letter_topic: str | None = None  # opt-in: each quarantined message produced there
    connect_timeout_seconds: float = 30.0  # joining the group and reaching the partitions
    kind: str = "kafka"

    def __post_init__(self) -> None:
        for name in ("topic", "group", "kafka_conn_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not re.match(KAFKA_NAME_PATTERN, value):
                raise SourceConfigError(f"kafka source: {name} must be a name of letters, digits, "
                                        f"'.', '_' or '-', got {value!r}")
        for name in ("max_messages", "max_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise SourceConfigError(f"kafka source: {name} must be an integer > 0, got {value!r}")
        if not isinstance(self.wake_on_messages, bool):
            raise SourceConfigError(f"kafka source: wake_on_messages is true or false, got "
                                    f"{self.wake_on_messages!r}")
        dlq = self.dead_letter_topic
        if dlq is not None and (not isinstance(dlq, str) or not re.match(KAFKA_NAME_PATTERN, dlq)):
            raise SourceConfigError(f"kafka source: dead_letter_topic must be a topic name, got {dlq!r}")
        if dlq == self.topic:
            raise SourceConfigError(f"kafka source: dead_letter_topic {dlq!r} is the topic read: "
                                    "its poison would be landed again")
        timeout = self.connect_timeout_seconds
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600:
            raise SourceConfigError(f"kafka source: connect_timeout_seconds must be seconds in (0, 600], "
                                    f"got {timeout!r}")


SourceConfig = InboxSource | NatsSource | KafkaSource
SOURCE_KINDS: dict[str, type[SourceConfig]] = {"inbox": InboxSource, "nats": NatsSource,
                                               "kafka": KafkaSource}


def source_from_entry(dataset: str, entry: dict[str, Any] | None) -> SourceConfig:
    """Read a dataset's `source:` mapping (absent: the inbox folder)."""
    if not entry:
        return InboxSource()
    if not isinstance(entry, dict):
        raise SourceConfigError(f"dataset {dataset!r}: 'source' must be a mapping with a 'kind'")
    kind = entry.get("kind", "inbox")
    if kind not in SOURCE_KINDS:
        raise SourceConfigError(
            f"dataset {dataset!r}: source kind {kind!r} is not one of {sorted(SOURCE_KINDS)}"
        )
    cls = SOURCE_KINDS[kind]
    known = {f.name for f in fields(cls)}
    unknown = set(entry) - known
    if unknown:
        raise SourceConfigError(f"dataset {dataset!r}: unknown keys {sorted(unknown)} in its {kind} source")
    try:
        return cls(**entry)
    except TypeError as err:
        raise SourceConfigError(f"dataset {dataset!r}: {kind} source: {err}") from err
    except SourceConfigError as err:
        raise SourceConfigError(f"dataset {dataset!r}: {err}") from err


@dataclass(frozen=True)
class AlertChannels:
    email_to: tuple[str, ...] = ()
    smtp_conn_id: str = "smtp_default"
    slack_conn_id: str = "slack_default"


@dataclass(frozen=True)
class Conversation:
    """A dataset's messages as conversations: one group a value of its `group_by` fields (one,
    or several in order: a parcel is its carrier and tracking number), in `order_by` order."""

    group_by: tuple[str, ...]
    order_by: str


@dataclass(frozen=True)
class Tables:
    """Where a dataset's valid rows and quarantine are published: two Iceberg tables in a
    catalog (docs/decisions/027-iceberg-tables-write-audit-publish.md). `catalog` is the name
    pyiceberg's own configuration knows it by (`.pyiceberg.yaml`, `PYICEBERG_CATALOG__<NAME>__*`);
    with none there, the embedded SQLite catalog in the lake."""

    valid: str
    quarantine: str
    namespace: str = "foodtaster"
    catalog: str = "foodtaster"

    @classmethod
    def named_after(cls, dataset: str, namespace: str = "foodtaster", catalog: str = "foodtaster") -> Tables:
        return cls(valid=dataset, quarantine=f"{dataset}_quarantine", namespace=namespace, catalog=catalog)

    def identifier(self, zone: str) -> str:
        """`<namespace>.<table>` of `valid` or `quarantine`."""
        name = {"valid": self.valid, "quarantine": self.quarantine}.get(zone)
        if name is None:
            raise ValueError(f"no table zone {zone!r}: valid or quarantine")
        return f"{self.namespace}.{name}"


TABLE_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,127}$"


def tables_from_entry(dataset: str, entry: Any, catalog: Any) -> Tables:
    """A dataset's `tables:` (valid, quarantine names) with the registry's `catalog:` (name,
    namespace); each name refused by name when it is not a plain lower-case identifier."""
    where = f"dataset {dataset!r}"
    catalog = catalog or {}
    entry = entry or {}
    for what, given, keys in (("catalog", catalog, {"name", "namespace"}),
                              ("tables", entry, {"valid", "quarantine"})):
        if not isinstance(given, dict):
            raise RegistryError(f"{where}: {what} must be a mapping with {sorted(keys)}, got {given!r}")
        if unknown := set(given) - keys:
            raise RegistryError(f"{where}: unknown keys {sorted(unknown)} in {what} (known: {sorted(keys)})")
    base = Tables.named_after(dataset, catalog.get("namespace", "foodtaster"),
                              catalog.get("name", "foodtaster"))
    names = Tables(valid=entry.get("valid", base.valid), quarantine=entry.get("quarantine", base.quarantine),
                   namespace=base.namespace, catalog=base.catalog)
    for what, value in (("catalog name", names.catalog), ("namespace", names.namespace),
                        ("valid table", names.valid), ("quarantine table", names.quarantine)):
        if not isinstance(value, str) or not re.match(TABLE_NAME_PATTERN, value):
            raise RegistryError(f"{where}: {what} {value!r} must match {TABLE_NAME_PATTERN}")
    if names.valid == names.quarantine:
        raise RegistryError(f"{where}: the valid and quarantine tables need two names, got {names.valid!r}")
    return names


@dataclass(frozen=True)
class DatasetConfig:
    name: str
    # "module:Class" of a pandera DataFrameModel, or a document: a JSON Schema file (`.json`), an
    # ODCS contract or an AsyncAPI document (`.yaml`, `x.yaml:<part>`), relative to the registry's
    # folder or absolute
    contract: str
    expectation_suite: str  # path of the GX suite JSON, relative to the project root
    schedule: str | None = "@daily"
    start_date: str = "2026-11-01"
    description: str = ""
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES  # per file, decompressed; over it: file.too_large
    alert_rate: float = 0.05
    hold_rate: float = 0.25
    disable_after: int = 5
    max_crash_isolations: int = 10  # messages a run may isolate as crashing before it fails
    # What a Python check may spend on one message before it is stopped and the message
    # isolated as a crash (foodtaster.engine.judging.guard): seconds, and memory beyond the worker's.
    python_check_timeout_s: float = DEFAULT_PYTHON_CHECK_TIMEOUT_S
    python_check_memory_mb: int = DEFAULT_PYTHON_CHECK_MEMORY_MB
    alerts: AlertChannels = field(default_factory=AlertChannels)
    source: SourceConfig = field(default_factory=InboxSource)  # where its batches come from
    # A conversation: messages with one `group_by` value, in `order_by` order. A quarantined
    # message holds the later ones of its group (foodtaster.engine.split.group_hold). Several
    # fields (a list in pipeline.yaml) make one group of the values of all of them.
    group_by: str | tuple[str, ...] | None = None
    order_by: str | None = None
    # A JSON Schema contract's keywords not to judge (JSON pointers, said in the summary), and the
    # `format`s to assert (an annotation otherwise, as the spec says).
    ignore: tuple[str, ...] = ()
    assert_formats: tuple[str, ...] = ()
    # Paths whose values no person may read, besides those the contract marks (`foodtaster.privacy`):
    # patterns such as `data.lines[].recipient`.
    personal: tuple[str, ...] = ()
    # The message's unique key (paths, one or several in order) for a contract that states none,
    # such as a JSON Schema (CloudEvents: `[source, id]`): duplicates, the poison list and redrive
    # match by it.
    key: tuple[str, ...] = ()
    # Drift (foodtaster.drift): the producer's path in a message (a `Path`, e.g. `source` for a
    # CloudEvents envelope), the share of messages at which a NEW unknown path pages, and how many
    # batches before a batch an optional field must have come in to be reported as stopped.
    producer: str = "producer"
    drift_page_share: float | None = None
    drift_window: int = 3
    # The Iceberg tables its rows are published to (`Tables`), and how long `foodtaster tables
    # maintain` keeps a published batch's tag and a snapshot no branch or tag holds.
    tables: Tables | None = None
    tag_retention_days: int = 90
    snapshot_retention_days: int = 7
    registry_dir: str = ""  # the registry file's folder: a relative contract file is found there

    def __post_init__(self) -> None:
        if self.tables is None:  # a config made in code: the tables named after the dataset
            object.__setattr__(self, "tables", Tables.named_after(self.name))

    @property
    def table_names(self) -> Tables:
        assert self.tables is not None  # set in __post_init__
        return self.tables

    @property
    def producer_path(self) -> ContractPath:
        from foodtaster.contract.path import Path as ContractPath

        return ContractPath.parse(self.producer)

    @property
    def conversation(self) -> Conversation | None:
        """`group_by` and `order_by` together (the registry refuses one without the other), or
        None when the dataset's messages are not conversations."""
        if not self.group_by or self.order_by is None:
            return None
        fields = (self.group_by,) if isinstance(self.group_by, str) else tuple(self.group_by)
        return Conversation(fields, self.order_by)

    @property
    def contract_document(self) -> tuple[Path, str | None] | None:
        """A contract given as a document, with the part it names after `:`: a JSON Schema
        (`x.json`), an ODCS data contract or an AsyncAPI document (`x.yaml`, `x.yaml:<schema
        object or message>`); None for a pandera model."""
        text = self.contract
        for suffix in DOCUMENT_SUFFIXES:
            at = text.find(suffix + ":")
            file, part = (text[:at + len(suffix)], text[at + len(suffix) + 1:]) if at > 0 else (text, None)
            if file.endswith(suffix):
                path = Path(file)
                return path if path.is_absolute() else Path(self.registry_dir or PROJECT_ROOT) / path, part
        return None

    @property
    def schema_file(self) -> Path | None:
        """A JSON Schema contract's file; None for a pandera model or a YAML document."""
        document = self.contract_document
        return document[0] if document is not None and document[0].suffix == ".json" else None

    def read_contract(self) -> Contract:
        """The dataset's contract, read into the contract model by its front-end."""
        from foodtaster.contract import read_contract

        document = self.contract_document
        if document is not None:
            from foodtaster.contract.documents import read_document

            read = read_document(document[0], document[1], ignore=self.ignore,
                                 assert_formats=self.assert_formats, carried=self.carried)
        else:
            read = read_contract(self.load_contract(), self.contract)
        return with_key(read, self.key, f"dataset {self.name!r}") if self.key else read

    @property
    def carried(self) -> frozenset[str]:
        """What the dataset's source keeps beside each message, by the AsyncAPI part that
        describes it: a Kafka record's headers and key, a NATS message's headers."""
        return {"kafka": frozenset({"headers", "bindings.kafka.key"}),
                "nats": frozenset({"headers"})}.get(self.source.kind, frozenset())

    def load_contract(self) -> type[DataFrameModel] | None:
        """A pandera contract's model class; None for a contract given as a document."""
        if self.contract_document is not None:
            return None
        module_name, _, attr = self.contract.partition(":")
        try:
            if module_name.endswith(".py"):
                return getattr(self._contract_file_module(module_name), attr)
            return getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, SyntaxError, FileNotFoundError) as err:
            raise RegistryError(
                f"dataset {self.name!r}: contract {self.contract!r} cannot be imported: {err}"
            ) from err

    def _contract_file_module(self, file: str) -> ModuleType:
        """A contract module given by its file (`contract: ../teams/orders_contract.py:Orders`,
        relative to the registry), so a contract kept outside the project needs no PYTHONPATH.
        Loaded as `CONTRACT_FILE_MODULE.<dataset>`; the engine ships it to Spark's Python
        workers by value (`foodtaster.engine.judging.python_checks`)."""
        path = Path(file)
        path = path if path.is_absolute() else Path(self.registry_dir or PROJECT_ROOT) / path
        name = f"{CONTRACT_FILE_MODULE}.{self.name}"
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"{path} is no Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    @property
    def line_read_bytes(self) -> int:
        return line_read_bytes(self.max_message_bytes)

    def suite_path(self) -> Path:
        path = Path(self.expectation_suite)
        return path if path.is_absolute() else PROJECT_ROOT / path


def with_key(contract: Contract, key: tuple[str, ...], where: str) -> Contract:
    """The contract with the registry's `key`: a field's `unique`, or a key of several fields;
    refused by name where the contract states a key of its own or a path names no field."""
    from dataclasses import replace

    from foodtaster.contract.path import Path as ContractPath

    if contract.message_key:
        raise RegistryError(f"{where}: key {list(key)} names a second key; {contract.name} states its own "
                            f"({', '.join(map(str, contract.message_key))})")
    slots = {f.path: f for f in contract.fields}
    paths = []
    for text in key:
        try:
            path = ContractPath.parse(text)
        except PathError as err:
            raise RegistryError(f"{where}: key {text!r}: {err}") from err
        slot = slots.get(path)
        if slot is None or slot.is_object or slot.is_array:
            raise RegistryError(f"{where}: key {text!r} is no field of {contract.name} outside an array "
                                "(nor an object or array itself)")
        paths.append(path)
    if len(paths) == 1:
        return replace(contract, fields=tuple(replace(f, unique=True) if f.path == paths[0] else f
                                              for f in contract.fields))
    return replace(contract, key=tuple(paths))


def registry_path() -> Path:
    return Path(os.environ.get("FOODTASTER_REGISTRY", DEFAULT_REGISTRY))


def _dataset_from_entry(name: str, entry: dict[str, Any], defaults: dict[str, Any],
                        registry_dir: str = "") -> DatasetConfig:
    if not re.match(DATASET_NAME_PATTERN, name):
        raise RegistryError(f"dataset name {name!r} must match {DATASET_NAME_PATTERN}")
    merged = {**defaults, **entry}
    alerts = {**defaults.get("alerts", {}), **entry.get("alerts", {})}
    merged["alerts"] = AlertChannels(
        email_to=tuple(alerts.get("email_to", ())),
        smtp_conn_id=alerts.get("smtp_conn_id", "smtp_default"),
        slack_conn_id=alerts.get("slack_conn_id", "slack_default"),
    )
    merged["source"] = source_from_entry(name, entry.get("source"))
    merged["tables"] = tables_from_entry(name, entry.get("tables"), merged.pop("catalog", None))
    known = set(DatasetConfig.__dataclass_fields__) - {"registry_dir"}
    unknown = set(merged) - known
    if unknown:
        raise RegistryError(f"dataset {name!r}: unknown keys {sorted(unknown)}")
    for required in ("contract", "expectation_suite"):
        if required not in merged:
            raise RegistryError(f"dataset {name!r}: {required!r} is required")
    for listed in ("ignore", "assert_formats", "personal", "key"):
        value = merged.get(listed, ())
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise RegistryError(f"dataset {name!r}: {listed} is a list of strings, got {value!r}")
        merged[listed] = tuple(value)
    if isinstance(merged.get("group_by"), list):  # several fields, in order; one listed is that field
        group_by = tuple(merged["group_by"])
        merged["group_by"] = group_by[0] if len(group_by) == 1 else group_by
    merged["personal"] = tuple(personal_pattern(p, f"dataset {name!r}: personal") for p in merged["personal"])
    schema_only = merged.get("ignore") or merged.get("assert_formats")
    if schema_only and ".json" not in str(merged.get("contract", "")) and \
            not _is_asyncapi(str(merged.get("contract", "")), registry_dir):
        raise RegistryError(f"dataset {name!r}: ignore and assert_formats are a JSON Schema contract's "
                            f"(or an AsyncAPI payload's); {merged.get('contract')!r} is neither")
    config = DatasetConfig(name=name, registry_dir=registry_dir,
                           **{k: v for k, v in merged.items() if k != "name"})
    if not 0 < config.alert_rate <= config.hold_rate <= 1:
        raise RegistryError(
            f"dataset {name!r}: need 0 < alert_rate <= hold_rate <= 1, "
            f"got {config.alert_rate} and {config.hold_rate}"
        )
    if min(config.max_message_bytes, config.max_file_bytes, config.disable_after) <= 0:
        raise RegistryError(
            f"dataset {name!r}: max_message_bytes, max_file_bytes and disable_after must be > 0"
        )
    _check_group_by(config)
    if (config.group_by is None) != (config.order_by is None):
        raise RegistryError(f"dataset {name!r}: group_by and order_by go together (a conversation "
                            "is a group of messages and their order)")
    if not isinstance(config.max_crash_isolations, int) or config.max_crash_isolations < 0:
        raise RegistryError(f"dataset {name!r}: max_crash_isolations must be an integer >= 0 "
                            f"(0: a crashing message fails the batch), got {config.max_crash_isolations!r}")
    timeout, memory = config.python_check_timeout_s, config.python_check_memory_mb
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 3600:
        raise RegistryError(f"dataset {name!r}: python_check_timeout_s must be seconds in (0, 3600], "
                            f"got {timeout!r}")
    if isinstance(memory, bool) or not isinstance(memory, int) or memory < 64:
        raise RegistryError(f"dataset {name!r}: python_check_memory_mb must be an integer >= 64, "
                            f"got {memory!r}")
    _check_drift(config)
    for days in ("tag_retention_days", "snapshot_retention_days"):
        value = getattr(config, days)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RegistryError(f"dataset {name!r}: {days} must be an integer >= 1, got {value!r}")
    return config


def _check_group_by(config: DatasetConfig) -> None:
    """`group_by`: a field's path, or a list of several (no field twice); refused by name else."""
    value = config.group_by
    if value is None or isinstance(value, str) and value:
        return
    if not isinstance(value, tuple) or not value or not all(isinstance(v, str) and v for v in value) \
            or len(set(value)) != len(value):
        raise RegistryError(f"dataset {config.name!r}: group_by is a field's path or a list of "
                            f"several different ones, got {value!r}")


def _is_asyncapi(contract: str, registry_dir: str) -> bool:
    """The contract names an AsyncAPI document (its payload is a JSON Schema)."""
    file = contract.split(":", 1)[0] if ".y" in contract else contract
    path = Path(file) if Path(file).is_absolute() else Path(registry_dir or PROJECT_ROOT) / file
    try:
        return path.suffix in (".yaml", ".yml") and "asyncapi" in (yaml.safe_load(path.read_text()) or {})
    except (OSError, yaml.YAMLError, TypeError):
        return False


def _check_drift(config: DatasetConfig) -> None:
    """The drift keys, refused by name when wrong."""
    from foodtaster.contract.path import Path as ContractPath
    from foodtaster.contract.path import PathError

    name, share, window = config.name, config.drift_page_share, config.drift_window
    try:
        producer = ContractPath.parse(config.producer) if isinstance(config.producer, str) else None
    except PathError as err:
        raise RegistryError(f"dataset {name!r}: producer {config.producer!r} is no path: {err}") from err
    if not producer or not all(isinstance(step, str) for step in producer.steps):
        raise RegistryError(f"dataset {name!r}: producer must be a path through objects (e.g. `source`, "
                            f"`meta.service`), got {config.producer!r}")
    if share is not None and (isinstance(share, bool) or not isinstance(share, int | float)
                              or not 0 < share <= 1):
        raise RegistryError(f"dataset {name!r}: drift_page_share must be a share in (0, 1], got {share!r}")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise RegistryError(f"dataset {name!r}: drift_window must be an integer >= 1, got {window!r}")


def load_registry(path: str | Path | None = None) -> dict[str, DatasetConfig]:
    path = Path(path) if path else registry_path()
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError as err:
        raise RegistryError(f"registry {path} not found") from err
    defaults = document.get("defaults", {}) or {}
    datasets = document.get("datasets") or {}
    if not isinstance(datasets, dict):
        raise RegistryError(f"{path}: 'datasets' must be a mapping of name to entry")
    folder = str(path.resolve().parent)
    return {name: _dataset_from_entry(name, entry or {}, defaults, folder)
            for name, entry in datasets.items()}


def tables_of(dataset: str, path: str | Path | None = None) -> Tables:
    """A dataset's tables as the registry names them; named after the dataset when the registry
    does not list it (a dataset configured in code, as the tests and the benchmark do)."""
    found = load_registry(path).get(dataset)
    return found.table_names if found is not None else Tables.named_after(dataset)


def get_dataset(name: str, path: str | Path | None = None) -> DatasetConfig:
    datasets = load_registry(path)
    if name not in datasets:
        raise RegistryError(f"dataset {name!r} is not in the registry (known: {sorted(datasets)})")
    return datasets[name]
