"""Contracts: one pandera DataFrameModel a dataset, the row-level rules."""
