"""The reasons masked as they are written: `foodtaster.privacy`'s masks as Spark columns.

A reason is read by every surface (the CLI, alerts, the batches page, redrive's history), so a
reason whose value may show something personal is masked once, before the quarantine is
written, and no reader has to: its `value` becomes the value's mask and its `message` says
`<column>: value ‹mask› fails <rule>` (the rule id says what was asked). A reason at a
personal path, under one or above one (an object's text holds its email) is masked whole; a
line's bytes or parse reason, whose value is the start of a line nothing can be told of,
shows no bytes of it. The mask is the same as `Masker.mask` gives a string: the same kind,
length and keyed hash (HMAC-SHA256 computed with `sha2`), so a sample and a reason of one
value carry one mask. `_raw` is not touched: the quarantine keeps the exact bytes.
"""

from __future__ import annotations

import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from foodtaster.contract.path import Path, _Each, key_text
from foodtaster.engine.judging.reasons import REASONS
from foodtaster.privacy import HASH_HEX, KINDS, LINE_LAYERS, NOT_SHOWN, PERSONAL, Masker, hmac_pads


def mask_reasons(rows: DataFrame, masker: Masker) -> DataFrame:
    """Rows with their `reasons` masked where they may show something personal; the rows as
    they are when the dataset marks nothing personal."""
    if not masker.paths:
        return rows
    return rows.withColumn("reasons", F.transform("reasons", lambda r: _masked(r, masker)).cast(REASONS))


def _masked(reason: Column, masker: Masker) -> Column:
    value, column = reason["value"], reason["column"]
    personal = column.rlike(holding_regex(masker)) & value.isNotNull()
    of_a_line = reason["layer"].isin(*LINE_LAYERS) & value.isNotNull()
    mask = mask_column(value, masker)
    return F.struct(
        reason["layer"].alias("layer"),
        reason["rule"].alias("rule"),
        column.alias("column"),
        F.when(personal, F.concat(column, F.lit(": value "), mask, F.lit(" fails "), reason["rule"]))
        .otherwise(reason["message"]).alias("message"),
        F.when(personal, mask).when(of_a_line, opaque_column(value, masker)).otherwise(value).alias("value"),
    )


def mask_column(text: Column, masker: Masker) -> Column:
    """`Masker.mask` of a string, as a column."""
    kind = F.lit("text")
    for name, pattern in reversed(KINDS):
        kind = F.when(text.rlike(pattern), F.lit(name)).otherwise(kind)
    return F.concat(F.lit(PERSONAL), kind, F.lit(", "), F.char_length(text).cast("string"),
                    F.lit(" chars, #"), digest_column(text, masker), F.lit("›"))


def opaque_column(text: Column, masker: Masker) -> Column:
    """`Masker.line_start`: the start of a line nothing can be told of, its length and keyed hash."""
    return F.concat(F.lit(NOT_SHOWN), F.char_length(text).cast("string"),
                    F.lit(" chars of the line, #"), digest_column(text, masker), F.lit("›"))


def digest_column(text: Column, masker: Masker) -> Column:
    """`Masker.digest` of a string's UTF-8 bytes: HMAC-SHA256 (RFC 2104) of two `sha2`s."""
    inner, outer = hmac_pads(masker.key)
    first = F.unhex(F.sha2(F.concat(F.lit(bytearray(inner)), F.encode(text, "UTF-8")), 256))
    return F.substring(F.sha2(F.concat(F.lit(bytearray(outer)), first), 256), 1, HASH_HEX)


def holding_regex(masker: Masker) -> str:
    """A Java regex an exact path (`data.lines[2].recipient`) matches when a value there may
    show something personal: a personal pattern or under it, or an object or array above one."""
    above = {a for p in masker.paths for a in p.ancestors()} - masker.paths
    exact = "|".join(sorted(_regex(p) for p in above))
    at_or_under = "|".join(sorted(_regex(p) for p in masker.paths))
    # a key of several fields is named `(carrier,tracking_no)`: personal when one of them is
    of_a_key = f"|^\\((?:[^()]*,)?(?:{at_or_under})[,)]" if at_or_under else ""
    return f"^(?:{at_or_under})(?:$|[.\\[])" + (f"|^(?:{exact})$" if exact else "") + of_a_key


def _regex(path: Path) -> str:
    out = []
    for step in path.steps:
        if isinstance(step, _Each):
            out.append(r"\[[0-9]+\]")
        elif isinstance(step, int):
            out.append(rf"\[{step}\]")
        else:
            text = key_text(step)
            out.append(re.escape(text) if text.startswith("[") or not out else r"\." + re.escape(text))
    return "".join(out)
