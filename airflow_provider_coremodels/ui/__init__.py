"""The CoreModels page in the Airflow UI: the latest snapshot a file sink stored, read-only.

``source`` finds and reads the snapshot, ``page`` renders it as HTML (both without Airflow,
so they are tested as plain functions), and ``plugin`` is the Airflow glue: the plugin the
provider registers and the FastAPI app the API server mounts under ``/coremodels``.
"""
