"""State in the lake: paths, landing, the ledger, publishing."""
