"""`Path`: one value type for a place in a message, one printed form, parsed back exactly."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from foodtaster.contract.path import EACH, Path, PathError
from foodtaster.engine.judging.layers import column_name

KEYS = st.text(max_size=8)
STEPS = st.lists(st.one_of(KEYS, st.integers(0, 10**6), st.just(EACH)), max_size=6)


@given(STEPS)
def test_every_path_prints_to_a_text_that_parses_back_to_it(steps):
    path = Path(tuple(steps))
    assert Path.parse(str(path)) == path


@given(st.lists(KEYS, min_size=1, max_size=4), st.lists(KEYS, min_size=1, max_size=4))
def test_two_paths_print_apart_and_use_apart_columns(a, b):
    first, second = Path(tuple(a)), Path(tuple(b))
    if first != second:
        assert str(first) != str(second)
        assert column_name(first) != column_name(second)
    assert column_name(first).replace("_", "").isalnum()


@pytest.mark.parametrize(("path", "text"), [
    (Path.of("data", "customer", "email"), "data.customer.email"),
    (Path.of("data", "lines").index(2).key("qty"), "data.lines[2].qty"),
    (Path.of("data", "lines").each().key("qty"), "data.lines[].qty"),
    (Path.of("data", "app.name"), 'data["app.name"]'),
    (Path.of("app.name", "version"), '["app.name"].version'),
    (Path.of("a[1]"), '["a[1]"]'),
    (Path.of('say "hi"'), '["say \\"hi\\""]'),
    (Path.of(""), '[""]'),
    (Path.of("tab\there"), '["tab\\there"]'),
    (Path.of("ünï", "çödé"), "ünï.çödé"),
    (Path(), ""),
])
def test_a_key_that_could_be_read_two_ways_is_quoted(path, text):
    assert str(path) == text
    assert Path.parse(text) == path


def test_the_pattern_names_every_element_and_keeps_quoted_keys():
    path = Path.parse('data.lines[12]["a[3]"].qty')
    assert str(path.pattern) == 'data.lines[]["a[3]"].qty'
    assert path.pattern.steps[2] is EACH


@pytest.mark.parametrize(("text", "words"), [
    ("a..b", "an empty key is written"),
    (".a", "a dot stands between two steps"),
    ("a.", "a dot stands between two steps"),
    ("a[x]", "'[' opens an index"),
    ("a[1", "'[' opens an index"),
    ('a["b', "a quoted key is a JSON string"),
    ('a["b"', "a quoted key ends with"),
    ("a]b", "needs quoting"),
    ('a"b', "needs quoting"),
    ("a[1]b", "a key follows a dot"),
])
def test_a_text_that_names_no_place_is_refused_with_where(text, words):
    with pytest.raises(PathError) as error:
        Path.parse(text)
    assert words in str(error.value)


def test_keys_are_only_for_paths_through_objects():
    assert Path.parse('a["b.c"]').keys == ("a", "b.c")
    with pytest.raises(PathError, match="goes through an array"):
        Path.parse("a[2].b").keys  # noqa: B018


def test_relations_between_paths():
    path = Path.parse("data.customer.address.zip")
    assert [str(p) for p in path.ancestors()] == ["data", "data.customer", "data.customer.address"]
    assert path.is_under(Path.of("data")) and not path.is_under(path)
    assert path.relative_to(Path.of("data", "customer")) == Path.of("address", "zip")
    assert Path.of("data") / Path.of("x") == Path.of("data", "x")


def test_the_contract_model_and_the_oracle_work_where_spark_cannot_be_imported():
    """The model imports neither Spark nor pandera; the pandera front-end and the oracle judge
    with pyspark made unimportable (pandera itself imports pyspark where it is installed)."""
    code = (
        "import sys\n"
        "import foodtaster.contract.model, foodtaster.contract.path\n"
        "assert 'pandera' not in sys.modules and 'pyspark' not in sys.modules, 'model'\n"
        "sys.modules['pyspark'] = None\n"
        "import foodtaster_dev.oracle as oracle\n"
        "from foodtaster.contract import read_contract\n"
        "from contracts.order_events import OrderEvents\n"
        "contract = read_contract(OrderEvents)\n"
        "print(sorted(oracle.failed_reasons({'id': 'x'}, OrderEvents, contract))[0])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "('data.customer.email.required', 'data.customer.email')"


def test_a_quoted_key_with_a_dot_is_one_column_of_a_table():
    """The lake's readers parse a path, never split it at a dot (`data["app.name"]` is two keys)."""
    import pyarrow as pa

    from foodtaster.state.browse import column_at, root_column

    data = pa.array([{"app.name": "shop", "app": {"name": "wrong"}}])
    table = pa.table({"data": data, "app.name": ["top"]})
    assert column_at(table, 'data["app.name"]').to_pylist() == ["shop"]
    assert column_at(table, "data.app.name").to_pylist() == ["wrong"]
    assert column_at(table, '["app.name"]').to_pylist() == ["top"]
    assert (root_column('data["app.name"]'), root_column('["app.name"]')) == ("data", "app.name")
