"""Operator alerts: what a person needs to act on a poisoned batch, by email, Slack or a file.

An alert is built once as a small document (paragraphs, facts, lists, tables,
sample messages: `foodtaster.ops.alert_render`'s blocks) and rendered three ways
there: plain text, HTML and Slack mrkdwn, so the channels always carry the same facts.

This module only BUILDS: the alert, its email (`email_message`: text and HTML,
the trend chart inline as a `cid:` image) and its Slack Block Kit payload. Sending
is the Airflow edge's (`foodtaster_airflow.channels`: the SMTP and Slack providers'
hooks over Airflow connections), so nothing here imports Airflow.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import TYPE_CHECKING, Any

from foodtaster.errors import Failed
from foodtaster.logs import batch_logger
from foodtaster.ops.alert_render import (
    Block,
    Commands,
    FactRows,
    Image,
    Items,
    Link,
    Para,
    Sample,
    Table,
    cut,
    fit_section,
    render_html,
    render_slack,
    render_text,
    slack_escape,
)
from foodtaster.ops.drift import alert_blocks
from foodtaster.ops.shown import in_lake
from foodtaster.ops.trend import producer_label, write_png
from foodtaster.policy import Verdict
from foodtaster.registry import DatasetConfig
from foodtaster.state.lake import Lake, write_json, write_text
from foodtaster.state.refusals import alert_stem
from foodtaster.state.tables import batch_tag
from foodtaster.summary import BatchTables

if TYPE_CHECKING:
    from foodtaster.ops.trend import Trend
    from foodtaster.state.ledger import LedgerEntry

MAX_SAMPLES = 5  # sample messages shown in a batch alert
MAX_SAMPLE_REASONS = 5  # reasons shown per sample message
SAMPLE_CHARS = 500  # a sample message is cut to this many characters
NOTE_CHARS = 200  # a reason or gate failure line is cut to this many characters
TOP_REASONS = 10  # rows of the top-reasons table
SLACK_HEADER_CHARS = 150  # Slack's limit for a header block
TOP_PRODUCERS = 8  # rows of the producers table
CHART_CID = "trend"  # the chart's Content-ID: the HTML shows it as <img src="cid:trend">
PATH_LABELS = {
    "quarantine": "Quarantine table",
    "valid": "Valid rows",
    "report": "Report",
    "data_docs": "Data Docs",
}


class AlertDeliveryError(Failed):
    """An alert could not be delivered; the message says where to, never the secret."""


@dataclass(frozen=True)
class InlineImage:
    cid: str  # Content-ID, without the angle brackets
    png: bytes
    filename: str


@dataclass(frozen=True)
class Alert:
    dataset: str
    batch_id: str
    kind: str  # "batch" | "disabled" | "refused"
    severity: str  # "ok" | "warning" | "critical"
    subject: str
    text: str
    html: str
    slack_sections: tuple[str, ...]  # mrkdwn, one Slack section block each
    images: tuple[InlineImage, ...] = ()  # shown in the HTML as <img src="cid:...">
    stem: str = ""  # its files' name under _state/alerts/<dataset>/; default <batch_id>-<kind>

    @property
    def file_stem(self) -> str:
        return self.stem or f"{self.batch_id}-{self.kind}"

    def slack_payload(self) -> dict[str, Any]:
        """A Slack incoming-webhook message: `text` for notifications, blocks for the channel."""
        return {
            "text": slack_escape(self.subject),
            "blocks": [
                {"type": "header", "text": {
                    "type": "plain_text", "text": cut(self.subject, SLACK_HEADER_CHARS),
                }},
                *({"type": "section", "text": {"type": "mrkdwn", "text": section}}
                  for section in self.slack_sections),
            ],
        }


def build_batch_alert(
    summary: dict[str, Any], verdict: Verdict, config: DatasetConfig, paths: dict[str, str],
    *, trend: Trend | None = None, chart_png: bytes | None = None, run_url: str | None = None,
    producers: Sequence[tuple[str, int]] = (), lake: Lake | None = None,
) -> Alert:
    """The alert for one batch from its summary.json and verdict.

    `paths` adds to (and overrides) the summary's own `paths`, for locations only the caller knows
    (e.g. where the valid rows were published). `trend` (the dataset's recent batches, this one
    included) adds the recent rate and its direction; `chart_png` (trend_chart.render_trend) goes inline
    in the email; `run_url` links the run in the Airflow UI; `producers` counts this batch's
    quarantined messages by producer (`trend.producers_ranked` over this batch alone), most first.
    `lake` shows its paths and samples' files relative to it; drift: `ops.drift.alert_blocks`.
    """
    dataset, batch_id = summary["dataset"], summary["batch_id"]
    rate = float(summary["quarantine_rate"])
    crossed = ("hold_rate", config.hold_rate) if rate >= config.hold_rate else (
        "alert_rate", config.alert_rate)
    status = verdict.severity.upper() if verdict.publish else "HELD"
    under = "under " if rate < config.alert_rate else ""  # a failed gate or a new field sent it
    subject = (f"[foodtaster] {dataset} batch {batch_id}: quarantine rate {rate:.2%} "
               f"({under}{crossed[0]} {crossed[1]:.2%}) — {status}")
    outcome = (
        "published; its quarantined messages are kept in quarantine" if verdict.publish
        else "HELD: its valid rows are not published until the batch is rerun and passes"
    )
    gate = summary.get("gate") or {}
    blocks: list[Block] = [
        Para(f"Batch {batch_id} of dataset {dataset} ({summary['batch_date']}) was {outcome}."),
        FactRows("Counts", (
            ("Messages", str(summary["messages"])),
            ("Valid", str(summary["valid"])),
            ("Quarantined", str(summary["quarantined"])),
            ("Already listed", f"{summary.get('listed') or 0} of the quarantined (poison list)"),
            ("Duplicates dropped", str(summary.get("duplicates_dropped", 0))),
            *_second_chance_facts(summary),
            ("Quarantine rate", f"{rate:.2%} (alert_rate {config.alert_rate:.2%}, "
                                f"hold_rate {config.hold_rate:.2%})"),
            ("Batch gate", "passed" if gate.get("passed", True) else "FAILED"),
            ("Verdict", f"{status} (severity {verdict.severity})"),
        )),
        Items("Why", verdict.why or ("no threshold crossed",)), *alert_blocks(summary),
    ]
    if run_url:
        blocks.insert(1, Link("Airflow run", f"{dataset} run in the Airflow UI", run_url))
    if producers:
        blocks.append(_producers_table(producers, int(summary["quarantined"])))
    if trend is not None:
        blocks.extend(_trend_blocks(trend, chart_png is not None))
    blocks.append(next_steps(summary, verdict))
    reasons = sorted((summary.get("reasons") or {}).items(), key=lambda item: (-item[1], item[0]))
    if reasons:
        blocks.append(Table(
            "Top reasons"
            + (f" ({TOP_REASONS} of {len(reasons)})" if len(reasons) > TOP_REASONS else ""),
            ("Reason", "Count"),
            tuple((rule, str(count)) for rule, count in reasons[:TOP_REASONS]),
        ))
    if gate.get("failed"):
        blocks.append(Items("Failed batch expectations", tuple(
            cut(f"{failed.get('expectation')} on {failed.get('column') or 'the batch'}: "
                 f"observed {failed.get('observed')}", NOTE_CHARS)
            for failed in gate["failed"]
        )))
    samples = (summary.get("samples") or [])[:MAX_SAMPLES]
    blocks.extend(
        _sample_block(sample, number, len(samples), lake) for number, sample in enumerate(samples, 1)
    )
    blocks.append(_where(_batch_paths(summary, paths, verdict), lake))
    images = (InlineImage(CHART_CID, chart_png, f"{dataset}-trend.png"),) if chart_png else ()
    return _alert(dataset, batch_id, "batch", verdict.severity, subject, blocks, images)


def _trend_blocks(trend: Trend, with_chart: bool) -> list[Block]:
    """The recent rate and its direction, the chart, and who sends the poison."""
    if trend.recent_rate is None:
        return [Para(f"Trend: no batch of {trend.dataset} with messages yet.")]
    shown = min(trend.last, sum(1 for b in trend.batches if b.messages))
    blocks: list[Block] = [FactRows("Trend", (
        (f"Last {shown} batches" if shown > 1 else "Last batch",
         f"{trend.recent_rate:.2%} quarantined"),
        ("Direction", "RISING" if trend.rising else "not rising"),
        ("Batches in the chart", f"{len(trend.batches)} "
                                 f"({trend.batches[0].batch_date} .. {trend.batches[-1].batch_date})"),
    ))]
    if with_chart:
        blocks.append(Image("Quarantine rate by batch", CHART_CID,
                             f"quarantine rate of every batch of {trend.dataset}, with alert_rate "
                             f"and hold_rate drawn; beside it, the quarantined messages of all "
                             f"{len(trend.batches)} batches by producer"))
    return blocks


def _producers_table(producers: Sequence[tuple[str, int]], quarantined: int) -> Table:
    """Who sent this batch's quarantined messages (the chart's panel counts its whole window)."""
    return Table(
        f"Producers of the {quarantined} quarantined messages of this batch"
        + (f" ({TOP_PRODUCERS} of {len(producers)})" if len(producers) > TOP_PRODUCERS else ""),
        ("Producer", "Quarantined"),
        tuple((producer_label(name), str(count)) for name, count in producers[:TOP_PRODUCERS]),
    )


def next_steps(summary: dict[str, Any], verdict: Verdict) -> Commands:
    """The commands an operator runs next, filled in for this batch."""
    dataset, batch_id, day = summary["dataset"], summary["batch_id"], summary["batch_date"]
    ds = f"--dataset {shlex.quote(dataset)}"
    steps = [("see the quarantined messages and their reasons",
              f"foodtaster quarantine show {ds} --batch {shlex.quote(batch_id)}")]
    sample = next((s for s in summary.get("samples") or () if s.get("line_number")), None)
    if sample is not None:
        name = str(sample.get("source_file") or "").rstrip("/").rpartition("/")[2]
        steps.append((
            "list a message as poison, so every later run quarantines it unjudged",
            f"foodtaster poison add {ds} --batch {shlex.quote(batch_id)} "
            f"--file {shlex.quote(name)} --line {sample['line_number']} --why \"...\"",
        ))
    if not verdict.publish:
        steps.append(("publish the held batch once you judged it fit",
                      f"foodtaster release {ds} --batch {shlex.quote(batch_id)} --why \"...\""))
        steps.append(("see what a redrive of the batch's quarantine would send on",
                      f"foodtaster redrive {ds} --from {day} --to {day} --dry-run"))
    return Commands("What to do next", tuple(steps))


def build_disabled_alert(
    dataset: str, held_batches: list[LedgerEntry], config: DatasetConfig
) -> Alert:
    """The "dataset disabled" alert from the ledger entries of the held batches, oldest first."""
    if not held_batches:
        raise ValueError("a disabled alert needs the held batches that caused it")
    dag_id = f"foodtaster_{dataset}"
    count = len(held_batches)
    subject = (
        f"[foodtaster] {dataset} disabled: {count} held batches in a row "
        f"(disable_after {config.disable_after}) — DAG {dag_id} paused"
    )
    blocks: list[Block] = [
        Para(
            f"The DAG {dag_id} paused itself after {count} held batches in a row "
            f"(disable_after {config.disable_after}). No batch of {dataset} is processed until "
            "an operator re-enables it. Held batches keep their valid rows unpublished and "
            "their poison messages in quarantine."
        ),
        Table("Held batches", ("Batch", "Date", "Messages", "Quarantine rate", "Why"), tuple(
            (
                str(entry["batch_id"]), str(entry["batch_date"]), str(entry.get("messages", "")),
                f"{float(entry.get('quarantine_rate', 0)):.2%}",
                cut("; ".join(entry.get("why") or ()), NOTE_CHARS),
            )
            for entry in held_batches
        )),
        Items("To re-enable", (
            "find and stop the cause: the held batches' reports and quarantined rows "
            "show the reasons",
            f"unpause the DAG {dag_id} in the Airflow UI, or run: airflow dags unpause {dag_id}",
            "rerun the held batches' dates to publish them once their data is fixed",
        )),
    ]
    return _alert(dataset, str(held_batches[-1]["batch_id"]), "disabled", "critical", subject,
                  blocks)


def build_refusal_alert(
    dataset: str, batch_id: str | None, batch_date: str | None, task: str, reason: str,
    *, run_id: str, run_url: str | None = None,
) -> Alert:
    """The alert for a run that refused its batch (`foodtaster.errors.refusal`): the task failed
    at once, without retries, since a retry would be refused the same way. `reason` says why
    and what to do instead. Filed under the run (`refusals.alert_stem`): `batch_id` is the batch
    the run landed, None when it was refused before landing anything."""
    date = f" (inbox date {batch_date})" if batch_date else ""
    if batch_id:
        subject = f"[foodtaster] {dataset} batch {batch_id}: REFUSED by the {task} task — not validated"
        what = f"refused batch {batch_id}{date}"
    else:
        subject = f"[foodtaster] {dataset} run {run_id}: REFUSED by the {task} task — nothing landed"
        what = f"was refused before it landed anything{date}"
    blocks: list[Block] = [
        Para(f"The {task} task of the {dataset} run {run_id} {what} and failed at once, without "
             "retries: a retry would be refused the same way. This run validated, published and "
             "recorded nothing; the valid and quarantine tables are as they were."),
        Items("Why, and what to do instead", (reason,)),
    ]
    if run_url:
        blocks.insert(1, Link("Airflow run", f"{dataset} run in the Airflow UI", run_url))
    return replace(_alert(dataset, batch_id or "none", "refused", "warning", subject, blocks),
                   stem=alert_stem(run_id))


def email_message(alert: Alert, sender: str, recipients: Sequence[str]) -> EmailMessage:
    """The alert as an email: multipart/alternative of the text and the HTML; with images,
    the HTML part is multipart/related and each image an inline part the HTML shows by
    its `cid:` (what mail clients display without loading anything)."""
    recipients = list(recipients)
    if not recipients:
        raise ValueError("an alert email needs at least one recipient")
    message = EmailMessage()
    message["Subject"] = alert.subject
    message["From"] = sender
    message["To"] = ", ".join(recipients)
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or "foodtaster")
    message["X-Foodtaster-Dataset"] = alert.dataset
    message["X-Foodtaster-Batch"] = alert.batch_id
    message["X-Foodtaster-Severity"] = alert.severity
    message.set_content(alert.text)
    message.add_alternative(alert.html, subtype="html")
    page = message.get_body(("html",))
    assert page is not None  # add_alternative just added it
    for image in alert.images:
        page.add_related(image.png, maintype="image", subtype="png", cid=f"<{image.cid}>",
                         filename=image.filename, disposition="inline")
    return message


def write_alert_file(lake: Lake, alert: Alert) -> str:
    """Keep the alert in the lake and log it, for when no channel is configured.

    Writes `<file_stem>.html` (the alert as a page; `<batch_id>-<kind>` for a batch's) and,
    next to it, `<file_stem>.json` (every field and the Slack payload); returns the
    HTML file's path.
    """
    base = lake.state("alerts", alert.dataset, alert.file_stem)
    page = alert.html
    for image in alert.images:  # a browser opening the file finds the chart beside it
        name = f"{base.rpartition('/')[2]}-{image.cid}.png"
        write_png(f"{base}-{image.cid}.png", image.png)
        page = page.replace(f'src="cid:{image.cid}"', f'src="{name}"')
    write_text(f"{base}.html", page)
    document = {key: value for key, value in asdict(alert).items() if key != "images"}
    write_json(f"{base}.json", {**document, "slack_payload": alert.slack_payload(),
                                "images": [image.filename for image in alert.images]})
    log = batch_logger(__name__, alert.dataset, alert.batch_id)
    log.event("alert_written", kind=alert.kind, severity=alert.severity,
              path=in_lake(lake, f"{base}.html"), subject=alert.subject)
    log.info("alert text follows\n%s", alert.text)
    return f"{base}.html"


def _second_chance_facts(summary: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Retrying rows and held conversations, for datasets that have them."""
    facts = []
    if summary.get("retrying"):
        facts.append(("Retrying", f"{summary['retrying']} of the quarantined (retryable rules only)"))
    if "groups_open" in summary:
        facts.append(("Held for their group", f"{summary.get('held_for_group') or 0} of the quarantined; "
                                              f"{summary['groups_open']} groups open"))
    return tuple(facts)


def _sample_block(sample: dict[str, Any], number: int, shown: int, lake: Lake | None = None) -> Sample:
    raw = str(sample.get("raw") or "")
    where = in_lake(lake, sample.get("source_file")) if lake else str(sample.get("source_file"))
    if sample.get("line_number") is not None:
        where += f" line {sample['line_number']}"
    reasons = sample.get("reasons") or []
    notes = [cut(_reason_line(reason), NOTE_CHARS) for reason in reasons[:MAX_SAMPLE_REASONS]]
    if len(reasons) > MAX_SAMPLE_REASONS:
        notes.append(f"and {len(reasons) - MAX_SAMPLE_REASONS} more reasons")
    if len(raw) > SAMPLE_CHARS:
        notes.append(f"message cut to {SAMPLE_CHARS} of {len(raw)} characters")
    return Sample(f"Sample {number} of {shown}: {where}", tuple(notes), cut(raw, SAMPLE_CHARS))


def _reason_line(reason: dict[str, Any]) -> str:
    line = f"{reason.get('layer')} {reason.get('rule')}"
    if reason.get("column"):
        line += f" [{reason['column']}]"
    line += f": {reason.get('message')}"
    if reason.get("value") is not None:
        line += f" (value: {reason['value']})"
    return line


def _batch_paths(summary: dict[str, Any], paths: dict[str, str], verdict: Verdict) -> dict[str, str]:
    """Where the batch is once the verdict is carried out: its quarantine's table, its valid rows
    on main (tagged) or, held, on their audit branch; the report and Data Docs in the lake."""
    places = {key: value for key, value in (summary.get("paths") or {}).items() if value}
    tables = summary.get("tables")
    if tables:
        written = BatchTables.from_json(tables)
        batch_id = summary.get("batch_id")
        places["quarantine"] = f"{written.quarantine} (batch_id = '{batch_id}')"
        places["valid"] = (f"{written.valid} on main, tag {batch_tag(str(batch_id))}" if verdict.publish
                           else f"{written.valid} on branch {written.branch} (not published)")
    return {**places, **paths}


def _where(paths: dict[str, str], lake: Lake | None = None) -> FactRows:
    ordered = [key for key in PATH_LABELS if key in paths] + sorted(set(paths) - set(PATH_LABELS))
    shown = {key: in_lake(lake, path) if lake else str(path) for key, path in paths.items()}
    return FactRows("Where, in the lake" if lake else "Where",
                    tuple((PATH_LABELS.get(key, key), shown[key]) for key in ordered), code=True)


def _alert(
    dataset: str, batch_id: str, kind: str, severity: str, subject: str, blocks: list[Block],
    images: tuple[InlineImage, ...] = (),
) -> Alert:
    return Alert(
        dataset=dataset, batch_id=batch_id, kind=kind, severity=severity, subject=subject,
        text=render_text(subject, blocks), html=render_html(subject, blocks),
        slack_sections=tuple(fit_section(section) for section in map(render_slack, blocks)
                             if section),
        images=images,
    )
