"""The batches pages a person opens in the Airflow UI: server-rendered HTML, no Airflow import.

`plugins/foodtaster_batches.py` serves them inside Airflow; here they are plain
functions of the lake, so they are tested without a server. Every value is
escaped: samples are a producer's hostile bytes, and even a dataset or a reason
rule comes from files a person can edit.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any
from urllib.parse import quote

import fsspec

from foodtaster.errors import NotFound
from foodtaster.ops import drift as drift_view
from foodtaster.ops.page_samples import (
    SAMPLES_PER_PAGE,
    access_note,
    pager,
    sample_html,
    sample_view,
    samples_intro,
    samples_of,
)
from foodtaster.ops.shown import in_lake, quoted, words
from foodtaster.ops.trend import (
    UNKNOWN_PRODUCER,
    UNKNOWN_PRODUCER_MEANS,
    Trend,
    dataset_trend,
    describe,
)
from foodtaster.ops.trend_chart import render_trend
from foodtaster.policy import split_why
from foodtaster.registry import DatasetConfig
from foodtaster.state.drift import DriftLog
from foodtaster.state.lake import Lake, check_batch_id, exists, read_json
from foodtaster.state.ledger import LedgerEntry, batch_entries
from foodtaster.state.refusals import Refusal, alert_stem, refusals
from foodtaster.summary import BatchTables

__all__ = ["PageNotFound", "alert_kinds", "batch_page", "batches_page", "error_page", "in_lake", "trend_png"]

RECENT_BATCHES = 30


class PageNotFound(NotFound):
    """The dataset or batch asked for is not there; the message says which and what is."""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _rate(rate: Any) -> str:
    return f"{float(rate) * 100:.2f}%" if rate is not None else ""


_STYLE = """
body{font-family:system-ui,sans-serif;margin:1rem 1.5rem;color:#1d2733}
h1{font-size:1.3rem}h2{font-size:1.1rem;margin-top:1.6rem}
table{border-collapse:collapse;font-size:.85rem}
td,th{border-bottom:1px solid #dde;padding:.25rem .6rem;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.published{color:#2b7a3d;font-weight:600}.held{color:#c0392b;font-weight:600}.empty{color:#777}
.released{color:#a15c00;font-weight:600}.superseded{color:#5b4ab0;font-weight:600}
.who{display:block;font-weight:400;color:#445;font-size:.8rem;max-width:24rem}
pre{white-space:pre-wrap;word-break:break-all;background:#f5f6f8;padding:.4rem;margin:0;max-width:60rem}
article.sample{border-top:1px solid #dde;padding:.4rem 0 .8rem;max-width:70rem}
article.sample h3{font-size:.9rem;margin:.3rem 0}
article.sample pre{max-width:none;font-size:.85rem;line-height:1.35}
.reasons{font-size:.85rem;margin-top:.3rem}tr.shown{background:#fff4d6}.links a{margin-right:.2rem}
img{max-width:100%;border:1px solid #dde}.muted{color:#667}
.drift{display:block;font-weight:600}.drift.new{color:#1f5fa8}.drift.stopped{color:#a15c00}
"""


def _document(title: str, body: str) -> str:
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"
            f"<style>{_STYLE}</style></head><body>{body}</body></html>")


def error_page(status: int, message: str) -> str:
    """An error as a person reads it inside the UI: the sentence, and the way back."""
    title = {400: "Not a valid request", 404: "Not found"}.get(status, "Something went wrong")
    return _document(title, f"<p><a href=\"{_e(PAGES_ROOT)}\">&larr; all batches</a></p><h1>{_e(title)}"
                            f"</h1><p class=error>{_e(message)}</p>")


PAGES_ROOT = "/foodtaster/"  # the plugin's URL prefix: the batches page


def _config(datasets: dict[str, DatasetConfig], dataset: str) -> DatasetConfig:
    if dataset not in datasets:
        raise PageNotFound(f"dataset {quoted(dataset)} is not in the registry (its datasets: "
                           f"{words(sorted(datasets))})")
    return datasets[dataset]


def rates(record: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The batch's two rates, each with its name and what it counts: the quarantine rate (all
    quarantined messages), and, when some of those are not new poison, the new quarantine rate,
    the one alert_rate and hold_rate judge (`foodtaster.policy.decide`)."""
    messages, quarantined = int(record.get("messages") or 0), int(record.get("quarantined") or 0)
    shown = [("quarantine rate", _rate(record.get("quarantine_rate")),
              f"all {quarantined} quarantined of {messages} messages")]
    not_new = {"already listed (poison list)": int(record.get("listed") or 0),
               "retrying": int(record.get("retrying") or 0),
               "held for their conversation": int(record.get("held_for_group") or 0)}
    if messages and any(not_new.values()):
        new = quarantined - sum(not_new.values())
        left_out = ", ".join(f"{count} {what}" for what, count in not_new.items() if count)
        shown.append(("new quarantine rate", _rate(new / messages),
                      f"{new} new poison of {messages} messages: the quarantined without the "
                      f"{left_out}; alert_rate and hold_rate judge this one"))
    return shown


def shown_verdict(entry: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The batch's verdict as the page shows it, and who and why: `held`; `released` (held,
    then published by an operator); `superseded` (a corrected delivery replaced the held one,
    and the batch was judged again); `published` or `empty`. A batch held again after a
    correction shows `held`: what needs a person now comes first. What the verdict only notes
    (messages already listed, messages waiting) follows as a fact, never as a hold reason."""
    verdict = entry.get("verdict") if isinstance(entry.get("verdict"), str) else None
    why = entry.get("why")
    why, facts = split_why([why] if isinstance(why, str) and why else list(why or ()))
    noted = [f"also: {fact}" for fact in facts]
    superseded = entry.get("superseded")
    replaced = ([f"a corrected delivery replaced {len(superseded.get('files') or ())} file(s), "
                 f"by {superseded.get('by')} at {_when(superseded.get('at'))}: {superseded.get('why')}"]
                if isinstance(superseded, dict) else [])
    released = entry.get("released")
    if isinstance(released, dict):
        held_why, held_facts = split_why(list(entry.get("held_why") or ()))
        return "released", [f"released by {released.get('by')} at {_when(released.get('at'))}: "
                            f"{released.get('why')}",
                            *(f"held because: {line}" for line in held_why),
                            *(f"also: {fact}" for fact in held_facts), *replaced]
    if verdict == "held":
        return "held", [*why, *noted, *replaced]
    if replaced:
        return "superseded", [*replaced, f"then {verdict}", *why, *noted]
    return verdict or "validated, not recorded in the ledger", [*why, *noted]


def _when(at: Any) -> str:
    """A recorded time as a person reads it: `2026-11-27 03:54 UTC`."""
    text = str(at or "")
    if len(text) >= 16 and text[10] == "T":
        return f"{text[:10]} {text[11:16]} UTC"
    return text or "an unrecorded time"


NEEDS_WHO = ("held", "released", "superseded")  # the verdicts the list says who and why of


def _verdict_cell(entry: LedgerEntry) -> str:
    word, lines = shown_verdict(entry)
    lines = lines if word in NEEDS_WHO else []
    return (f"<td class=\"verdict {_e(word)}\">{_e(word)}"
            + "".join(f"<span class=who>{_e(line)}</span>" for line in lines) + "</td>")


def _top_reasons(pairs: Any) -> str:
    return "<br>".join(f"{_e(count)}&nbsp;&nbsp;{_e(rule)}" for rule, count in pairs or ())


def batches_page(lake: Lake, datasets: dict[str, DatasetConfig], *, limit: int = RECENT_BATCHES) -> str:
    """Every dataset's recent batches (newest first) with its trend chart; each batch
    links to its drill-down. Links are relative to the page's own folder."""
    sections = []
    for name, config in datasets.items():
        recorded = batch_entries(lake, name)
        entries = recorded[::-1][:limit]
        drifts = DriftLog(lake, name).batches()
        marks = drift_view.batch_marks(drifts, config.drift_window)
        rows = "".join(
            f"<tr class=batch><td>{_e(e['batch_date'])}</td>"
            f"<td><a href=\"datasets/{quote(name)}/batches/{quote(e['batch_id'])}\">"
            f"{_e(e['batch_id'])}</a></td>"
            + _verdict_cell(e)
            + "".join(f"<td class=n>{_e(e.get(k))}</td>"
                      for k in ("messages", "valid", "quarantined", "duplicates_dropped"))
            + f"<td class=n>{_rate(e.get('quarantine_rate'))}</td>"
            f"<td>{_top_reasons(e.get('top_reasons'))}</td>"
            + (f"<td><a class=drift-marks href=\"datasets/{quote(name)}/batches/{quote(e['batch_id'])}"
               f"#drift\">{marks[e['batch_id']]}</a></td>" if marks.get(e["batch_id"]) else "<td></td>")
            + "</tr>"
            for e in entries
        )
        # the trend of the batches shown: a long history's quarantine is not read on every visit
        since = entries[-1]["batch_date"] if entries else None
        trend = dataset_trend(lake, config, since=since)
        table = (
            "<table><thead><tr><th>batch date</th><th>batch</th><th>verdict</th><th>messages</th>"
            "<th>valid</th><th>quarantined</th><th>duplicates dropped</th><th>quarantine rate</th>"
            f"<th>top reasons</th><th>drift</th></tr></thead><tbody>{rows}</tbody></table>"
            "<p class=muted>quarantine rate: all quarantined messages of the batch's messages. "
            "When some of them are not new poison (already listed, retrying, held for their "
            "conversation), the verdict judges the new quarantine rate, without them: the "
            "batch's page shows both.</p>"
            if entries else "<p class=muted>No batch recorded yet.</p>"
        )
        producers = _producers_line(trend)
        sections.append(
            f"<section id=\"dataset-{_e(name)}\"><h2>{_e(name)}</h2>"
            f"<p class=muted>{_e(config.description)}</p>"
            f"<p>{_e(describe(trend))}</p>"
            + (f"<p>{producers}</p>" if producers else "")
            + (f"<p class=muted>{_e(UNKNOWN_PRODUCER_MEANS)}</p>"
               if any(p == UNKNOWN_PRODUCER for p, _ in trend.producers) else "")
            + _refusals_table(name, refusals(lake, name)[::-1][:limit])
            + (f"<img alt=\"quarantine rate of {_e(name)}\" "
               f"src=\"datasets/{quote(name)}/trend.png?since={quote(str(since))}\">" if entries else "")
            + table + drift_view.dataset_section(
                drifts, since, {e["batch_id"]: int(e["messages"]) for e in recorded}) + "</section>"
        )
    return _document("Foodtaster batches", "<h1>Foodtaster: recent batches</h1>" + "".join(sections))


def _producers_line(trend: Trend) -> str:
    """Who sends the poison of the batches shown: each producer's quarantine rate (its
    quarantined of its messages), highest first; their counts in a lake with no producer's
    messages recorded (no drift)."""
    rates = trend.producer_rates()
    if rates:
        return ("Quarantine rate by producer, the batches shown (its quarantined of its messages): "
                + ", ".join(f"{_e(p)} {_rate(q / m)} ({q} of {m})" for p, q, m in rates))
    if trend.producers:
        return "Quarantined by producer: " + ", ".join(f"{_e(p)} {_e(c)}" for p, c in trend.producers)
    return ""


def _refusals_table(dataset: str, refused: list[Refusal]) -> str:
    """The dataset's refused runs, newest first: they judged nothing, so the ledger has none of
    them. Each with its reason, its run and its alert."""
    if not refused:
        return ""
    rows = "".join(
        f"<tr class=refusal><td>{_e(_when(r.at))}</td><td>"
        + (_e(r.batch_id) if r.batch_id else "<span class=muted>none landed</span>")
        + (f"<span class=who>inbox date {_e(r.batch_date)}</span>" if r.batch_date else "")
        + f"</td><td>{_e(r.task)}</td><td class=\"verdict held\">refused<span class=who>{_e(r.reason)}"
        f"</span></td><td class=links>{_run_link(r.dag_id, r.run_id, '')}"
        f" <a class=alert href=\"datasets/{quote(dataset)}/alerts/{quote(alert_stem(r.run_id))}.html\">"
        "alert</a></td></tr>"
        for r in refused)
    return ("<h3>Refused runs</h3><p class=muted>A refused run judged nothing: no batch above is "
            "its. Each is filed under its run; its batch is the one it landed (none when it was "
            "refused before landing), and its reason says what to do instead.</p><table><thead>"
            "<tr><th>when</th><th>batch landed</th><th>task</th><th>why</th><th>links</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>")


def _run_link(dag_id: str, run_id: str, up: str) -> str:
    """A link to a run's page in the Airflow UI, opened in the whole window (`_top`), never in
    the frame the page sits in inside Airflow. `up` leads from the page's folder to the root."""
    run = f"dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
    return f"<a class=run target=_top href=\"{up}../{run}\">Airflow run {_e(run_id)}</a>"


def _batch(lake: Lake, datasets: dict[str, DatasetConfig], dataset: str,
           batch_id: str) -> tuple[DatasetConfig, dict[str, Any] | None, dict[str, Any]]:
    """The dataset's config, the batch's ledger record (or None) and its summary (or {})."""
    config = _config(datasets, dataset)
    try:
        check_batch_id(batch_id)
    except ValueError:
        raise PageNotFound(f"{quoted(batch_id)} is not a batch id: YYYYMMDD as a daily run lands "
                           "it, YYYYMMDDHH as an hourly one does") from None
    entry = next((dict(e) for e in batch_entries(lake, config.name) if e["batch_id"] == batch_id), None)
    summary_uri = lake.summary(config.name, batch_id)
    if entry is None and not exists(summary_uri):
        raise PageNotFound(f"dataset {dataset} has no batch {quoted(batch_id)} in its ledger or reports")
    return config, entry, read_json(summary_uri) if exists(summary_uri) else {}


def _links(lake: Lake, config: DatasetConfig, batch_id: str, record: dict[str, Any],
           summary: dict[str, Any]) -> str:
    """Where else the batch is: its Airflow run (the UI's own page, in the whole window, not
    in the plugin's frame), its Data Docs and its alerts (served from the lake beside this page)."""
    links = []
    if record.get("dag_id") and record.get("run_id"):
        links.append(_run_link(str(record["dag_id"]), str(record["run_id"]), "../../../"))
    else:
        links.append("<span class=muted>no Airflow run recorded (run outside the pipeline)</span>")
    if (summary.get("paths") or {}).get("data_docs"):
        links.append(f"<a class=docs href=\"{quote(batch_id)}/data-docs/gate.html\">Data Docs: the "
                     "batch gate</a>")
    for kind in alert_kinds(lake, config.name, batch_id):
        links.append(f"<a class=alert href=\"../alerts/{quote(batch_id)}-{quote(kind)}.html\">the "
                     f"{_e(kind)} alert</a>")
    return "<p class=links>" + " &middot; ".join(links) + "</p>"


def batch_page(lake: Lake, datasets: dict[str, DatasetConfig], dataset: str, batch_id: str, *,
               reason: str | None = None, page: int = 1, show_raw: bool = False) -> str:
    """One batch: its final verdict and counts (the ledger), its reasons by count (the summary),
    the quarantined messages of one reason a page at a time (the quarantine partition, the top
    reason first; their exact bytes only with `show_raw`, else masked: page_samples), and links
    to its Airflow run, Data Docs and alerts. Served at
    `datasets/<dataset>/batches/<batch_id>?reason=<rule>&page=<n>`."""
    config, entry, summary = _batch(lake, datasets, dataset, batch_id)
    record = {**summary, **(entry or {})}  # the ledger tells the final state; the summary the detail
    verdict, why = shown_verdict(record)
    counts = "".join(
        f"<tr><th>{_e(label)}</th><td class=n>{_e(record.get(key))}</td></tr>"
        for label, key in (("messages", "messages"), ("valid", "valid"),
                           ("quarantined", "quarantined"), ("duplicates dropped", "duplicates_dropped"))
    ) + "".join(f"<tr class=rate><th>{_e(name)}</th><td class=n>{_e(value)}</td>"
                f"<td class=muted>{_e(what)}</td></tr>" for name, value, what in rates(record))
    by_count = sorted((summary.get("reasons") or {}).items(), key=lambda item: (-item[1], item[0]))
    if reason is None and by_count:
        reason = by_count[0][0]
    if reason is not None and reason not in dict(by_count):
        raise PageNotFound(f"batch {batch_id} has no quarantined message with reason {quoted(reason)} "
                           f"(its reasons: {words(rule for rule, _ in by_count)})")
    reasons = "".join(
        f"<tr class=\"reason{' shown' if rule == reason else ''}\"><td class=n>{_e(count)}</td>"
        f"<td><a href=\"?reason={quote(rule)}#samples\">{_e(rule)}</a></td></tr>"
        for rule, count in by_count)
    samples_html = "<p class=muted>No sample.</p>"
    if reason is not None:
        samples, source = samples_of(lake, config.name, batch_id, summary, reason)
        pages = max(1, -(-len(samples) // SAMPLES_PER_PAGE))
        if not 1 <= page <= pages:
            raise PageNotFound(f"reason {reason} of batch {batch_id} has {pages} page(s), not {page}")
        first = (page - 1) * SAMPLES_PER_PAGE
        shown = samples[first:first + SAMPLES_PER_PAGE]
        view, bar = sample_view(lake, config, show_raw), pager(reason, page, pages, first + 1,
                                                               first + len(shown), len(samples))
        samples_html = (samples_intro(view, reason, source) + bar + "".join(
            sample_html(lake, view, sample, first + number) for number, sample in enumerate(shown, 1))
            + (bar if len(shown) > 3 else "")) if shown else "<p class=muted>No sample.</p>"
    tables = _tables(summary)
    body = (
        f"<p><a href=\"../../../\">&larr; all batches</a></p>"
        f"<h1>{_e(config.name)} batch {_e(batch_id)}</h1>"
        f"<p>batch date {_e(record.get('batch_date'))} &middot; verdict "
        f"<span class=\"verdict {_e(verdict)}\">{_e(verdict)}</span> &middot; quarantine rate "
        f"<b>{_rate(record.get('quarantine_rate'))}</b> (alert_rate {_rate(config.alert_rate)}, "
        f"hold_rate {_rate(config.hold_rate)})</p>"
        + ("<ul class=why>" + "".join(f"<li>{_e(line)}</li>" for line in why) + "</ul>" if why else "")
        + _links(lake, config, batch_id, record, summary)
        + "".join(f"<p>Not judged, as the dataset asks (ignore): <code>{_e(p)}</code></p>"
                  for p in summary.get("not_judged") or ())
        + f"<table>{counts}</table>" + drift_view.batch_section(summary)
        + "<h2>Reasons, most messages first</h2>"
        + (f"<table><thead><tr><th>messages</th><th>rule (its messages below)</th></tr></thead>"
           f"<tbody>{reasons}</tbody></table>"
           if reasons else "<p class=muted>No reason recorded (no summary, or nothing quarantined).</p>")
        + f"<h2 id=samples>Quarantined messages{': ' + _e(reason) if reason else ''}</h2>"
        + access_note(show_raw)
        + samples_html
        + (f"<p class=muted>quarantine table: <code>{_e(tables['quarantine'])}</code>, "
           f"<code>batch_id = '{_e(batch_id)}'</code>; valid rows: <code>{_e(tables['valid'])}</code> "
           f"{_e(tables['where'])}</p>" if tables else "")
    )
    return _document(f"{config.name} {batch_id}", body)


def _tables(summary: dict[str, Any]) -> dict[str, str]:
    """Where the batch's rows are in the catalog, as the page names them (none before tables)."""
    if not summary.get("tables"):
        return {}
    written = BatchTables.from_json(summary["tables"])
    where = (f"on main, tag {written.tag}" if summary.get("published") and written.tag
             else f"on branch {written.branch} (not published)")
    return {"quarantine": written.quarantine, "valid": written.valid, "where": where}


def alert_kinds(lake: Lake, dataset: str, batch_id: str) -> list[str]:
    """The kinds of alert written for the batch (`batch`, `refused`), from the alert files."""
    fs, folder = fsspec.core.url_to_fs(lake.state("alerts", dataset))
    prefix = f"{batch_id}-"
    names = [path.rsplit("/", 1)[-1] for path in fs.glob(f"{folder}/{batch_id}-*.html")] \
        if fs.exists(folder) else []
    return sorted(name[len(prefix):-len(".html")] for name in names)


def trend_png(lake: Lake, datasets: dict[str, DatasetConfig], dataset: str, *,
              since: str | None = None, until: str | None = None) -> bytes:
    """The dataset's trend chart for batch dates since..until (open ends by default)."""
    return render_trend(dataset_trend(lake, _config(datasets, dataset), since=since, until=until))
