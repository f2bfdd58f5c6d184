"""Structured logs: `key=value` pairs, the dataset and batch on every line an operator greps."""

from __future__ import annotations

import logging
import sys
from typing import Any


def _render(value: Any) -> str:
    text = str(value)
    return f'"{text}"' if (" " in text or not text) else text


class BatchLogger(logging.LoggerAdapter):
    """Prefixes every line with dataset=<name> batch=<id>; extra fields become key=value."""

    def process(self, msg: str, kwargs: Any) -> tuple[str, Any]:
        fields = kwargs.pop("fields", {}) or {}
        context = " ".join(f"{k}={_render(v)}" for k, v in {**self.extra, **fields}.items())
        context = context.replace("%", "%%")  # values are data, never format directives
        return f"{context} {msg}" if context else msg, kwargs

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
