"""Comparing: two snapshot documents (or a snapshot and a proposed change) in, what opened,
closed, came and went out."""
