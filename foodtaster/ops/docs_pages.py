"""A batch's Data Docs as the batches page serves them: whole without network and without script.

Great Expectations' pages take Bootstrap, jQuery and their plugins from public CDNs; the gate
drops those tags (`engine.gate.gate_page.offline_docs`: the machine may reach no CDN), and the
plugin serves lake pages under a policy that runs no script (they hold values a producer sent).
What the scripts did is done here in CSS, added to each page as it is served (so pages written
before this are served whole too):

- the layout: the few Bootstrap classes GX's pages use (grid, cards, tables, buttons, navbar),
  and the status icons (Font Awesome's, from a CDN too) as a mark and a word;
- "Failed Only" / "Show All": the filter's radio buttons are inside their labels, so a click
  checks one without script, and `:has()` hides the rows and column sections GX marks as
  succeeded while "Failed Only" is checked;
- "Show more info...": a link to its panel's id; `:target` shows the panel it names.

Each page also gets a bar at its top leading back: the batch's page and every batch (the
batches page), and the gate's page, by addresses relative to the page's own.
"""

from __future__ import annotations

import html
from urllib.parse import quote

DOCS_STYLE = """
.ft-back{font:14px system-ui,sans-serif;background:#eef2f7;border-bottom:1px solid #ccd;
  padding:.45rem 1rem;margin:0 0 .5rem}.ft-back a{margin-right:1rem}
.container-fluid{padding:1rem 2rem}.row{display:flex;flex-wrap:wrap;margin:0 -.5rem}
[class*="col-"]{box-sizing:border-box;padding:0 .5rem;flex:0 0 100%;max-width:100%}
@media (min-width:768px){.col-md-2{flex:0 0 16.66%;max-width:16.66%}
  .col-md-10{flex:0 0 83.33%;max-width:83.33%}.d-md-block{display:block}}
.col-6{flex:0 0 50%;max-width:50%}.col-4{flex:0 0 33.33%;max-width:33.33%}.col-12{flex:0 0 100%}
.d-none{display:none}.d-flex{display:flex}
.card{border:1px solid #d9dde3;border-radius:4px;margin-bottom:1rem;background:#fff}
.card-header{background:#f3f5f8;border-bottom:1px solid #d9dde3;padding:.5rem}
.card-body{padding:.75rem}.m-2{margin:.5rem}.mb-3{margin-bottom:1rem}
.table{border-collapse:collapse;width:100%;margin:.5rem 0}
.table td,.table th{border-top:1px solid #dee2e6;padding:.3rem .5rem;text-align:left;vertical-align:top}
.table-responsive{overflow-x:auto}.navbar{display:flex;align-items:center;padding:.5rem 1rem}
.breadcrumb{display:flex;list-style:none;padding:.3rem .6rem;margin:0}
.breadcrumb-item+.breadcrumb-item::before{content:"/";padding:0 .4rem;color:#6c757d}
.nav{list-style:none;padding:0;margin:0}.nav-link{display:block;padding:.25rem .5rem}
.btn-group{display:inline-flex}.btn{display:inline-block;padding:.3rem .7rem;border:1px solid #2b5797;
  color:#2b5797;background:#fff;cursor:pointer;font-size:.9rem}
.btn:has(input:checked){background:#2b5797;color:#fff}.btn input{position:absolute;opacity:0}
.lead{font-size:1.1rem}.text-danger{color:#c0392b}.text-success{color:#2b7a3d}
.sticky,.sticky-top{position:static}footer{position:static!important}
.fas::before{font-style:normal;font-weight:700}.fa-check-circle::before{content:"\\2713  passed"}
.fa-times::before{content:"\\2717  failed"}.fa-exclamation-triangle::before{content:"\\26A0  error"}
.fa-question-circle::before{content:"?"}
.collapse:not(.show):not(:target){display:none}
body:has(#option2:checked) tr:has(> td.hide-succeeded-validation-target-child),
body:has(#option2:checked) .hide-succeeded-validation-target,
body:has(#option2:checked) :has(> * > .hide-succeeded-validations-column-section-target-child)
  {display:none}
"""


def back_bar(dataset: str, batch_id: str, path: str) -> str:
    """The bar that leads back from a Data Docs page at `path` (relative to the batch's Data
    Docs folder, `.../batches/<batch>/data-docs/`) to the batch, every batch and the gate."""
    up = "../" * path.count("/")  # to the Data Docs folder
    batch = f"{up}../../{quote(batch_id)}"  # .../batches/<batch>: the batch's page
    batches = f"{up}../../../../../"  # the plugin's root: the batches page
    return (f"<nav class=ft-back><a class=ft-batch href=\"{batch}\">&larr; batch {html.escape(batch_id)} "
            f"of {html.escape(dataset)}</a><a class=ft-batches href=\"{batches}\">all batches</a>"
            f"<a class=ft-gate href=\"{up}gate.html\">the batch gate</a></nav>")


def whole_page(page: str, dataset: str, batch_id: str, path: str) -> str:
    """A Data Docs page with its layout and controls in CSS and the bar back at its top."""
    styled = page.replace("</head>", f"<style>{DOCS_STYLE}</style></head>", 1) \
        if "</head>" in page else f"<style>{DOCS_STYLE}</style>{page}"
    start = styled.find("<body")
    opened = styled.find(">", start) + 1 if start >= 0 else 0
    return styled[:opened] + back_bar(dataset, batch_id, path) + styled[opened:]
