"""Structured logs: `key=value` pairs, the dataset and batch on every line an operator greps."""

from __future__ import annotations

import logging
import sys
from typing import Any

from foodtaster.lake_paths import relative_to_lake


def _render(value: Any) -> str:
    """A value as a person reads it in a key=value line: a list as `a,b`, never a repr; a path in
    the lake relative to the lake."""
    if isinstance(value, list | tuple | set | frozenset):
        text = ",".join(str(item) for item in value) or "none"
    elif isinstance(value, dict):
        text = ",".join(f"{key}:{item}" for key, item in value.items()) or "none"
    else:
        text = relative_to_lake(str(value)) if isinstance(value, str) else str(value)
    return f'"{text}"' if (" " in text or not text) else text


class BatchLogger(logging.LoggerAdapter):
    """Prefixes every line with dataset=<name> batch=<id>; extra fields become key=value."""

    def log(self, level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
        if not self.isEnabledFor(level):
            return
        fields = kwargs.pop("fields", {}) or {}
        context = " ".join(f"{k}={_render(v)}" for k, v in {**(self.extra or {}), **fields}.items())
        if args:  # the line is %-formatted: values are data, never format directives
            context = context.replace("%", "%%")
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1  # the caller's line, not this one
        self.logger.log(level, f"{context} {msg}" if context else msg, *args, **kwargs)

    def event(self, event: str, **fields: Any) -> None:
        self.info("event=%s", event, fields=fields)


def batch_logger(name: str, dataset: str, batch_id: str) -> BatchLogger:
    return BatchLogger(logging.getLogger(name), {"dataset": dataset, "batch": batch_id})


def configure(level: int = logging.INFO) -> None:
    """Log to stderr once; Airflow and spark-submit capture it with the task's log."""
    root = logging.getLogger("foodtaster")
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        root.addHandler(handler)
    root.setLevel(level)
