"""State in the lake: paths, leases, the ledger, publishing."""
