"""A batch's Data Docs as the batches page serves them: GX's pages laid out and their controls
working in CSS, without network or script, and a bar at the top of each leading back."""

from __future__ import annotations

from pathlib import Path

from test_pages import DATASETS, drilled, lake  # noqa: F401  the lake with batch 20261106

from foodtaster.ops import lake_files
from foodtaster.state.lake import write_text

# The parts of a GX 1.x validation page its scripts worked on (as the gate writes it, its CDN
# tags dropped): the filter, a succeeded and a failed result, a column section that all passed,
# and a "Show more info..." panel.
GX_PAGE = (Path(__file__).parent / "gx_validation_page.html").read_text(encoding="utf-8")
PAGE = "validations/orders/20261106/20261106T010000Z/foodtaster-orders.html"


def served(at, path: str) -> str:
    return lake_files.data_docs_file(at, DATASETS, "orders", "20261106", path)[0].decode()


def test_each_data_docs_page_leads_back_to_the_batch_every_batch_and_the_gate(drilled):  # noqa: F811
    write_text(f"{drilled.report('orders', '20261106')}/data_docs/{PAGE}", GX_PAGE)
    page = served(drilled, PAGE)
    # .../batches/20261106/data-docs/validations/orders/20261106/<run>/x.html: four folders deep
    up = "../../../../"
    assert (f'<body><nav class=ft-back><a class=ft-batch href="{up}../../20261106">&larr; batch 20261106 '
            f'of orders</a><a class=ft-batches href="{up}../../../../../">all batches</a>'
            f'<a class=ft-gate href="{up}gate.html">the batch gate</a></nav>') in page
    assert '<a class=ft-gate href="gate.html">' in served(drilled, "gate.html")
    assert page.index("<style>") < page.index("</head>")  # the layout and controls, in CSS
    assert ".collapse:not(.show):not(:target){display:none}" in page
    assert "https://" not in page.split("</head>")[0]  # nothing fetched from a CDN
