"""The integrations with other tools' protocols: OpenLineage events out, and the MCP server answering an
assistant's questions about one snapshot."""
