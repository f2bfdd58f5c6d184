"""Which columns the batch gate hands to Great Expectations."""

from foodtaster.engine.gate.gate import load_suite, suite_columns
from foodtaster.registry import get_dataset


def test_the_orders_suite_reads_three_columns():
    suite = load_suite(get_dataset("orders").suite_path())
    assert suite_columns(suite) == ["message_id", "created_at", "amount"]


def test_an_expectation_on_the_table_shape_gets_every_column():
    suite = {"expectations": [
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "a"}},
        {"type": "expect_table_columns_to_match_set", "kwargs": {"column_set": ["a", "b"]}},
    ]}
    assert suite_columns(suite) is None


def test_pair_and_list_expectations_name_their_columns_once():
    suite = {"expectations": [
        {"type": "expect_column_pair_values_a_to_be_greater_than_b",
         "kwargs": {"column_A": "x", "column_B": "y"}},
        {"type": "expect_compound_columns_to_be_unique", "kwargs": {"column_list": ["y", "z"]}},
        {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 1}},
    ]}
    assert suite_columns(suite) == ["x", "y", "z"]


def test_great_expectations_is_imported_ahead_on_a_thread_in_a_fresh_process():
    """The job starts the gate's imports while Spark works (gate.import_ahead): in a fresh
    process they are not loaded before, and are after the thread ends."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from foodtaster.engine.gate.gate import _GX_MODULES, import_ahead\n"
        "assert not any(m in sys.modules for m in _GX_MODULES), 'loaded before'\n"
        "thread = import_ahead()\n"
        "assert import_ahead() is thread, 'a second thread'\n"
        "thread.join(120)\n"
        "assert not thread.is_alive() and all(m in sys.modules for m in _GX_MODULES)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
