"""Orders with custom checks written in Python: what the engine runs as pandas UDFs.

`OrdersChecked` adds a vectorised check a contract might really use (an amount in whole
cents); the differential test holds Spark to pandera on it. `OrdersCrashing` adds one that
raises on a value it was never written for (`items` 13), as a buggy check does: the engine
takes that for a data crash and isolates the message (foodtaster.engine.crash). Tests and
`make demo-engine` use them; no dataset in pipeline.yaml does.
"""

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


try:
    _register()
except ValueError as err:  # registering twice (module reloaded) is harmless
    if "already" not in str(err):
        raise


class OrdersChecked(Orders):
    amount: Series[float] = pa.Field(ge=0, le=1_000_000, decimal_places=2)


class OrdersCrashing(Orders):
    items: Series[int] = pa.Field(ge=1, le=1000, unlucky=13)
