"""The judging of every message: the strict parser's layers, the contract's row checks (Python
ones guarded), a key's copies, the reasons a failed message carries, the poison list, masking
and drift."""
