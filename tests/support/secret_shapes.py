"""Credentials as import errors, DAG warnings and descriptions quote them: one row per shape.

Each shape is the line an exception prints (what ``error_line`` keeps of a traceback), the parts
of it that are secret (none may be seen anywhere after the scrub) and the part that says what
failed (the exception type, which must still be seen). The secrets are made up, distinctive
strings (``cm...`` canaries where the shape allows), so a search for them cannot hit anything else.
``INNOCENT`` are error lines naming tokens, passwords and secrets without holding one: they must
come out exactly as they went in.

``with_leaky_errors`` puts every shape into a dags artifact, as the REST capture (or a DAG
folder's parse) would hand it over: one broken file per shape, a DAG description and a DAG
warning quoting credentials, a capture lossiness record quoting a server's answer.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJjbUNhbmFyeUp3dCIsImlhdCI6MTcwMDAwMDAwMH0"
    ".cmCanaryJwtSignature_d9Q2xk3VbR8pL0aWq7"
)
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCmCanaryPemBody7Tq"
AWS_ID = "AKIACMCANARY7EXAMPLE"
AWS_SECRET = "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"
AZURE_KEY = "cmCanaryAzureKey" + "Zm9vYmFyYmF6cXV4" * 4 + "Y21DYW=="  # 88 characters, as Azure's are


@dataclass(frozen=True)
class Shape:
    name: str
    line: str  # the exception's line, as a traceback ends with it
    secrets: tuple[str, ...]  # none of these may be seen after the scrub
    kept: str  # what says what failed: still seen after the scrub


SHAPES: tuple[Shape, ...] = (
    Shape(
        "libpq-password",
        'sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at "db" '
        "(10.0.0.5), port 5432 failed: host=db user=etl password=cmCanaryLibpqPw-41 dbname=dw",
        ("cmCanaryLibpqPw-41",),
        "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError)",
    ),
    Shape(
        "uri-userinfo",
        "sqlalchemy.exc.ArgumentError: Could not parse SQLAlchemy URL from string "
        "'postgresql+psycopg2://etl:cmCanaryUriPw-42@db:5432/dw'",
        ("cmCanaryUriPw-42",),
        "sqlalchemy.exc.ArgumentError",
    ),
    Shape(
        "aws-key-pair",
        f"botocore.exceptions.ClientError: credentials ('{AWS_ID}', '{AWS_SECRET}') refused",
        (AWS_ID, AWS_SECRET),
        "botocore.exceptions.ClientError",
    ),
    Shape(
        "aws-session-id",
        "botocore.exceptions.NoCredentialsError: session ASIACMCANARY7SESSION expired",
        ("ASIACMCANARY7SESSION",),
        "botocore.exceptions.NoCredentialsError",
    ),
    Shape(
        "aws-secret-assigned",
        "ValueError: bad profile aws_secret_access_key=cmCanaryAwsAssigned/Ab12Cd34Ef56Gh78Ij90Kl",
        ("cmCanaryAwsAssigned/Ab12Cd34Ef56Gh78Ij90Kl",),
        "ValueError: bad profile",
    ),
    Shape(
        "bearer-jwt",
        f"requests.exceptions.HTTPError: 401 Client Error for headers {{'Authorization': 'Bearer {JWT}'}}",
        (JWT, JWT.split(".")[1], JWT.split(".")[2]),
        "requests.exceptions.HTTPError: 401 Client Error",
    ),
    Shape(
        "bare-jwt",
        f"jwt.exceptions.ExpiredSignatureError: token {JWT} has expired",
        (JWT.split(".")[1], JWT.split(".")[2]),
        "jwt.exceptions.ExpiredSignatureError",
    ),
    Shape(
        "bearer-opaque",
        "airflow.exceptions.AirflowException: HTTP 403: Bearer cmCanaryOpaqueBearer-0123456789 refused",
        ("cmCanaryOpaqueBearer-0123456789",),
        "airflow.exceptions.AirflowException: HTTP 403",
    ),
    Shape(
        "pem-one-line",
        "ValueError: Could not deserialize key data: -----BEGIN RSA PRIVATE KEY-----"
        f"{PEM_BODY}-----END RSA PRIVATE KEY-----",
        (PEM_BODY,),
        "ValueError: Could not deserialize key data",
    ),
    Shape(
        "gcp-service-account",
        'google.auth.exceptions.MalformedError: {"type": "service_account", "project_id": "lake", '
        '"private_key": "-----BEGIN PRIVATE KEY-----\\n' + PEM_BODY + '\\n-----END PRIVATE KEY-----\\n"}',
        (PEM_BODY,),
        "google.auth.exceptions.MalformedError",
    ),
    Shape(
        "azure-account-key",
        "azure.core.exceptions.ClientAuthenticationError: DefaultEndpointsProtocol=https;AccountName=lake;"
        f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
        (AZURE_KEY, AZURE_KEY[:40]),
        "azure.core.exceptions.ClientAuthenticationError",
    ),
    Shape(
        "azure-sas",
        "azure.core.exceptions.HttpResponseError: https://lake.blob.core.windows.net/raw?sv=2022-11-02"
        "&sig=cmCanarySasSig%2Bq0Zx&se=2027-01-01",
        ("cmCanarySasSig",),
        "azure.core.exceptions.HttpResponseError",
    ),
    Shape(
        "slack-token",
        "slack_sdk.errors.SlackApiError: invalid_auth for xoxb-123456789012-1234567890123-cmCanarySlackTok",
        ("cmCanarySlackTok", "xoxb-123456789012"),
        "slack_sdk.errors.SlackApiError: invalid_auth",
    ),
    Shape(
        "slack-webhook",
        "requests.exceptions.ConnectionError: https://hooks.slack.com/services/T000/B000/cmCanaryHookPath",
        ("cmCanaryHookPath",),
        "requests.exceptions.ConnectionError",
    ),
    Shape(
        "github-token",
        "github.GithubException.BadCredentialsException: 401 for ghp_cmCanaryGithubToken0123456789abcdefXY",
        ("cmCanaryGithubToken",),
        "github.GithubException.BadCredentialsException: 401",
    ),
    Shape(
        "json-password",
        'KeyError: {"login": "etl", "password": "cmCanary Json\\"Pw-43", "host": "db"}',
        ("cmCanary Json", 'Pw-43"'),
        "KeyError",
    ),
    Shape(
        "dict-passwd",
        "TypeError: bad conf {'user': 'etl', 'passwd': 'cmCanaryDictPw-44'}",
        ("cmCanaryDictPw-44",),
        "TypeError: bad conf",
    ),
    Shape(
        "api-key",
        "RuntimeError: call failed: https://api.vendor.test/v1?api_key=cmCanaryApiKey-45&q=orders",
        ("cmCanaryApiKey-45",),
        "RuntimeError: call failed",
    ),
    Shape(
        "token-assigned",
        "PermissionError: refused token=cmCanaryTokenKw-46",
        ("cmCanaryTokenKw-46",),
        "PermissionError: refused",
    ),
    Shape(
        "client-secret",
        "oauthlib.oauth2.rfc6749.errors.InvalidClientError: client_secret: cmCanaryClientSecret-47 rejected",
        ("cmCanaryClientSecret-47",),
        "oauthlib.oauth2.rfc6749.errors.InvalidClientError",
    ),
    Shape(
        "odbc-pwd",
        "pyodbc.InterfaceError: ('28000', 'DRIVER={ODBC 18};SERVER=db;UID=etl;PWD=cmCanaryOdbcPw-48;')",
        ("cmCanaryOdbcPw-48",),
        "pyodbc.InterfaceError",
    ),
)

#: Error lines that name tokens, passwords, keys and secrets and hold none: kept exactly.
INNOCENT: tuple[str, ...] = (
    "NameError: name 'x' is not defined",
    "ModuleNotFoundError: No module named 'tokenizer'",
    "FileNotFoundError: [Errno 2] No such file or directory: '/opt/airflow/dags/lib/tokenizer.py'",
    "ImportError: cannot import name 'password_reset_dag' from 'dags.password_reset_dag' "
    "(/opt/airflow/dags/password_reset_dag.py)",
    "SyntaxError: invalid syntax (secret_rotation.py, line 12)",
    "airflow.exceptions.AirflowDagDuplicatedIdException: Ignoring DAG token_refresh from "
    "/opt/airflow/dags/token_refresh.py - also found in /opt/airflow/dags/old_token_refresh.py",
    "KeyError: 'api_key'",
    "TypeError: connect() got an unexpected keyword argument 'password'",
    "AttributeError: module 'keyring' has no attribute 'get_password'",
    "ValueError: https://airflow.example.test:8080/api/v2/dags?limit=100 is not a valid base URL",
    "airflow.exceptions.AirflowNotFoundException: The conn_id `aws_secrets_manager` isn't defined",
    "airflow_provider_coremodels.errors.CaptureError: authentication refused by "
    "http://airflow.test:8080/auth/token: HTTP 401",
)


def traceback_of(line: str, file: str) -> str:
    """A traceback as Airflow stores it for a file that does not import, ending in ``line``."""
    return (
        "Traceback (most recent call last):\n"
        f'  File "{file}", line 3, in <module>\n'
        "    engine.connect()\n"
        f"{line}\n"
    )


def shape_file(shape: Shape) -> str:
    return f"broken_{shape.name.replace('-', '_')}.py"


#: A DAG's description and a DAG warning, each quoting credentials.
DESCRIPTION_SECRET = "cmCanaryDescriptionPw-49"
DESCRIPTION = f"Loads orders from postgresql://etl:{DESCRIPTION_SECRET}@db/dw (api_key=cmCanaryDescKey-50)"
WARNING_SECRET = "cmCanaryWarningToken-51"
WARNING = (
    f"This Dag uses runtime-variable values.\nLine 3: Variable.get('x', default=f'token={WARNING_SECRET}')"
)
LOSSINESS_SECRET = "cmCanaryLossinessPw-52"

#: Every secret of the estate ``with_leaky_errors`` makes: none may be seen in anything produced.
ALL_SECRETS: tuple[str, ...] = (
    *(secret for shape in SHAPES for secret in shape.secrets),
    DESCRIPTION_SECRET,
    "cmCanaryDescKey-50",
    WARNING_SECRET,
    LOSSINESS_SECRET,
)


def with_leaky_errors(dags_doc: dict[str, Any]) -> dict[str, Any]:
    """``dags_doc`` (a dags artifact) with one import error per shape, its first DAG described and
    warned with credentials, and a capture lossiness record quoting one."""
    doc = copy.deepcopy(dags_doc)
    first = doc["dags"][0]
    bundle = first.get("bundle_name")
    doc["import_errors"] = [
        {
            "import_error_id": number,
            "filename": shape_file(shape),
            **({"bundle_name": bundle} if bundle else {}),
            "timestamp": "2026-12-01T06:00:00Z",
            "stack_trace": traceback_of(shape.line, f"/opt/airflow/dags/{shape_file(shape)}"),
        }
        for number, shape in enumerate(SHAPES, 1)
    ]
    first["description"] = DESCRIPTION
    doc["dag_warnings"] = [
        *doc.get("dag_warnings", []),
        {"dag_id": first["dag_id"], "warning_type": "runtime varying value", "message": WARNING},
    ]
    doc["lossiness"] = [
        *doc.get("lossiness", []),
        {
            "artifact": "tasks",
            "message": f"tasks of DAG x could not be captured: HTTP 500: password={LOSSINESS_SECRET}",
        },
    ]
    return doc


def leaks(text: str | bytes) -> list[str]:
    """Every secret of ``ALL_SECRETS`` seen in ``text`` (also JSON-escaped): [] when clean."""
    data = text.decode(errors="replace") if isinstance(text, bytes) else text
    escaped = data.replace('\\"', '"').replace("\\/", "/").replace("\\\\", "\\")
    return [secret for secret in ALL_SECRETS if secret in data or secret in escaped]
