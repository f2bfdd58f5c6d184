"""Files the lake keeps of a batch for a person, served beside the batches pages: its Data Docs
(the gate's page with the batch's own verdict in it) and its alerts. Their pages hold values a
producer sent: the plugin serves them under a sandboxing Content-Security-Policy."""

from __future__ import annotations

import posixpath
import re
from typing import Any

import fsspec

from foodtaster.data_docs import BATCH_VERDICT_END, BATCH_VERDICT_START
from foodtaster.ops.docs_pages import whole_page
from foodtaster.ops.pages import PageNotFound, _batch, _config, _e, _rate, shown_verdict
from foodtaster.registry import DatasetConfig
from foodtaster.state.lake import Lake

MEDIA_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css", ".png": "image/png",
               ".json": "application/json", ".js": "text/javascript", ".svg": "image/svg+xml",
               ".ico": "image/x-icon"}
ALERT_FILE = re.compile(r"[0-9A-Za-z_-]+\.(?:html|png)")

# Pages written into the lake (Data Docs, alerts) hold values a producer sent: served on the
# UI's own origin, they may run no script and fetch nothing but their own folder's files. They
# keep their origin (`allow-same-origin`, harmless without `allow-scripts`), so the images and
# styles they fetch carry the user's session, as the pages' own fetch did.
LAKE_PAGE_POLICY = ("sandbox allow-same-origin allow-popups allow-top-navigation-by-user-activation; "
                    "default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'")


def _read(uri: str, shown_as: str) -> tuple[bytes, str]:
    fs, path = fsspec.core.url_to_fs(uri)
    if not fs.isfile(path):
        raise PageNotFound(f"{shown_as} is not in the lake")
    suffix = "." + path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
    return fs.cat_file(path), MEDIA_TYPES.get(suffix, "application/octet-stream")


def data_docs_file(lake: Lake, datasets: dict[str, DatasetConfig], dataset: str, batch_id: str,
                   path: str) -> tuple[bytes, str]:
    """A file of the batch's Data Docs (the gate's page, GX's pages, their styles), and its media
    type. `path` is relative to the Data Docs folder and never leaves it."""
    config, entry, summary = _batch(lake, datasets, dataset, batch_id)
    clean = posixpath.normpath(path)
    if path.startswith("/") or clean == "." or clean.startswith(".."):
        raise PageNotFound(f"{path!r} is not a file of the batch's Data Docs")
    docs = (summary.get("paths") or {}).get("data_docs")
    folder = docs.rsplit("/", 1)[0] if docs else lake.report(config.name, batch_id) + "/data_docs"
    content, media_type = _read(f"{folder}/{clean}", f"Data Docs {clean} of batch {batch_id}")
    if clean == (docs.rsplit("/", 1)[-1] if docs else "gate.html"):  # the gate's own page
        content = with_batch_verdict(content.decode("utf-8", errors="replace"),
                                     {**summary, **(entry or {})}, config).encode()
    if media_type.startswith("text/html"):  # whole without network or script, with a way back
        content = whole_page(content.decode("utf-8", errors="replace"), config.name, batch_id,
                             clean).encode()
    return content, media_type


def with_batch_verdict(page: str, record: dict[str, Any], config: DatasetConfig) -> str:
    """The gate's page with the batch's own verdict beside the gate's (in the place the gate
    left for it): the gate is one of the checks the verdict was decided from."""
    start, end = page.find(BATCH_VERDICT_START), page.find(BATCH_VERDICT_END)
    if start < 0 or end < start:
        return page  # a page of an older gate: as it was written
    verdict, why = shown_verdict(record)
    gate = record.get("gate") or {}
    shown = (f"<p class=\"batch-verdict {_e(verdict)}\"><b>the batch: {_e(verdict)}</b>"
             f" (quarantine rate {_rate(record.get('quarantine_rate'))}, alert_rate "
             f"{_rate(config.alert_rate)}, hold_rate {_rate(config.hold_rate)})"
             + ("; the gate passed, the batch's other checks decided" if gate.get("passed", True)
                and verdict == "held" else "") + "</p>"
             + ("<ul>" + "".join(f"<li>{_e(line)}</li>" for line in why) + "</ul>" if why else ""))
    return page[:start] + shown + page[end + len(BATCH_VERDICT_END):]


def alert_file(lake: Lake, datasets: dict[str, DatasetConfig], dataset: str,
               name: str) -> tuple[bytes, str]:
    """An alert written for one of the dataset's batches (`<batch_id>-<kind>.html`, its chart
    `<batch_id>-<kind>-trend.png`) or refused runs (`refused-<run>.html`), and its media type."""
    config = _config(datasets, dataset)
    if not ALERT_FILE.fullmatch(name):
        raise PageNotFound(f"{name!r} is not the name of an alert file")
    return _read(lake.state("alerts", config.name, name), f"alert {name} of {dataset}")
