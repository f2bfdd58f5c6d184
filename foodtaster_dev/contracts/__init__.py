"""Contracts the demos and tests point a dataset at; no dataset of pipeline.yaml names them."""
