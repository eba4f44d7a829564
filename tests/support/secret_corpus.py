"""A corpus for measuring a credential scrubber: secrets inside the text servers write, and clean text.

``SECRET_TEXTS`` are descriptions, deadline alert names, import errors and 4xx bodies holding one
credential each, one row per shape issue 44 names (a password, a JWT, a ``postgresql://`` URL,
``password=``, an AWS key id and secret, a session token, a Google token, a GCP service-account
key, GitHub, Slack, Azure) and a few more; ``own`` rows hold a secret with no shape at all, which
only the run's own registry (``redaction.SECRETS``) can know. ``CLEAN_TEXTS`` are what an estate
holds that looks like none and must come out unchanged: DAG ids naming tokens and passwords,
asset URIs, SQL, cron expressions, documentation, hashes, run ids and object keys.

The secrets are made up (``cm...`` canaries where the shape allows), so a search for them hits
nothing else. ``benchmarks/bench_credentials.py`` prints each scrubber's recall and false positives
on it; ``tests/core/test_credentials.py`` holds ours to the figures the docs give.
"""

from __future__ import annotations

from dataclasses import dataclass

from support.secret_shapes import AWS_ID, AWS_SECRET, AZURE_KEY, INNOCENT, JWT, PEM_BODY


@dataclass(frozen=True)
class SecretText:
    name: str
    text: str
    secrets: tuple[str, ...]  # every one must be gone (ours) or located (a detector's finds)
    own: bool = False  # a secret without a shape: only the run that holds it knows it


#: The run's own secrets in the ``own`` rows: what ``SECRETS.add`` registers before the measure.
OWN_PASSWORD = "Tr0ub4dor&3-cm"
OWN_TOKEN = "cmOpaqueApiToken9f3b2c71"
SESSION_TOKEN = (
    "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDcmCanarySessionToken0a1b2c3d4e5f6"
    "g7h8i9j0kLmNoPqRsTuVwXyZ0123456789abcdefghijABCDEFGHIJ/+abcdefghij0123456789=="
)
GOOGLE_TOKEN = "ya29.a0AfB_byCmCanaryGoogleAccessToken-q8W2eR5tY7uI9oP1aS3dF5gH7jK9lZ0xC2vB4nM6"
GITHUB_PAT = "github_pat_11ABCDEFG0cmCanaryFineGrained_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"
SA_KEY_ID = "0f1e2d3c4b5a69788796a5b4c3d2e1f0cmCanary"
#: As random as a real Azure storage key (64 random bytes in base64), so an entropy test can see it.
AZURE_RANDOM_KEY = "vOXwKxUMliMZm7OSnEWatXx/+srfdqHBJWdhHadWhvriFS7DbuOMqMjVOFcw2ujct4d0yduSQPHToxcGwoeG9w=="

SECRET_TEXTS: tuple[SecretText, ...] = (
    SecretText(
        "password echoed",
        f"Nightly sync; logs in as etl with {OWN_PASSWORD} (ask the platform team)",
        (OWN_PASSWORD,),
        own=True,
    ),
    SecretText(
        "token echoed",
        f"deadline alert for the partner feed ({OWN_TOKEN})",
        (OWN_TOKEN,),
        own=True,
    ),
    SecretText("JWT in an alert name", f"escalate: token {JWT}", tuple(JWT.split(".")[1:])),
    SecretText(
        "postgresql URL",
        "sqlalchemy.exc.OperationalError: could not connect to "
        "postgresql://etl:cmCanaryPgPw-71@warehouse.internal:5432/dw",
        ("cmCanaryPgPw-71",),
    ),
    SecretText(
        "password= in a 4xx body",
        '{"detail": "Invalid connection: host=db port=5432 user=etl password=cmCanaryKwPw-72 '
        'sslmode=require"}',
        ("cmCanaryKwPw-72",),
    ),
    SecretText(
        "AWS key id and secret",
        f"botocore.exceptions.ClientError: key {AWS_ID} secret {AWS_SECRET} refused",
        (AWS_ID, AWS_SECRET),
    ),
    SecretText(
        "AWS secret, environment style",
        f"KeyError: AWS_SECRET_ACCESS_KEY={AWS_SECRET} not accepted by the profile",
        (AWS_SECRET,),
    ),
    SecretText(
        "AWS session token",
        f"botocore.exceptions.ClientError: ExpiredToken: the security token {SESSION_TOKEN} has expired",
        (SESSION_TOKEN[:60], SESSION_TOKEN[60:]),
    ),
    SecretText(
        "Google access token",
        f"google.auth.exceptions.RefreshError: ('invalid_grant', 'token {GOOGLE_TOKEN} expired')",
        (GOOGLE_TOKEN[5:],),
    ),
    SecretText(
        "GCP service-account key JSON",
        'google.auth.exceptions.MalformedError: {"type": "service_account", "project_id": "lake", '
        f'"private_key_id": "{SA_KEY_ID}", '
        f'"private_key": "-----BEGIN PRIVATE KEY-----\\n{PEM_BODY}\\n-----END PRIVATE KEY-----\\n", '
        '"client_email": "etl@lake.iam.gserviceaccount.com"}',
        (PEM_BODY, SA_KEY_ID),
    ),
    SecretText(
        "GitHub classic token",
        "github.GithubException.BadCredentialsException: 401 for ghp_cmCanaryGithubClassic0123456789abcdXY",
        ("cmCanaryGithubClassic",),
    ),
    SecretText(
        "GitHub fine-grained token",
        f"git clone https://x-access-token:{GITHUB_PAT}@github.com/org/repo",
        (GITHUB_PAT[11:],),
    ),
    SecretText(
        "Slack bot token",
        "slack_sdk.errors.SlackApiError: invalid_auth for xoxb-123456789012-1234567890123-cmCanarySlackBot",
        ("cmCanarySlackBot",),
    ),
    SecretText(
        "Slack webhook",
        "Alert channel: https://hooks.slack.com/services/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",
        ("cmCanarySlackHook24chars",),
    ),
    SecretText(
        "Azure connection string",
        "azure.core.exceptions.ClientAuthenticationError: DefaultEndpointsProtocol=https;AccountName=lake;"
        f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
        (AZURE_KEY,),
    ),
    SecretText(
        "Azure SAS URL",
        "azure.core.exceptions.HttpResponseError: https://lake.blob.core.windows.net/raw/orders.csv?"
        "sv=2022-11-02&ss=b&srt=o&sp=r&se=2027-01-01T00:00:00Z&sig=cmCanarySasSignature%2Bq0ZxYw%3D",
        ("cmCanarySasSignature",),
    ),
    SecretText(
        "Azure storage key alone",
        f"Rotated the lake's storage key; the old one was {AZURE_RANDOM_KEY}",
        (AZURE_RANDOM_KEY,),
    ),
    SecretText(
        "basic auth header",
        "requests.exceptions.HTTPError: 401 for headers {'Authorization': 'Basic ZXRsOmNtQ2FuYXJ5QmFzaWM='}",
        ("ZXRsOmNtQ2FuYXJ5QmFzaWM=",),
    ),
    SecretText(
        "JSON password",
        'KeyError: {"login": "etl", "password": "cmCanaryJsonPw-73", "host": "db"}',
        ("cmCanaryJsonPw-73",),
    ),
    SecretText(
        "ODBC PWD",
        "pyodbc.InterfaceError: ('28000', 'DRIVER={ODBC 18};SERVER=db;UID=etl;PWD=cmCanaryOdbcPw-74;')",
        ("cmCanaryOdbcPw-74",),
    ),
    SecretText(
        "private key in a description",
        f"Deploy key: -----BEGIN OPENSSH PRIVATE KEY-----{PEM_BODY}-----END OPENSSH PRIVATE KEY-----",
        (PEM_BODY,),
    ),
)

