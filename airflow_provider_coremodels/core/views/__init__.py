"""The views: a snapshot document in, renderings out (a findings table, markdown, SARIF, the
lineage picture, the trend)."""
