"""The ODCS front-end: an Open Data Contract Standard 3.x document read into the contract model.

The document is parsed by the standard's own pydantic model (`open_data_contract_standard`,
the Bitol project's), then one schema object (the one the dataset names, or the only one) is
read slot by slot, as a pandera model is (docs/judging.md, "ODCS contracts"):

- a property at any depth: `logicalType` string, integer, number, boolean, date, timestamp (an
  ISO-8601 string with a zone, written as a timestamp), object (its `properties` under it), array
  (its `items`, an object's properties or one scalar); `required` (present and not null),
  `unique`, `primaryKey` with `primaryKeyPosition` (a key of several properties in that order);
- `logicalTypeOptions` as checks: minLength/maxLength, pattern (found anywhere in the string, as
  ECMA-262 and JSON Schema read it), minimum/maximum and their exclusive forms, an integer's
  `format` as its range, an array's minItems/maxItems;
- `classification` other than public, internal or unclassified marks the value personal;
- a property's `library` quality rule that every row must pass (nullValues, missingValues,
  invalidValues with validValues or a pattern, duplicateValues, each `mustBe: 0`) as a row rule;
  a rule on a share of the batch (`unit: percent`) and the schema's own rules (rowCount,
  duplicateValues over properties) as expectations the batch gate adds to the dataset's suite,
  each named by the rule's ODCS name.

What has no meaning for judging a message (servers, SLAs, pricing, team, roles, support,
descriptions, `text` quality rules) is passed over and listed (`Contract.passed_over`); a type,
an option or a quality rule Foodtaster cannot judge exactly is refused by name here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path as FilePath
from typing import Any

from foodtaster.contract.document_text import load
from foodtaster.contract.model import (
    ARRAY,
    OBJECT,
    SCALAR_ITEM,
    Check,
    Contract,
    ContractError,
    FieldRule,
    JsonType,
    Scope,
)
from foodtaster.contract.path import Path

NOT_PERSONAL = ("public", "internal", "unclassified")
# The document's top-level parts that say nothing about a message: passed over, and listed.
PASSED_OVER = ("servers", "slaProperties", "slaDefaultElement", "price", "team", "roles", "support",
               "description", "authoritativeDefinitions", "customProperties", "tags", "context",
               "contractCreatedTs", "tenant", "domain", "dataProduct", "status")
_SCALAR_TYPES = {"string": JsonType("string"), "integer": JsonType("integer"), "number": JsonType("number"),
                 "boolean": JsonType("boolean"), "date": JsonType("date"), "timestamp": JsonType("string")}
# An integer's `format` as the range it asserts; i64 is the integer type's own range.
_INTEGER_FORMATS = {"i8": (-2**7, 2**7 - 1), "i16": (-2**15, 2**15 - 1), "i32": (-2**31, 2**31 - 1),
                    "i64": None, "u8": (0, 2**8 - 1), "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1)}
_BOUNDS = {"minimum": "greater_than_or_equal_to", "exclusiveMinimum": "greater_than",
           "maximum": "less_than_or_equal_to", "exclusiveMaximum": "less_than"}
_ROW_METRICS = ("nullValues", "missingValues", "invalidValues", "duplicateValues")
_OPERATORS = ("mustBe", "mustNotBe", "mustBeGreaterThan", "mustBeGreaterOrEqualTo", "mustBeLessThan",
              "mustBeLessOrEqualTo", "mustBeBetween", "mustNotBeBetween")


@dataclass(frozen=True)
class Expectation:
    """A batch-gate expectation a contract adds to the dataset's suite: a Great Expectations
    expectation (`type`, `kwargs`) and the name the contract gives it (shown in Data Docs)."""

    name: str
    type: str
    kwargs: tuple[tuple[str, Any], ...]

    def configuration(self) -> dict[str, Any]:
        """As a suite's JSON lists it, its name in `meta`."""
        return {"type": self.type, "kwargs": dict(self.kwargs),
                "meta": {"why": f"ODCS quality rule {self.name}", "contract_rule": self.name}}


def is_odcs(document: Any) -> bool:
    return isinstance(document, dict) and (document.get("kind") == "DataContract"
                                           or "apiVersion" in document and "schema" in document)


