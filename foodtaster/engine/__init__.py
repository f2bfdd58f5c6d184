"""Spark transformations: read, parse, check, split, gate a batch. No Airflow import."""
