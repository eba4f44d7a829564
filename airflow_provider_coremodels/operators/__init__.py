"""Airflow operators of the CoreModels provider."""
