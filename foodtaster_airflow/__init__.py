"""Airflow glue: the DAG factory and task callables. The engine (`foodtaster`) never imports Airflow."""
