"""The command line: ``airflow coremodels ...`` and ``python -m airflow_provider_coremodels ...``."""
