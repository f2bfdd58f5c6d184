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

from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import quote

from foodtaster.ops.shown import in_lake
from foodtaster.privacy import Masker
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
    """How the page shows a quarantined message: its exact bytes, or through `masker` (None:
    the reader may read raw payloads)."""

    masker: Masker | None

    @property
    def show_raw(self) -> bool:
        return self.masker is None

    def message(self, raw: Any) -> str:
        """A message as this reader sees it, cut at RAW_CHARS."""
        return cut(raw_text(raw) if self.masker is None else self.masker.message(raw))

    def reason_value(self, reason: dict[str, Any]) -> Any:
        """A reason's value as this reader sees it (`Masker.reason_value` without `show_raw`)."""
        return reason.get("value") if self.masker is None else self.masker.reason_value(reason)


def sample_view(lake: Lake, config: DatasetConfig, show_raw: bool) -> SampleView:
    """The view of the dataset's messages for a reader who may (`show_raw`) or may not read raw
    payloads. The dataset's masks are read only for a reader who needs them, keyed in every
    dataset (`Masker.for_readers`)."""
    return SampleView(None if show_raw else Masker.for_readers(config, lake.root))


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
