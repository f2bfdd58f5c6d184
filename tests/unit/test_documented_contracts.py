"""The contract syntax as the docs show it: README's example reads and judges as it says, and
docs/judging.md shows the bundled nested contract as it is."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

from foodtaster.contract import read_contract
from foodtaster_dev.oracle import decode, failed_reasons

ROOT = Path(__file__).resolve().parents[2]


def python_block(document: str, after: str) -> str:
    text = (ROOT / document).read_text()
    block = re.search(r"```python\n(.*?)```", text[text.index(after):], re.S)
    assert block, f"no python block after {after!r} in {document}"
    lines = block.group(1).splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in lines)


def test_the_readme_example_contract_reads_and_judges_as_the_readme_says():
    example = types.ModuleType("readme_example")  # pandera resolves annotations in the model's module
    sys.modules[example.__name__] = example
    exec(compile(python_block("README.md", "## Adding a dataset"), "README.md", "exec"), example.__dict__)  # noqa: S102
    model = example.Orders
    contract = read_contract(model)
    assert [f.name for f in contract.fields if not f.declared] == ["data", "data.customer"]
    assert contract.slot("data.lines").items is not None and contract.slot("data.tags").items.scalar
    good = {"id": "e-1", "time": "2026-11-20T10:00:00Z",
            "data": {"order_id": "o-1", "customer": {"email": "a@b.c"}, "total": 12.5,
                     "lines": [{"sku": "SKU-00001", "qty": 1, "price": 2.25}], "delivery_date": None}}
    assert failed_reasons(good, model, contract) == set()
    bad = decode(b'{"id": "e-2", "time": "2026-11-20T10:00:00Z", "data": {"order_id": "o-2", '
                 b'"customer": {"email": "a@b.c", "address": {}}, "total": 1.005, "tags": [""], '
                 b'"lines": [{"sku": "SKU-00001", "qty": 1, "price": 1}, {"sku": "SKU-00002", "qty": 0, '
                 b'"price": 1}, 7], "delivery_date": "2026-02-30"}}')
    assert failed_reasons(bad, model, contract) == {
        ("data.customer.address.zip.required", "data.customer.address.zip"),
        ("data.total.out_of_range", "data.total"),
        ("data.tags[].str_length(1)", "data.tags[0]"),
        ("data.lines[].qty.greater_than_or_equal_to(1)", "data.lines[1].qty"),
        ("data.lines[].type(object)", "data.lines[2]"),
        ("data.delivery_date.type(date)", "data.delivery_date"),
    }


def test_docs_judging_shows_the_bundled_nested_contract_whole():
    shown = python_block("docs/judging.md", "## Nested messages")
    bundled = (ROOT / "contracts/order_events.py").read_text().split('"""', 2)[2].strip()
    assert shown.strip() == bundled
