"""Foodtaster: one DAG a dataset of `pipeline.yaml` (`foodtaster_<dataset>`).

Each run lands the inbox files of its data interval, validates every message with
the Spark job, publishes the valid rows or holds the batch, alerts, and records
the batch in the ledger. The factory is `foodtaster_airflow.factory`; the registry
is `FOODTASTER_REGISTRY` (default: the repo's pipeline.yaml), the lake
`FOODTASTER_LAKE` (default: ./data/lake).
"""

from foodtaster_airflow.factory import build_dags

for _dag_id, _dag in build_dags().items():
    _dag.doc_md = f"{__doc__}\n{_dag.doc_md}"
    globals()[_dag_id] = _dag
