"""An alert's channel-neutral blocks (paragraphs, facts, lists, tables, samples, an image,
commands, a link) and their three renderings: plain text, HTML and Slack mrkdwn, so every
channel carries the same facts. Every value that came from a message is escaped for its
channel: a `<script>` in a poison message must not run in a mail client.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

SLACK_SECTION_CHARS = 3000  # Slack's limit for a section block's text
CHART_WIDTH = 720  # pixels the HTML gives the chart (the PNG is 900 wide: sharp when scaled)

# The alert document: channel-neutral blocks, rendered by render_text, render_html, render_slack.


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class FactRows:
    heading: str
    rows: tuple[tuple[str, str], ...]  # (label, value)
    code: bool = False  # values are paths or identifiers, shown verbatim


@dataclass(frozen=True)
class Items:
    heading: str
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    heading: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Sample:
    heading: str
    notes: tuple[str, ...]
    raw: str


@dataclass(frozen=True)
class Image:
    heading: str
    cid: str
    alt: str


@dataclass(frozen=True)
class Commands:
    heading: str
    items: tuple[tuple[str, str], ...]  # (what it is for, the command line)


@dataclass(frozen=True)
class Link:
    heading: str
    label: str
    url: str


Block = Para | FactRows | Items | Table | Sample | Image | Commands | Link


def cut(text: str, limit: int) -> str:
    """At most `limit` characters; an ellipsis shows where the text was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_text(subject: str, blocks: list[Block]) -> str:
    parts = [subject]
    for block in blocks:
        match block:
            case Para(text):
                parts.append(text)
            case FactRows(heading, rows, _):
                width = max(len(label) for label, _ in rows) + 1 if rows else 0
                parts.append("\n".join(
                    [f"{heading}:"] + [f"  {label + ':':<{width}} {value}" for label, value in rows]
                ))
            case Items(heading, items):
                parts.append("\n".join([f"{heading}:"] + [f"  - {item}" for item in items]))
            case Table(heading, columns, rows):
                table = (columns, *rows)
                widths = [max(map(len, column)) for column in zip(*table, strict=True)]
                lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                         .rstrip() for row in table]
                parts.append("\n".join([f"{heading}:"] + [f"  {line}" for line in lines]))
            case Sample(heading, notes, raw):
                parts.append("\n".join(
                    [f"{heading}:"] + [f"  - {note}" for note in notes] + [f"    {raw}"]
                ))
            case Image(heading, _, alt):
                parts.append(f"{heading}: {alt} (a chart in the HTML version of this alert)")
            case Commands(heading, items):
                parts.append("\n".join([f"{heading}:"] + [
                    line for why, command in items for line in (f"  - {why}:", f"      {command}")
                ]))
            case Link(heading, _, url):
                parts.append(f"{heading}: {url}")
    return "\n\n".join(parts) + "\n"


def render_html(subject: str, blocks: list[Block]) -> str:
    esc = html.escape
    cell = 'style="text-align:left;padding:2px 8px;border-bottom:1px solid #ddd"'
    body = [f"<h2>{esc(subject)}</h2>"]
    for block in blocks:
        match block:
            case Para(text):
                body.append(f"<p>{esc(text)}</p>")
            case FactRows(heading, rows, code):
                shown = "<code>{}</code>" if code else "{}"
                body.append(f"<h3>{esc(heading)}</h3><table>" + "".join(
                    f"<tr><th {cell}>{esc(label)}</th>"
                    f"<td {cell}>{shown.format(esc(value))}</td></tr>"
                    for label, value in rows
                ) + "</table>")
            case Items(heading, items):
                body.append(f"<h3>{esc(heading)}</h3><ul>"
                            + "".join(f"<li>{esc(item)}</li>" for item in items) + "</ul>")
            case Table(heading, columns, rows):
                header = "".join(f"<th {cell}>{esc(column)}</th>" for column in columns)
                lines = "".join(
                    "<tr>" + "".join(f"<td {cell}>{esc(value)}</td>" for value in row) + "</tr>"
                    for row in rows
                )
                body.append(f"<h3>{esc(heading)}</h3><table><tr>{header}</tr>{lines}</table>")
            case Sample(heading, notes, raw):
                body.append(
                    f"<h3>{esc(heading)}</h3><ul>"
                    + "".join(f"<li>{esc(note)}</li>" for note in notes)
                    + "</ul><pre style=\"white-space:pre-wrap;background:#f4f4f4;padding:6px\">"
                    + f"{esc(raw)}</pre>"
                )
            case Image(heading, cid, alt):
                body.append(f"<h3>{esc(heading)}</h3><img src=\"cid:{esc(cid)}\" alt=\"{esc(alt)}\" "
                            f"width=\"{CHART_WIDTH}\" style=\"max-width:100%;height:auto\">")
            case Commands(heading, items):
                body.append(f"<h3>{esc(heading)}</h3><ul>" + "".join(
                    f"<li>{esc(why)}:<br><code style=\"background:#f4f4f4;padding:2px 4px\">"
                    f"{esc(command)}</code></li>" for why, command in items
                ) + "</ul>")
            case Link(heading, label, url):
                # _top: an alert page shown in a frame (the batches page in Airflow) opens the
                # link in the whole window; a mail client and a page opened alone ignore it
                body.append(f"<p><strong>{esc(heading)}:</strong> "
                            f"<a target=\"_top\" href=\"{esc(url)}\">{esc(label)}</a></p>")
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{esc(subject)}</title></head>\n<body style=\"font-family:sans-serif\">\n"
        + "\n".join(body) + "\n</body></html>\n"
    )


def slack_escape(text: str) -> str:
    """Slack mrkdwn control characters: &, <, > become entities (Slack's own rule)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_code(text: str) -> str:
    """Escaped text that cannot end the code block around it: ``` gets zero-width spaces."""
    return slack_escape(text).replace("```", "`\u200b`\u200b`")


def render_slack(block: Block) -> str:
    esc = slack_escape
    match block:
        case Para(text):
            return esc(text)
        case FactRows(heading, rows, code):
            return "\n".join([f"*{esc(heading)}*"] + [
                f"*{esc(k)}:* " + (f"`{slack_code(v)}`" if code else esc(v)) for k, v in rows
            ])
        case Items(heading, items):
            return "\n".join([f"*{esc(heading)}*"] + [f"• {esc(item)}" for item in items])
        case Table(heading, columns, rows):
            return "\n".join(
                [f"*{esc(heading)}* ({esc(' — '.join(columns))})"]
                + [f"• `{slack_code(first)}` — {esc(' — '.join(rest))}" for first, *rest in rows]
            )
        case Sample(heading, notes, raw):
            return "\n".join(
                [f"*{esc(heading)}*"] + [f"• {esc(note)}" for note in notes]
                + [f"```{slack_code(raw)}```"]
            )
        case Image():
            return ""  # Slack gets the numbers (the trend facts) and the run's link, no image
        case Commands(heading, items):
            return "\n".join([f"*{esc(heading)}*"] + [
                f"• {esc(why)}: `{slack_code(command)}`" for why, command in items
            ])
        case Link(heading, label, url):
            return f"*{esc(heading)}:* <{slack_escape(url)}|{esc(label)}>"


def fit_section(text: str) -> str:
    """Cut a mrkdwn section to Slack's limit, leaving no half entity and no open code block."""
    if len(text) <= SLACK_SECTION_CHARS:
        return text
    cut = re.sub(r"&[a-z]*$", "", text[: SLACK_SECTION_CHARS - 5])
    return cut + ("```" if cut.count("```") % 2 else "") + "…"

