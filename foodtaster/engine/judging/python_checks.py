"""A contract's checks written in Python, run as pandas UDFs: each gives a verdict column a
row (`layers.python_check_column`: true, false, or null where not judged) that the rules read
(`row_checks.field_checks`). The only rules that run Python on a message, so the only ones that
can crash on one (`foodtaster.engine.batch.crash`); each call of a check runs guarded
(`foodtaster.engine.judging.guard`): its process dying or running past its budget fails the task
with a traceback, as a check that raises does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pandas as pd
from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from foodtaster.contract.model import Contract, PythonCheck
from foodtaster.contract.path import Path
from foodtaster.engine.judging import layers
from foodtaster.engine.judging.guard import DEFAULT_BUDGET, Budget, CheckTimedOut, guarded
from foodtaster.registry import CONTRACT_FILE_MODULE


def python_check_verdicts(python_check: PythonCheck, values: pd.Series, judged: pd.Series) -> pd.Series:
    """pandera's verdict on the `judged` values (true, false, or NA where not judged).

    The values are typed as the reference types them (`str(column.dtype)`): Spark gives a
    long column without nulls as int64, and `judged` says which rows have a value, so the
    value never takes a detour through float64. A check that answers for the whole Series
    (one bool) is asked again one value at a time: a row's verdict is its own, as in the
    reference's one-row frames. A check that raises is not caught: that is a data crash
    (foodtaster.engine.batch.crash).
    """
    verdicts = pd.Series(pd.NA, index=values.index, dtype="boolean")
    present = values[judged.astype(bool)].astype(python_check.dtype)
    if present.empty:
        return verdicts
    run = python_check.check
    output = run(present).check_output
    if not isinstance(output, pd.Series):
        output = pd.Series([bool(run(present.iloc[[i]]).check_output) for i in range(len(present))],
                           index=present.index)
    verdicts[present.index] = output.astype(bool)
    return verdicts


def guarded_verdicts(python_check: PythonCheck, values: pd.Series, judged: pd.Series,
                     budget: Budget) -> pd.Series:
    """`python_check_verdicts` in a guarded child process (`guard.guarded`). The call on the
    whole chunk gets the budget of one message; past it, the chunk is judged again a message
    at a time, each with its own budget: a chunk slow only as a whole is judged, a message
    the check never finishes is a `CheckTimedOut`."""
    what = f"check {python_check.rule}"
    try:
        return guarded(lambda tick: python_check_verdicts(python_check, values, judged), budget, what)
    except CheckTimedOut:
        if int(judged.astype(bool).sum()) <= 1:
            raise

    def one_at_a_time(tick) -> pd.Series:
        verdicts = []
        for i in range(len(values)):
            tick()
            verdicts.append(python_check_verdicts(python_check, values.iloc[i:i + 1], judged.iloc[i:i + 1]))
        return pd.concat(verdicts)

    return guarded(one_at_a_time, budget, what)


def with_python_checks(rows: DataFrame, contract: Contract, skip: Column | None = None,
                       budget: Budget = DEFAULT_BUDGET) -> DataFrame:
    """Add each Python check's verdict column (`layers.python_check_column`) to rows from `layers.parse`.

    One pandas UDF a check, reading the field's typed value where its JSON type was right
    (a wrong type is the type rule's reason, as pandera skips such values); `skip` marks rows
    never given to the check (a listed message: a crash found once is not met again);
    `budget` what one message may cost a check (`guard.Budget`).
    """
    for python_check in contract.python_checks:
        value = F.col(layers.value_column(python_check.path))
        judged = value.isNotNull() if skip is None else value.isNotNull() & ~skip
        filler = F.lit(_FILLERS[_spark_type_name(rows, python_check.path)])
        verdict = _python_check_udf(python_check, budget)(F.coalesce(value, filler), judged)
        rows = rows.withColumn(layers.python_check_column(python_check), F.when(judged, verdict))
    return rows


def _ship_contract_files() -> None:
    """A contract loaded from its file (`registry.CONTRACT_FILE_MODULE`) is no module a Python
    worker can import: its checks travel by value."""
    for name, module in list(sys.modules.items()):
        if name.startswith(CONTRACT_FILE_MODULE + "."):
            cloudpickle.register_pickle_by_value(module)


_FILLERS = {"string": "", "bigint": 0, "double": 0.0, "boolean": False}


def _spark_type_name(rows: DataFrame, name: Path) -> str:
    return rows.schema[layers.value_column(name)].dataType.simpleString()


def _python_check_udf(python_check: PythonCheck, budget: Budget) -> Callable[..., Column]:
    _ship_contract_files()

    @F.pandas_udf(BooleanType())  # type: ignore[call-overload]
    def verdicts(values: pd.Series, judged: pd.Series) -> pd.Series:
        return guarded_verdicts(python_check, values, judged, budget)

    return verdicts
