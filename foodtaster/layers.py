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

from foodtaster.reasons import Check, check, collect

TEXT = "_text"
WRAPPED = "_json"  # the line parsed as `[<line>]`: the message is element 0


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
            F.instr(F.col(TEXT), "\u0000") > 0, "bytes", "line.nul_byte",
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


def parse(lines: DataFrame, max_message_bytes: int) -> DataFrame:
    """Add the parsed message (`_json`) and the bytes and parse reasons (`_reasons`).

    A line with a bytes reason gets no parse reasons; an oversized line is not parsed.
    """
    oversized = F.octet_length(F.col(TEXT)) > max_message_bytes
    wrapped = F.when(~oversized, F.try_parse_json(F.concat(F.lit("["), F.col(TEXT), F.lit("]"))))
    bytes_reasons = collect(bytes_checks(max_message_bytes))
    parsed = lines.withColumn(WRAPPED, wrapped).withColumn("_bytes_reasons", bytes_reasons)

    json_ = F.col(WRAPPED)
    second_value = F.variant_get(json_, "$[1]", "variant").isNotNull()
    closes_early = F.when(
        F.instr(F.col(TEXT), "]") > 0,
        F.try_parse_json(F.concat(F.lit('{"m":'), F.col(TEXT), F.lit("}"))).isNull(),
    )
    not_json = json_.isNull() | second_value | F.coalesce(closes_early, F.lit(False))
    first_char = F.substring(F.ltrim(F.col(TEXT)), 1, 1)
    parse_reasons = collect(
        [
            check(
                not_json, "parse", "json.invalid",
                F.concat(F.lit("not strict JSON (RFC 8259): "), _syntax_hint()),
                value=F.make_valid_utf8(F.col(TEXT)),
            ),
            check(
                ~not_json & (first_char != "{"), "parse", "json.not_object",
                F.concat(
                    F.lit("a JSON message must be an object, got "),
                    F.schema_of_variant(F.variant_get(json_, "$[0]", "variant")),
                ),
                value=F.col(TEXT),
            ),
        ]
    )
    has_bytes_reason = F.size("_bytes_reasons") > 0
    return (
        parsed.withColumn(
            "_reasons", F.when(has_bytes_reason, F.col("_bytes_reasons")).otherwise(parse_reasons)
        )
        .withColumn(WRAPPED, F.when(~not_json & (first_char == "{"), json_))
        .drop("_bytes_reasons")
    )