def read_odcs(file: str | FilePath, schema_name: str | None = None) -> Contract:
    """One schema object of an ODCS document as a contract, or a ContractError naming what
    cannot be judged and where."""
    from open_data_contract_standard.model import OpenDataContractStandard
    from pydantic import ValidationError

    path = FilePath(file).resolve()
    document = load(path, "ODCS contract")
    if not is_odcs(document):
        raise ContractError(f"{path.name} is no ODCS data contract (kind: DataContract, apiVersion, schema)")
    try:
        odcs = OpenDataContractStandard(**document)
    except ValidationError as err:
        raise ContractError(f"{path.name} is no ODCS 3.x document: {_first_error(err)}") from err
    version = str(odcs.apiVersion or "")
    if not version.lstrip("v").startswith("3."):
        raise ContractError(f"{path.name}: apiVersion {odcs.apiVersion!r}; ODCS 3.x is read (v3.0.x, v3.1.x, "
                            "v3.2.x)")
    schema = _schema_object(odcs.schema_ or [], schema_name, path.name)
    owner = f"{path.name}:{schema.name}"
    reader = _Reader(owner)
    fields = reader.scope(schema.properties or [], Path(), root=True)
    for rule in schema.quality or []:
        reader.schema_quality(rule)
    key = reader.key()
    if len(key) == 1:  # a key of one property is that property's `unique`
        fields = [replace(f, unique=True) if f.path == key[0] else f for f in fields]
        key = ()
    passed = [name for name in PASSED_OVER if document.get(name) not in (None, [], {})]
    passed += reader.passed_over
    others = [s.name for s in odcs.schema_ or [] if s is not schema]
    passed += [f"schema {name} (another schema object)" for name in others]
    return Contract(name=str(schema.name), fields=tuple(fields), strict=False, source=f"{path}:{schema.name}",
                    key=key, expectations=tuple(reader.expectations), passed_over=tuple(passed))


def _first_error(err: Any) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"{where}: {first.get('msg')}"


def _schema_object(objects: list[Any], name: str | None, file: str) -> Any:
    names = [o.name for o in objects]
    if name is None:
        if len(objects) != 1:
            raise ContractError(f"{file} has {len(objects)} schema objects ({', '.join(map(str, names))}); "
                                "name one: contract: <file>:<schema name>")
        found = objects[0]
    else:
        matches = [o for o in objects if o.name == name]
        if not matches:
            raise ContractError(f"{file} has no schema object {name!r}; its schema objects: "
                                + ", ".join(map(str, names)))
        found = matches[0]
    if not found.name:
        raise ContractError(f"{file}: a schema object needs a name")
    if not found.properties:
        raise ContractError(f"{file}:{found.name}: a schema object with no property")
    return found


