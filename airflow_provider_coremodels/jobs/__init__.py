"""The jobs: settings in, the work done by combining capture, core and sinks out (the export, the merge
of deployments, the pre-merge check, the alerts an export raises)."""
