"""Snapshots: an estate and its audit in, the snapshot document (camelCase JSON, its fingerprint)
out, and stored ones read back."""