CLEAN_TEXTS: tuple[str, ...] = (
    *INNOCENT,
    # DAG and task ids that name what credentials are for
    "password_reset_dag",
    "token_refresh",
    "secret_rotation.rotate_api_keys",
    "sk-learn_features_daily_refresh",
    "aws_key_rotation_v2",
    "ingest_slack_xox_export",
    "refresh_google_ya29_scopes",
    # asset URIs and names
    "s3://lake/raw/orders/2026-12-01/part-00000-8f14e45f-ceea-467f-a0e6-1e0b6b8e5a6b-c000.snappy.parquet",
    "postgres://warehouse.internal:5432/dw/public/fact_orders",
    "gs://lake-prod-eu/curated/customers/v=3/",
    "snowflake://acme-eu/ANALYTICS/MART/REVENUE_DAILY",
    "file:///opt/airflow/data/exports/token_usage.csv",
    "https://api.vendor.test/v1/orders?since=2026-12-01&page_token_field=next",
    "bigquery://lake-prod/finance.ledger_entries",
    # SQL
    "SELECT order_id, customer_key, amount FROM dw.fact_orders WHERE ds = '{{ ds }}'",
    "INSERT INTO audit.secret_access_log (user_name, token_count, accessed_at) SELECT * FROM staging.access",
    "MERGE INTO mart.api_keys_inventory t USING staging.keys s ON t.key_id = s.key_id",
    "CREATE TABLE IF NOT EXISTS raw.passwords_rotated (account TEXT, rotated_at TIMESTAMP)",
    # schedules
    "0 6 * * 1-5",
    "*/15 * * * *",
    "@daily",
    "CronTriggerTimetable('30 2 * * *', timezone='Europe/Paris')",
    # documentation and descriptions
    "Rotates the API keys of the vendor feed monthly; see the password runbook in Confluence.",
    "## Orders\nLoads orders from the operational database. Owner: data-eng. "
    "Secrets come from the `aws_default` connection; never paste a token here.",
    "Built from commit 3f9a1c4e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 of the dags repository.",
    "Image: registry.internal/airflow@sha256:"
    "9b2d3a1f0e8c7b6a5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e",
    "Run scheduled__2026-12-01T06:00:00+00:00 of DAG token_refresh, map index 3",
    "Consumer group 5f0c2a8e-3b1d-4e6f-9a7c-2d8b4e6f1a3c lags by 1,204 messages",
    "partition key: ds; secret scanning: enabled; token budget: 4000",
    "The export signs each file with the key in Vault (kv/data/exports); sig verification in step 3.",
    "DagRunQueuedAtDeadline",
    '{"owner": "data-eng", "format": "parquet", "compression": "snappy", "retention_days": 90}',
    "ValueError: Invalid token in cron expression '61 * * * *'",
    "airflow.exceptions.AirflowException: Bash command failed. The command returned a non-zero exit code 1.",
)
