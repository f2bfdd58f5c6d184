"""Foodtaster: taste every batch of messages before downstream consumers eat it.

The engine: parse, validate, split, metrics, gate, lake paths. It never imports
Airflow, so it runs the same under spark-submit, plain python and the DAGs.
"""

__version__ = "0.1.0"