class _Reader:
    """Reads the properties of one schema object; gathers its key, expectations and what it
    passed over."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.keyed: list[tuple[int, Path]] = []
        self.expectations: list[Expectation] = []
        self.passed_over: list[str] = []

    def scope(self, properties: list[Any], at: Path, *, root: bool) -> list[FieldRule]:
        fields: list[FieldRule] = []
        seen: set[str] = set()
        for prop in properties:
            if not prop.name:
                raise ContractError(f"{self.owner}: a property under {at or 'the schema'} has no name")
            if prop.name in seen:
                raise ContractError(f"{self.owner}: {at.key(prop.name)} is named twice")
            seen.add(prop.name)
            fields += self.slot(prop, at, Path.of(prop.name), root=root)
        return fields

    def slot(self, prop: Any, base: Path, path: Path, *, root: bool) -> list[FieldRule]:
        """A property's slot (its path `path` in its scope, `base / path` in the message), and
        the slots under it when it is an object."""
        where = f"{self.owner}: {base / path}"
        kind = prop.logicalType
        if kind is None:
            raise ContractError(f"{where} has no logicalType; give one of "
                                + ", ".join((*_SCALAR_TYPES, "object", "array")))
        required = bool(prop.required or prop.primaryKey)
        checks = self.options(prop, where)
        unique = bool(prop.unique)
        for rule in prop.quality or []:
            found = self.property_quality(rule, prop, base / path, where)
            if found == "not_null":
                required = True
            elif found == "unique":
                unique = True
            elif isinstance(found, Check):
                checks.append(found)
        if prop.primaryKey:
            if not root or kind in ("object", "array"):
                raise ContractError(f"{where}: only a scalar property of the message itself can be a "
                                    "primary key")
            self.keyed.append((prop.primaryKeyPosition if prop.primaryKeyPosition not in (None, -1)
                               else 0, path))
        if unique and (not root or kind in ("object", "array")):
            raise ContractError(f"{where}: only a scalar property of the message itself can be unique")
        if prop.map is not None or kind in ("map", "vector", "time"):
            raise ContractError(f"{where}: logicalType {kind!r} is not judged here; one of "
                                + ", ".join((*_SCALAR_TYPES, "object", "array")))
        if prop.enum:
            values = [e.value for e in prop.enum if e.value is not None]
            checks.append(Check("isin", {"allowed_values": values}))
        personal = bool(prop.classification) and str(prop.classification).lower() not in NOT_PERSONAL
        common: dict[str, Any] = {"required": required, "nullable": not required,
                                  "unique": unique and not prop.primaryKey, "personal": personal}
        if kind == "object":
            if checks:
                raise ContractError(f"{where}: an object takes no checks; put them on its properties")
            if not prop.properties:
                raise ContractError(f"{where}: an object with no property under it; name its properties")
            inner = self.scope(prop.properties, base / path, root=False)
            return [FieldRule(path=path, json_type=OBJECT, checks=(), **common),
                    *(_under(path, f) for f in inner)]
        if kind == "array":
            return [FieldRule(path=path, json_type=ARRAY, checks=tuple(checks),
                              items=self.items(prop.items, base / path, where), **common)]
        if prop.properties or prop.items is not None:
            raise ContractError(f"{where}: a {kind} has no properties or items; make it an object or array")
        if kind == "timestamp":
            checks.insert(0, Check("iso_timestamp", {}))
        return [FieldRule(path=path, json_type=_SCALAR_TYPES[kind], checks=tuple(checks), **common)]

    def items(self, items: Any, at: Path, where: str) -> Scope:
        if items is None:
            raise ContractError(f"{where}: an array needs its items (a property with a logicalType)")
        if items.logicalType == "object":
            if not items.properties:
                raise ContractError(f"{where}[]: an object with no property under it")
            return Scope(tuple(self.scope(items.properties, at.each(), root=False)), strict=False)
        if items.logicalType == "array":
            raise ContractError(f"{where}: an array of arrays is not supported")
        inner = items.model_copy(update={"name": SCALAR_ITEM})
        (value,) = self.slot(inner, at.each(), Path.of(SCALAR_ITEM), root=False)
        return Scope((value,), strict=False, scalar=True)

    def options(self, prop: Any, where: str) -> list[Check]:
        options = dict(prop.logicalTypeOptions or {})
        kind = prop.logicalType
        checks: list[Check] = []
        if kind == "string":
            low, high = options.pop("minLength", None), options.pop("maxLength", None)
            if low is not None or high is not None:
                checks.append(Check("str_length", {"min_value": low, "max_value": high, "exact_value": None}))
            if "pattern" in options:  # ECMA-262 as JSON Schema reads it: found anywhere in the string
                checks.append(Check("str_contains", {"pattern": options.pop("pattern")}))
        elif kind in ("integer", "number"):
            for option, name in _BOUNDS.items():
                if option in options:
                    bound = options.pop(option)
                    if isinstance(bound, bool):  # ODCS 3.0's boolean exclusive flags
                        raise ContractError(f"{where}: logicalTypeOptions.{option} is a boolean; write the "
                                            "bound itself (ODCS 3.1: exclusiveMinimum: 0)")
                    checks.append(Check(name, {"min_value" if "greater" in name else "max_value": bound}))
            if "multipleOf" in options:
                checks.append(Check("multiple_of", {"value": options.pop("multipleOf")}))
            if kind == "integer" and "format" in options:
                written = options.pop("format")
                if written not in _INTEGER_FORMATS:
                    raise ContractError(f"{where}: integer format {written!r} is not judged here; one of "
                                        + ", ".join(_INTEGER_FORMATS))
                bounds = _INTEGER_FORMATS[written]
                if bounds is not None:
                    checks.append(Check("in_range", {"min_value": bounds[0], "max_value": bounds[1],
                                                     "include_min": True, "include_max": True}))
            if kind == "number" and options.get("format") in ("f64", "double"):
                options.pop("format")
        elif kind == "array":
            for option, name in (("minItems", "greater_than_or_equal_to"),
                                 ("maxItems", "less_than_or_equal_to")):
                if option in options:
                    checks.append(Check(name, {"min_value" if "greater" in name else "max_value":
                                               options.pop(option)}))
        elif kind == "timestamp":
            if options.get("timezone", True) is not True:
                raise ContractError(f"{where}: a timestamp without a zone (timezone: false) is not judged "
                                    "here: a timestamp is ISO-8601 with Z or an offset")
            options.pop("timezone", None)
            _refuse_timestamp_options(options, where)
        elif kind == "date":
            if options.get("format") in ("yyyy-MM-dd", "YYYY-MM-DD"):
                options.pop("format")
            for option, name in _BOUNDS.items():
                if option in options:
                    bound = _date(options.pop(option), f"{where}: logicalTypeOptions.{option}")
                    checks.append(Check(name, {"min_value" if "greater" in name else "max_value": bound}))
        if options:
            raise ContractError(f"{where}: logicalTypeOptions {sorted(options)} of a {kind} are not judged "
                                "here; remove them or say them as a quality rule")
        return checks

    def property_quality(self, rule: Any, prop: Any, at: Path, where: str) -> Check | str | None:
        """A property's quality rule: a row rule (a Check, or `not_null`, `unique`), or an
        expectation added to the gate (None), or a rule passed over (None)."""
        metric = self._metric(rule, where)
        if metric is None:
            return None
        name = rule.name or rule.id or f"{at}.{metric}"
        operator, value = _operator(rule, where)
        args = dict(rule.arguments or {})
        every_row = operator == "mustBe" and value == 0 and (rule.unit or "rows") in ("rows", "percent")
        if every_row:
            if metric == "nullValues" and not args:
                return "not_null"
            if metric == "duplicateValues" and not args:
                return "unique"
            if metric == "missingValues":
                missing = [v for v in args.pop("missingValues", [None]) if v is not None]
                _no_more(args, where, metric)
                return Check("notin", {"forbidden_values": missing}) if missing else "not_null"
            if metric == "invalidValues":
                if "validValues" in args:
                    allowed = [v for v in args.pop("validValues") if v is not None]  # null: `required`'s
                    _no_more(args, where, metric)
                    return Check("isin", {"allowed_values": allowed})
                if "pattern" in args:
                    pattern = args.pop("pattern")
                    _no_more(args, where, metric)
                    return Check("str_contains", {"pattern": pattern})
        share = operator in ("mustBeLessThan", "mustBeLessOrEqualTo")
        if rule.unit == "percent" and share and "[]" not in str(at):
            # a share of the batch: the gate's expectation, `mostly` the share of rows that pass
            mostly = ("mostly", round(1 - float(value) / 100, 6))
            column = ("column", str(at))
            if metric in ("nullValues", "missingValues") and not args:
                self.expectations.append(Expectation(str(name), "expect_column_values_to_not_be_null",
                                                     (column, mostly)))
                return None
            if metric == "invalidValues" and set(args) == {"validValues"}:
                values = [v for v in args["validValues"] if v is not None]
                self.expectations.append(Expectation(str(name), "expect_column_values_to_be_in_set",
                                                     (column, ("value_set", values), mostly)))
                return None
            if metric == "invalidValues" and set(args) == {"pattern"}:
                self.expectations.append(Expectation(str(name), "expect_column_values_to_match_regex",
                                                     (column, ("regex", args["pattern"]), mostly)))
                return None
        raise ContractError(f"{where}: quality rule {name!r} ({metric} {operator} {value!r}"
                            f"{' ' + rule.unit if rule.unit else ''}) is not judged here: a property's rule "
                            "is every row's (mustBe: 0), or a share of the batch's rows (unit: percent, "
                            "mustBeLessThan or mustBeLessOrEqualTo) on a property of the message itself")

    def schema_quality(self, rule: Any) -> None:
        """A schema object's own quality rule, as an expectation of the batch gate."""
        where = f"{self.owner}"
        metric = self._metric(rule, where)
        if metric is None:
            return
        name = str(rule.name or rule.id or metric)
        operator, value = _operator(rule, where)
        args = dict(rule.arguments or {})
        if metric == "rowCount" and not args:
            low, high = {"mustBe": (value, value), "mustBeGreaterThan": (int(value) + 1, None),
                         "mustBeGreaterOrEqualTo": (value, None), "mustBeLessThan": (None, int(value) - 1),
                         "mustBeLessOrEqualTo": (None, value)}.get(operator, (None, None))
            if operator == "mustBeBetween":
                low, high = value
            if low is None and high is None:
                raise ContractError(f"{where}: quality rule {name!r} (rowCount {operator}) is not judged "
                                    "here")
            kwargs = tuple((k, v) for k, v in (("min_value", low), ("max_value", high)) if v is not None)
            self.expectations.append(Expectation(name, "expect_table_row_count_to_be_between", kwargs))
            return
        every_row = operator == "mustBe" and value == 0
        if metric == "duplicateValues" and every_row and set(args) == {"properties"}:
            columns = [str(Path.parse(str(p))) for p in args["properties"]]
            if len(columns) == 1:
                self.expectations.append(Expectation(name, "expect_column_values_to_be_unique",
                                                     (("column", columns[0]),)))
            else:
                self.expectations.append(Expectation(name, "expect_compound_columns_to_be_unique",
                                                     (("column_list", columns),)))
            return
        raise ContractError(f"{where}: the schema's quality rule {name!r} ({metric} {operator}) is not "
                            "judged "
                            "here: rowCount, or duplicateValues over `properties` with mustBe: 0")

    def _metric(self, rule: Any, where: str) -> str | None:
        kind = rule.type or "library"
        if kind == "text":
            self.passed_over.append(f"quality {rule.name or rule.description or 'text'} (text)")
            return None
        if kind != "library":
            named = rule.name or rule.query or rule.engine
            raise ContractError(f"{where}: a {kind} quality rule ({named}) is not judged here: only library "
                                "metrics are (" + ", ".join((*_ROW_METRICS, "rowCount")) + ")")
        metric = rule.metric or rule.rule
        if metric not in (*_ROW_METRICS, "rowCount"):
            raise ContractError(f"{where}: quality metric {metric!r} is not one of "
                                + ", ".join((*_ROW_METRICS, "rowCount")))
        return str(metric)

    def key(self) -> tuple[Path, ...]:
        """The primary key's properties in their positions (a key of one or several)."""
        positions = [p for p, _ in self.keyed]
        if len(self.keyed) > 1 and (0 in positions or len(set(positions)) != len(positions)):
            raise ContractError(f"{self.owner}: a primary key of several properties needs each its own "
                                f"primaryKeyPosition (1, 2, ...), got {positions}")
        return tuple(path for _, path in sorted(self.keyed, key=lambda kp: kp[0]))


