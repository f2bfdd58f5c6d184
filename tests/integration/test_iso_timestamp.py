"""Unit tests of `jvm/src/foodtaster/jvm/IsoTimestamp.java`, called through Py4J in the tests'
own JVM: the instant of an ISO-8601 text with a zone, null where Python's
`foodtaster.checks.is_iso_timestamp` says it is none."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foodtaster.checks import is_iso_timestamp

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def micros(spark):
    return spark._jvm.foodtaster.jvm.IsoTimestamp.micros


def python_micros(text: str) -> int | None:
    """What the Java class must give: the instant Python reads, in microseconds, where
    `is_iso_timestamp` holds."""
    if not is_iso_timestamp(text):
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@pytest.mark.parametrize("text, expected", [
    ("1970-01-01T00:00:00Z", 0),
    ("1970-01-01T00:00:00.5Z", 500_000),
    ("1970-01-01T00:00:00.000001Z", 1),
    ("1970-01-01T01:00:00+01:00", 0),
    ("1969-12-31T23:59:59.999999Z", -1),
    ("2024-02-29T12:00:00-18:00", 1_709_272_800_000_000),
    ("0001-01-01T00:00:00+18:00", -62_135_661_600_000_000),
    ("9999-12-31T23:59:59.999999-18:00", 253_402_365_599_999_999),
])
def test_the_instant_of_a_timestamp_in_microseconds(micros, text, expected):
    assert micros(text) == expected == python_micros(text)


@pytest.mark.parametrize("text", [
    "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z", "2026-01-00T00:00:00Z", "0000-01-01T00:00:00Z", "2026-11-20T24:00:00Z",
    "2026-11-20T10:60:00Z", "2026-11-20T10:00:60Z", "2026-11-20T10:00:00.Z", "2026-11-20T10:00:00.1234567Z",
    "2026-11-20T10:00:00+18:01", "2026-11-20T10:00:00+19:00", "2026-11-20T10:00:00+05:60",
    "2026-11-20T10:00:00+0530", "2026-11-20T10:00:00z", "2026-11-20T10:00:00", "2026-11-20 10:00:00Z",
    "2026-11-20T10:00:00Z\n", "2026-11-20T10:00:00Z ", " 2026-11-20T10:00:00Z", "2026-1-20T10:00:00Z",
    "\uff12026-11-20T10:00:00Z", "2026-11-20T10:00:00+05:30:00", "", "yesterday",
])
def test_not_a_timestamp_is_null(micros, text):
    assert python_micros(text) is None
    assert micros(text) is None


def texts() -> st.SearchStrategy[str]:
    """Shaped texts around every edge (any calendar fields, fractions, zones), and ones a
    character off."""
    two = st.integers(0, 99).map(lambda n: f"{n:02d}")
    shaped = st.builds(
        lambda y, mo, d, h, mi, s, f, z: f"{y:04d}-{mo}-{d}T{h}:{mi}:{s}{f}{z}",
        st.integers(0, 9999), two, two, two, two, two,
        st.sampled_from(["", ".", ".0", ".12", ".123456", ".1234567"]),
        st.sampled_from(["Z", "z", "", "+00:00", "-00:00", "+17:59", "-18:00", "+18:00", "+18:01",
                         "-05:30", "+05:60", "+0530", "+24:00"]),
    )
    mutated = st.builds(lambda text, at, c: text[:at] + c + text[at + 1:],
                        shaped, st.integers(0, 30), st.sampled_from(["-", ":", "T", " ", "1", "\u0661", ""]))
    return st.one_of(shaped, mutated)


@settings(max_examples=600, deadline=None)
@given(texts())
def test_the_same_verdict_and_instant_as_python(micros, text):
    assert micros(text) == python_micros(text)
