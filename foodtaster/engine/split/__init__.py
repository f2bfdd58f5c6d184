"""The split of the judged messages: a conversation's hold behind its poison message, and the
files each side is written as for the tables."""