def _operator(rule: Any, where: str) -> tuple[str, Any]:
    given = [(name, getattr(rule, name)) for name in _OPERATORS if getattr(rule, name) is not None]
    if len(given) != 1:
        raise ContractError(f"{where}: quality rule {rule.name or rule.metric!r} needs one operator "
                            f"({', '.join(_OPERATORS)}), got {[n for n, _ in given] or 'none'}")
    return given[0]


def _refuse_timestamp_options(options: dict[str, Any], where: str) -> None:
    """A timestamp's `format` and bounds, each refused by name with why (not yet judged: a bound
    is on the instant, offsets considered, which no check here compares; the text is read as
    ISO-8601 with a zone whatever a `format` says)."""
    if "format" in options:
        raise ContractError(
            f"{where}: logicalTypeOptions.format {options['format']!r} of a timestamp is not judged here: a "
            "timestamp is read as ISO-8601 with Z or an offset (2026-11-20T10:00:00Z), whatever its format "
            "says; remove format, or make the property a string with a pattern")
    for option in _BOUNDS:
        if option in options:
            raise ContractError(
                f"{where}: logicalTypeOptions.{option} of a timestamp is not judged here (a bound on an "
                "instant, its offset counted, is no check here yet; a date's bounds are): remove it, or "
                "bound a date property instead")


def _date(value: Any, where: str) -> date:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError as err:
        raise ContractError(f"{where}: {value!r} is no date (YYYY-MM-DD)") from err


def _no_more(args: dict[str, Any], where: str, metric: str) -> None:
    if args:
        raise ContractError(f"{where}: {metric}'s arguments {sorted(args)} are not judged here")


def _under(parent: Path, rule: FieldRule) -> FieldRule:
    """An object's property placed under it in the scope (its path from the scope's root)."""
    return replace(rule, path=parent / rule.path)
