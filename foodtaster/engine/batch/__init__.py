"""The run of one batch: read the landed files, judge, split, write, gate, publish, account."""
