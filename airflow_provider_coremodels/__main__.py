"""Entry point for ``python -m airflow_provider_coremodels``."""

from __future__ import annotations

import sys

from airflow_provider_coremodels.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
