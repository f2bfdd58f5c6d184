"""Orders with custom checks written in Python: what the engine runs as pandas UDFs.

`OrdersChecked` adds a vectorised check a contract might really use (an amount in whole
cents); the differential test holds Spark to pandera on it. `OrdersCrashing` adds one that
raises on a value it was never written for (`items` 13), as a buggy check does: the engine
takes that for a data crash and isolates the message (foodtaster.engine.batch.crash).
`OrdersKilling`'s check ends its own process instead, each way on one `items` value
(`KILLERS`): the guard (foodtaster.engine.judging.guard) turns each end into a crash. Tests and
`make demo-engine` use them; no dataset in pipeline.yaml does.
"""

import os
import signal
import sys
import time

import pandas as pd
import pandera.pandas as pa
from pandera.api.extensions import register_check_method
from pandera.typing import Series

from contracts.orders import Orders


def _register() -> None:
    @register_check_method(statistics=["places"])
    def decimal_places(series: pd.Series, *, places: int) -> pd.Series:
        """At most `places` digits after the point (an amount in whole cents: 2)."""
        scaled = series * 10**places
        return (scaled - scaled.round()).abs() < 1e-6

    @register_check_method(statistics=["value"])
    def unlucky(series: pd.Series, *, value: int) -> pd.Series:
        """Passes every value; raises on `value`, as a check does that meets what it never expected."""
        if (series == value).any():
            raise ValueError(f"no rule for {value} items: the packing table skips it")
        return series == series

    @register_check_method(statistics=["armed"])
    def hostile(series: pd.Series, *, armed: bool) -> pd.Series:
        """Passes every value; ends its process on each of `KILLERS`' values, as a check
        written in C, or one that exits on what it calls a fatal error, does."""
        for value in KILLERS if armed else ():
            if (series == value).any():
                KILLERS[value]()
        return series == series


def _eat_memory() -> None:
    blocks = []
    while True:
        blocks.append(bytearray(64 * 1024 * 1024))


def _raise(error: Exception) -> None:
    raise error


def _never_return() -> None:
    while True:
        time.sleep(0.01)


# How the check ends its process, by the `items` value that makes it.
KILLERS = {
    13: lambda: _raise(ValueError("no rule for 13 items: the packing table skips it")),
    14: lambda: os._exit(1),
    15: lambda: os.kill(os.getpid(), signal.SIGSEGV),
    16: lambda: sys.exit(),
    17: _never_return,
    18: _eat_memory,
}


try:
    _register()
except ValueError as err:  # registering twice (module reloaded) is harmless
    if "already" not in str(err):
        raise


class OrdersChecked(Orders):
    amount: Series[float] = pa.Field(ge=0, le=1_000_000, decimal_places=2)


class OrdersCrashing(Orders):
    items: Series[int] = pa.Field(ge=1, le=1000, unlucky=13)


class OrdersKilling(Orders):
    items: Series[int] = pa.Field(ge=1, le=1000, hostile=True)
