"""Airflow hooks: connections to the deployment's REST API and to CoreModels."""
