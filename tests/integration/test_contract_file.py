"""A pandera contract kept outside the project, named in pipeline.yaml by its file
(`contract: ../elsewhere/orders_contract.py:Orders`): found without PYTHONPATH, and its
Python checks run on Spark's Python workers, which cannot import it by name."""

from __future__ import annotations

import textwrap

from support.frames import lines_frame

from foodtaster.engine.judging.judging import validate_lines
from foodtaster.registry import CONTRACT_FILE_MODULE, load_registry

CONTRACT = '''
import pandas as pd
import pandera.pandas as pa
from pandera.api.extensions import register_check_method
from pandera.typing import Series


@register_check_method(statistics=["word"])
def says_file_word(series: pd.Series, *, word: str) -> pd.Series:
    return series.str.contains(word)


class Outside(pa.DataFrameModel):
    id: Series[str] = pa.Field(str_length={"min_value": 2})
    note: Series[str] = pa.Field(says_file_word={"word": "ok"})
'''


def test_a_contract_file_outside_the_project_is_read_and_its_python_checks_run_on_workers(spark, tmp_path):
    elsewhere = tmp_path / "teams" / "shop"
    elsewhere.mkdir(parents=True)
    (elsewhere / "outside_contract.py").write_text(CONTRACT)
    project = tmp_path / "project"
    project.mkdir()
    registry = project / "pipeline.yaml"
    registry.write_text(textwrap.dedent("""
        datasets:
          outside:
            contract: ../teams/shop/outside_contract.py:Outside
            expectation_suite: expectations/orders.json
    """))
    config = load_registry(registry)["outside"]
    model = config.load_contract()
    assert model.__name__ == "Outside" and model.__module__ == f"{CONTRACT_FILE_MODULE}.outside"
    contract = config.read_contract()
    assert [c.name for c in contract.python_checks] == ["says_file_word"]
    lines = [b'{"id": "a1", "note": "all ok"}', b'{"id": "x", "note": "nope"}']
    rows = validate_lines(lines_frame(spark, lines), contract, 1 << 20).orderBy("_row_id").collect()
    assert [sorted(r.rule for r in row["_reasons"]) for row in rows] == [
        [], ["id.str_length(2)", "note.says_file_word(ok)"]]
