"""The batch gate: Great Expectations on what the batch's audit branch holds."""
