"""The checkout's root, and the rule for tests that need a service: skip locally with the
reason, fail under CI=true."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TESTS_DIR = PROJECT_ROOT / "tests"  # on the path of a process that imports `support`
IN_CI = os.environ.get("CI", "").lower() == "true"


def need(condition: bool, reason: str) -> None:
    """A test that cannot reach what it needs skips with the reason; under CI=true it fails."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required under CI=true: {reason}")
    pytest.skip(reason)
