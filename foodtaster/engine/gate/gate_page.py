"""The gate's pages, readable offline: GX's Data Docs with their remote tags dropped, and the
batch's own page (`gate.html`) with everything it needs inline; and the suite parameters of
a batch, which both the gate and its page resolve."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from pathlib import Path
from typing import Any


def batch_parameters(batch_date: str) -> dict[str, Any]:
    """Suite parameters for a batch: the freshness window is the batch date +- one day."""
    day = dt.datetime.fromisoformat(batch_date)
    return {
        "batch_date": batch_date,
        "created_at_min": day - dt.timedelta(days=1),
        "created_at_max": day + dt.timedelta(days=2),
    }


DOCS_SITE = "batch"
BATCH_PAGE = "gate.html"
# Data Docs pull Bootstrap, jQuery, Vega and GX's logos from public CDNs; offline they hang or
# render unstyled. These tags are dropped; the pages keep GX's own stylesheet (copied under
# static/) and the batch page below carries everything it needs inline.
_REMOTE_TAG = re.compile(
    r"<(?:link|script|img)\b[^>]*?(?:href|src)\s*=\s*[\"']https?://[^>]*>(?:\s*</script>)?",
    re.IGNORECASE | re.DOTALL,
)
_REMOTE_CSS_URL = re.compile(r"url\(\s*[\"']?https?://[^)]*\)", re.IGNORECASE)


def offline_docs(folder: Path) -> None:
    """Drop every style, script and image the Data Docs pages would fetch from the network."""
    for page in [*folder.rglob("*.html"), *folder.rglob("*.css")]:
        text = page.read_text(encoding="utf-8")
        page.write_text(_REMOTE_CSS_URL.sub("none", _REMOTE_TAG.sub("", text)), encoding="utf-8")


def batch_page(gate: dict[str, Any], document: dict[str, Any], dataset: str, batch_id: str,
               batch_date: str, validation_pages: list[str]) -> str:
    """The gate's verdict for one batch as a page that needs no network and no script.

    One row an expectation: what it checks, why (the suite's `meta`), what GX observed, and
    the verdict; links go to GX's own pages in the same folder.
    """
    from foodtaster.data_docs import BATCH_VERDICT_END, BATCH_VERDICT_START

    suite = {(e["type"], e.get("kwargs", {}).get("column")): e for e in document["expectations"]}
    parameters = batch_parameters(batch_date)
    rows = []
    for result in gate["results"]:
        expectation = suite.get((result["expectation"], result["column"]), {})
        arguments = {k: _resolved(v, parameters) for k, v in expectation.get("kwargs", {}).items()
                     if k != "column"}
        observed = _h(observed_text(result["observed"]))
        if result["error"]:
            observed += f"<br>error: {_h(result['error'])}"
        unexpected = "" if result["unexpected_percent"] is None else f"{result['unexpected_percent']:.4g}%"
        rows.append(
            f'<tr class="{"ok" if result["success"] else "failed"}">'
            f"<td>{'passed' if result['success'] else 'FAILED'}</td>"
            f"<td>{_h(result['expectation'])}</td><td>{_h(result['column'] or '')}</td>"
            f"<td><code>{_h(json.dumps(arguments, default=str))}</code></td><td>{observed}</td>"
            f"<td>{unexpected}</td><td>{_h(expectation.get('meta', {}).get('why', ''))}</td></tr>"
        )
    verdict = "passed" if gate["passed"] else "FAILED: the batch is held"
    held_also = ("The gate is one of the checks of the batch's verdict: a batch whose gate passed "
                 "is still held when its quarantine rate reaches hold_rate or its counts do not add "
                 "up. The batch's verdict is in its summary.json, and the Foodtaster batches page "
                 "(Airflow UI, Browse) shows it here.")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{_h(dataset)} {_h(batch_id)}: batch gate {verdict}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #ccc; padding: .3em .6em; text-align: left; }}
tr.failed td {{ background: #fde2e2; }} tr.ok td:first-child {{ color: #176b2c; }}
.verdict {{ font-size: 1.3em; }} code {{ font-size: .9em; }}
</style></head><body>
<h1>Batch gate: {_h(dataset)}</h1>
<p class="verdict">batch gate: {_h(verdict)}</p>
{BATCH_VERDICT_START}<p class="batch-verdict">{_h(held_also)}</p>{BATCH_VERDICT_END}
<dl>
<dt>dataset (GX data asset)</dt><dd>{_h(dataset)}</dd>
<dt>batch (GX run name)</dt><dd>{_h(batch_id)}</dd>
<dt>batch date</dt><dd>{_h(batch_date)}</dd>
<dt>expectation suite</dt><dd>{_h(gate["suite"])}</dd>
</dl>
<table><thead><tr><th>verdict</th><th>expectation</th><th>column</th><th>arguments</th><th>observed</th>
<th>unexpected</th><th>why</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
<p>Great Expectations' own pages (the batches page serves them laid out, their filter
working, without network or script):
{" ".join(f'<a href="{_h(p)}">validation result</a>' for p in validation_pages)}
<a href="index.html">Data Docs index</a></p>
</body></html>
"""


def observed_text(value: Any) -> str:
    """What GX observed, as a person reads it: a number or a word as it is, a list joined, a
    quantile result as `quantile 0.5: 84.39`, any other mapping as `key: value` pairs; nothing
    observed (a per-row expectation counts its unexpected rows instead) as a dash."""
    if value is None:
        return "—"
    if isinstance(value, dict):
        if set(value) == {"quantiles", "values"}:
            return ", ".join(f"quantile {q}: {observed_text(v)}"
                             for q, v in zip(value["quantiles"], value["values"], strict=False))
        return "; ".join(f"{key}: {observed_text(item)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(observed_text(item) for item in value) or "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _resolved(value: Any, parameters: dict[str, Any]) -> Any:
    """A suite argument with its `{"$PARAMETER": name}` replaced by this batch's value."""
    if isinstance(value, dict) and set(value) == {"$PARAMETER"}:
        return parameters.get(value["$PARAMETER"], value)
    return value


def _h(value: Any) -> str:
    return html.escape(str(value))
