"""The rule ids Foodtaster itself gives, one place for all: a contract's rules are named
from the contract (`amount.greater_than_or_equal_to(0)`); these name what no contract says.

Alerts, redrive, the CLI and the batch counts group reasons by these ids, so they are
stable: renaming one is a change of the lake's format.
"""

from __future__ import annotations

# bytes layer: what the landing or the reader would not hold whole
FILE_TOO_LARGE = "file.too_large"
FILE_UNREADABLE = "file.unreadable"  # a file that cannot be decompressed
LINE_TOO_LARGE = "line.too_large"

# registry layer: the poison list
LISTED = "registry.listed"
RECALLED = "registry.recalled"

# crash layer: a message that crashed a check, found by isolation and listed
CRASH_ISOLATED = "crash.isolated"

# group layer: a message held because its conversation has a poison message
GROUP_POISONED = "group.poisoned"

# a retryable rule that failed every attempt the policy allows
RETRY_EXHAUSTED = "retry.exhausted"
