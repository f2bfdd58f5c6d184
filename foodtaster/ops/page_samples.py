"""A batch page's quarantined messages, as the person reading it may see them.

Who may read raw payloads is Airflow's to say (`foodtaster_airflow.raw_payloads`); the page
gets the answer as a plain bool, `show_raw`. With it, each message's exact bytes, escaped;
without it, the masked view (`foodtaster.privacy.Masker.message`): every personal value
replaced by its mask, and a line that is no JSON object shown as its length and a hash only.
No raw byte of a message reaches a page without `show_raw`, in no element or attribute. The
reasons are shown as the job wrote them (masked at the source where personal), but for the
value of a line's bytes or parse reason: the start of a line nothing can be told of, which the
job masks only in a dataset that marks something personal. Without `show_raw` the page masks
it in every dataset, as the job would (`foodtaster.engine.judging.masking.opaque_column`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from html import escape
from typing import Any
from urllib.parse import quote

from foodtaster.ops.shown import in_lake
from foodtaster.privacy import LINE_LAYERS, NOT_SHOWN, PERSONAL, Masker, mask_key
from foodtaster.registry import DatasetConfig
from foodtaster.state.browse import NotInLake, quarantined_rows
from foodtaster.state.lake import Lake

SAMPLES_PER_PAGE = 10  # quarantined messages of one reason a page shows
RAW_CHARS = 4000  # a message longer than this is cut, saying how much is left out
RAW_VIEW = "raw bytes: your role may read them"
MASKED_VIEW = "masked: personal values hidden; ask an admin or op for raw bytes"


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


@dataclass(frozen=True)
class SampleView:
    """How the page shows a quarantined message: its exact bytes, or `masked` (None: the
    reader may read raw payloads)."""

    masked: Callable[[bytes | str | None], str] | None
    line_start: Callable[[str], str] | None = None  # the masked view of a line's start

    @property
    def show_raw(self) -> bool:
        return self.masked is None

    def message(self, raw: Any) -> str:
        """A message as this reader sees it, cut at RAW_CHARS."""
        return cut(raw_text(raw) if self.masked is None else self.masked(raw))

    def reason_value(self, reason: dict[str, Any]) -> str | None:
        """A reason's value as this reader sees it: the start of a line (a bytes or parse
        reason's value) only its length and keyed hash without `show_raw`, as the job writes
        it for a dataset that marks something personal; a value the job masked already as it is."""
        value = reason.get("value")
        if value is None or self.line_start is None or reason.get("layer") not in LINE_LAYERS \
                or str(value).startswith((NOT_SHOWN, PERSONAL)):
            return value
        return self.line_start(str(value))


def sample_view(lake: Lake, config: DatasetConfig, show_raw: bool) -> SampleView:
    """The view of the dataset's messages for a reader who may (`show_raw`) or may not read raw
    payloads. The dataset's masks are read only for a reader who needs them."""
    if show_raw:
        return SampleView(None)
    masker = dataset_masker(lake, config)
    return SampleView(masker.message, masker.line_start)


def dataset_masker(lake: Lake, config: DatasetConfig) -> Masker:
    """The dataset's masks (`foodtaster.privacy`), keyed even when it marks nothing personal:
    a line nothing can be told of is shown as its length and keyed hash in every dataset."""
    masker = Masker.for_dataset(config, lake.root)
    return masker if masker.key else replace(masker, key=mask_key(lake.root))


def raw_text(raw: Any) -> str:
    """A message's exact bytes as text: UTF-8, any other byte as \\xNN."""
    return raw.decode("utf-8", errors="backslashreplace") if isinstance(raw, bytes) else str(raw or "")


def cut(text: str) -> str:
    if len(text) <= RAW_CHARS:
        return text
    return f"{text[:RAW_CHARS]}\n… {len(text) - RAW_CHARS} more characters (foodtaster quarantine show)"


def samples_of(lake: Lake, dataset: str, batch_id: str, summary: dict[str, Any],
               rule: str) -> tuple[list[dict[str, Any]], str]:
    """The batch's quarantined messages with a reason of `rule`, in file and line order: from
    its quarantine partition, else (no partition: a batch of an older lake, or a test's) the
    few samples its summary kept. And where they were read."""
    from pyarrow import ArrowException

    try:
        rows = quarantined_rows(lake, dataset, batch_id, rule=rule)
        return ([{"source_file": r["_source_file"], "line_number": r["_line_number"], "raw": r["_raw"],
                  "reasons": r["reasons"] or []} for r in rows], "the quarantine partition")
    except (NotInLake, ArrowException, KeyError):
        kept = [s for s in summary.get("samples") or ()
                if any(r.get("rule") == rule for r in s.get("reasons") or ())]
        return kept, "the samples the batch summary kept (no quarantine partition to read)"


def _reason_cells(view: SampleView, reasons: list[dict[str, Any]]) -> str:
    return "<br>".join(
        f"{_e(r.get('layer'))} <b>{_e(r.get('rule'))}</b>"
        + (f" [{_e(r.get('column'))}]" if r.get("column") else "")
        + f": {_e(r.get('message'))}"
        + (f" <span class=muted>value {_e(view.reason_value(r))}</span>"
           if r.get("value") is not None else "")
        for r in reasons
    )


def sample_html(lake: Lake, view: SampleView, sample: dict[str, Any], number: int) -> str:
    """One quarantined message: where it was, its text as `view` shows it, its reasons."""
    kind = "raw" if view.show_raw else "masked"
    return (f"<article class=sample id=\"sample-{number}\"><h3>{number}. "
            f"<code>{_e(in_lake(lake, sample.get('source_file')))}:{_e(sample.get('line_number'))}"
            f"</code></h3><pre class={kind}>{_e(view.message(sample.get('raw')))}</pre>"
            f"<div class=reasons>{_reason_cells(view, sample.get('reasons') or [])}</div></article>")


def access_note(show_raw: bool) -> str:
    """Which view of the messages the reader has, in words."""
    return (f"<p class=\"access {'raw' if show_raw else 'masked'}\"><b>"
            f"{_e(RAW_VIEW if show_raw else MASKED_VIEW)}</b></p>")


def samples_intro(view: SampleView, reason: str, source: str) -> str:
    """What the messages below are, and how they are shown."""
    shown = ("Each as it was landed, byte for byte (not run, not rendered)." if view.show_raw else
             "Each with its personal values replaced by their masks (kind, length, a keyed hash); "
             "a line that is no JSON object shows none of its bytes.")
    return (f"<p>Messages quarantined with reason <b>{_e(reason)}</b>, from {_e(source)}; a message "
            f"may have other reasons too. {shown}</p>")


def pager(rule: str, page: int, pages: int, first: int, last: int, total: int) -> str:
    def link(to: int, label: str) -> str:
        return f"<a href=\"?reason={quote(rule)}&amp;page={to}#samples\">{label}</a>"

    return ("<p class=pager>"
            + (link(page - 1, "&larr; previous") + " &middot; " if page > 1 else "")
            + f"messages {first}&ndash;{last} of {total} &middot; page {page} of {pages}"
            + (" &middot; " + link(page + 1, "next &rarr;") if page < pages else "") + "</p>")
