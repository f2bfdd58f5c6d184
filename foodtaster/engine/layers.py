"""The bytes and parse layers: each a list of checks, each check a reason column.

Parsing uses Spark's VARIANT parser, which is strict RFC 8259 JSON (no single
quotes, NaN, comments, trailing commas, leading zeros or duplicate keys) but
stops after the first value. Wrapping the line in `[ ]` makes a second value
(`{..}{..}`, `{..},{..}`) visible; a line that would close the wrapper early
(`{..}],[..`) is caught by a second parse, done only for lines holding a `]`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from foodtaster.engine.reasons import Check, any_failed, check, collect

TEXT = "_text"
WRAPPED = "_wrapped"  # the line parsed as `[<line>]`: the message is element 0
JSON = "_json"  # the message, when the line is one JSON object


def bytes_checks(max_message_bytes: int) -> list[Check]:
    size = F.octet_length(F.col(TEXT))
    return [
        check(
            size > max_message_bytes, "bytes", "line.too_large",
            F.format_string(f"message is %d bytes, over the limit of {max_message_bytes}", size),
            value=size,
        ),
        check(
            F.regexp_like(F.col(TEXT), F.lit(r"^[ \t]*$")), "bytes", "line.empty",
            "empty line: no message",
        ),
        check(
            ~F.is_valid_utf8(F.col(TEXT)), "bytes", "line.not_utf8", "message is not valid UTF-8",
            value=F.make_valid_utf8(F.col(TEXT)),
        ),
        check(
            F.col(TEXT).contains("\u0000"), "bytes", "line.nul_byte",
            "message holds a NUL byte", value=F.make_valid_utf8(F.col(TEXT)),
        ),
    ]


def _syntax_hint() -> Column:
    """A person's best guess at what broke the JSON; the rule id stays `json.invalid`."""
    return (
        F.when(F.regexp_like(F.col(TEXT), F.lit(r"}\s*[\[{]")), "more than one JSON value on the line")
        .when(F.regexp_like(F.col(TEXT), F.lit(r"(^|[{,\[:]\s*)'")), "single quotes")
        .when(F.regexp_like(F.col(TEXT), F.lit(r"[:\[,]\s*-?(NaN|Infinity)\b")), "NaN or Infinity")
        .when(F.regexp_like(F.col(TEXT), F.lit(r",\s*[}\]]")), "trailing comma")
        .when(F.regexp_like(F.col(TEXT), F.lit(r"(^|[^:\"])(//|/\*)")), "a comment")
        .when(~F.regexp_like(F.col(TEXT), F.lit(r"[}\]]\s*$")), "truncated: the line ends mid-value")
        .otherwise("syntax error")
    )


def _not_json() -> Column:
    wrapped = F.col(WRAPPED)
    second_value = F.variant_get(wrapped, "$[1]", "variant").isNotNull()
    closes_early = F.when(
        F.col(TEXT).contains("]"),
        F.try_parse_json(F.concat(F.lit('{"m":'), F.col(TEXT), F.lit("}"))).isNull(),
    )
    return wrapped.isNull() | second_value | F.coalesce(closes_early, F.lit(False))


def _opens_object() -> Column:
    return F.startswith(F.ltrim(F.col(TEXT)), F.lit("{"))


def parse(lines: DataFrame, max_message_bytes: int) -> DataFrame:
    """Add the parsed line (`_wrapped`), the message (`_json`, null unless the line is one JSON
    object) and `_line_failed` (true where the bytes or the parse layer fails).

    `_line_failed` is a few cheap tests a row; `line_reasons` says why, for the rows that fail.
    """
    text = F.col(TEXT)
    oversized = F.octet_length(text) > max_message_bytes
    wrapped = F.when(~oversized, F.try_parse_json(F.concat(F.lit("["), text, F.lit("]"))))
    not_message = F.col("_not_message")
    # Invalid UTF-8 is the one damage JSON parsing lets through; the rest of the bytes layer
    # (empty, NUL, oversized) cannot parse as an object, so it is looked at only on failed lines.
    return (
        lines.withColumn(WRAPPED, wrapped)
        .withColumn("_not_message", _not_json() | ~_opens_object())
        .select(
            "*",
            (not_message | ~F.is_valid_utf8(text)).alias("_line_failed"),
            F.when(~not_message, F.col(WRAPPED)).alias(JSON),
        )
        .drop("_not_message")
    )


def line_reasons(max_message_bytes: int) -> Column:
    """The bytes reasons of a line, or when it has none its parse reasons. Reads the columns
    of `parse`; worth evaluating only where `_line_failed`."""
    bytes_ = bytes_checks(max_message_bytes)
    not_json = _not_json()
    parse_reasons = collect(
        [
            check(
                not_json, "parse", "json.invalid",
                F.concat(F.lit("not strict JSON (RFC 8259): "), _syntax_hint()),
                value=F.make_valid_utf8(F.col(TEXT)),
            ),
            check(
                ~not_json & ~_opens_object(), "parse", "json.not_object",
                F.concat(
                    F.lit("a JSON message must be an object, got "),
                    F.schema_of_variant(F.variant_get(F.col(WRAPPED), "$[0]", "variant")),
                ),
                value=F.col(TEXT),
            ),
        ]
    )
    return F.when(any_failed(bytes_), collect(bytes_)).otherwise(parse_reasons)
