"""A key of several fields, wherever a contract states one (pandera's `Config.unique`, an ODCS
primary key, the registry's `key`), as the engine takes it (`judging.unique_key`), printed and
masked (`engine.masking.holding_regex`). No Spark session: the engine's Spark side is held by
`tests/integration/test_composite_key.py`."""

from __future__ import annotations

import json
import re
import textwrap

import pandera.pandas as pa
import pytest
from pandera.typing import Series

from foodtaster.contract import read_contract
from foodtaster.contract.describe import describe
from foodtaster.contract.model import ContractError, Key
from foodtaster.contract.path import Path
from foodtaster.engine.judging.judging import unique_key
from foodtaster.engine.judging.masking import holding_regex
from foodtaster.privacy import Masker
from foodtaster.registry import RegistryError, load_registry


class Parcel(pa.DataFrameModel):
    carrier: Series[str]
    tracking_no: Series[str]
    email: Series[str] = pa.Field(metadata={"personal": True})

    class Config:
        unique = ["tracking_no", "carrier"]


def test_config_unique_is_one_key_of_several_fields_in_its_order():
    contract = read_contract(Parcel)
    key = unique_key(contract)
    assert key == Key((Path.of("tracking_no"), Path.of("carrier")))
    assert str(key) == "(tracking_no,carrier)"
    assert [r.path for r in describe(contract) if r.key] == ["carrier", "tracking_no"]
    assert str(unique_key(read_contract(_one_unique()))) == "id"


def _one_unique():
    class One(pa.DataFrameModel):
        id: Series[str] = pa.Field(unique=True)

    return One


def test_a_key_and_a_unique_field_are_two_keys_refused_by_name():
    class Both(pa.DataFrameModel):
        a: Series[str] = pa.Field(unique=True)
        b: Series[str]
        c: Series[str]

        class Config:
            unique = ["b", "c"]

    with pytest.raises(ContractError, match=r"a key of several fields and unique fields \['a'\]"):
        unique_key(read_contract(Both))


def test_the_registry_gives_a_json_schema_its_key(tmp_path):
    (tmp_path / "event.schema.json").write_text(json.dumps({
        "type": "object", "required": ["source", "id"],
        "properties": {"source": {"type": "string"}, "id": {"type": "string"},
                       "data": {"type": "object", "properties": {"n": {"type": "integer"}}}}}))
    (tmp_path / "pipeline.yaml").write_text(textwrap.dedent("""\
        datasets:
          cloud:
            contract: event.schema.json
            expectation_suite: expectations/customers.json
            key: [source, id]
          one:
            contract: event.schema.json
            expectation_suite: expectations/customers.json
            key: [id]
          wrong:
            contract: event.schema.json
            expectation_suite: expectations/customers.json
            key: [data]
        """))
    datasets = load_registry(tmp_path / "pipeline.yaml")
    cloud = datasets["cloud"].read_contract()
    assert str(unique_key(cloud)) == "(source,id)"
    assert [r.path for r in describe(cloud) if r.key] == ["source", "id"]
    assert unique_key(datasets["one"].read_contract()) == Key((Path.of("id"),))
    with pytest.raises(RegistryError, match="key 'data' is no field of event"):
        datasets["wrong"].read_contract()


def test_a_conflict_of_a_key_holding_a_personal_field_is_masked():
    regex = holding_regex(Masker.of(["email"], b"k"))
    assert re.match(regex, "(carrier,email)") and re.match(regex, "(email,carrier)")
    assert not re.match(regex, "(carrier,tracking_no)") and not re.match(regex, "(emails,carrier)")
