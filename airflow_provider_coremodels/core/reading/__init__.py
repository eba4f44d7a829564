"""Reading: the Airflow artifacts (dags, tasks, datasets; or several deployments' estates) in, one
estate model out."""
