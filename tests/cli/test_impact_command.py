"""``impact``: downstream (and ``--upstream``) of a DAG or asset, the MCP tool's answer on the
command line, from the example estate, a document, a file sink's directory and its history, and
from a real local S3 server (moto's server mode), where the MCP server reads the same sink."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.helpers import CLI_GROUP, REPO, document_for
from support.s3_server import BUCKET, SECRETS, S3Store, new_conn_id, running_s3

from airflow_provider_coremodels.cli.main import main
from airflow_provider_coremodels.integrations.assistant import SnapshotQueries
from airflow_provider_coremodels.sinks import FileSink

TABLE = """\
downstream of DAG load_orders (paused): 2 assets, 1 DAG (1 active, 0 paused), 0 external; at most 3 edges away

DISTANCE  KIND   IDENTITY                   STATE   OWNERS   REACHED FROM              INDEPENDENT ACTIVE PRODUCERS  OPEN FINDINGS
1         asset  s3://lake/orders.parquet                    load_orders               none                          paused-producer
2         dag    daily_revenue              active  finance  s3://lake/orders.parquet
3         asset  s3://lake/revenue.parquet                   daily_revenue             none
"""  # noqa: E501 (the table as a terminal shows it)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["impact", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def example_document(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example estate's snapshot, as ``audit --example --format json`` prints it."""
    printed = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--example", "--format", "json"],
        capture_output=True, check=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    path = tmp_path_factory.mktemp("impact") / "snapshot.json"
    path.write_bytes(printed.stdout)
    return path


def test_the_table_lists_everything_downstream_nearest_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "load_orders", "--example") == (0, TABLE, "")


def test_each_dag_names_its_owners_and_team_in_every_view(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 45: who to tell. The team column appears where the rules name teams; a DAG no team
    owns is ``unowned``; an asset has neither."""
    rules = tmp_path / "rules.yaml"
    rules.write_text("teams:\n  orders: {owners: [data-eng]}\n  reporting: {owners: [crm-team]}\n")
    code, out, err = run(capsys, "load_orders", "--example", "--rules", str(rules), "--format", "json")
    assert (code, err) == (0, "")
    answer = json.loads(out)
    assert (answer["start"]["owners"], answer["start"]["team"]) == (["data-eng", "orders-oncall"], "orders")
    whose = {i["identity"]: (i.get("owners"), i.get("team")) for i in answer["affected"]["items"]}
    assert whose == {
        "s3://lake/orders.parquet": (None, None),
        "daily_revenue": (["finance"], "unowned"),
        "s3://lake/revenue.parquet": (None, None),
    }
    code, out, _ = run(capsys, "load_orders", "--example", "--rules", str(rules))
    assert out.splitlines()[2].split() == [
        "DISTANCE", "KIND", "IDENTITY", "STATE", "OWNERS", "TEAM", "REACHED", "FROM",
        "INDEPENDENT", "ACTIVE", "PRODUCERS", "OPEN", "FINDINGS",
    ]  # fmt: skip
    assert out.splitlines()[4].split()[:6] == ["2", "dag", "daily_revenue", "active", "finance", "unowned"]
    code, out, _ = run(capsys, "load_orders", "--example", "--rules", str(rules), "--format", "markdown")
    assert "| Distance | Kind | Identity | State | Owners | Team | Reached from |" in out
    assert "| 2 | dag | `daily_revenue` | active | `finance` | unowned | `s3://lake/orders.parquet` |" in out
    code, out, _ = run(capsys, "load_orders", "--example", "--format", "json")  # no teams: null
    assert json.loads(out)["affected"]["items"][1]["team"] is None


def test_upstream_as_markdown_says_what_a_dag_depends_on(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "daily_revenue", "--example", "--upstream", "--format", "markdown")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "## CoreModels: upstream of `daily_revenue`",
        "",
        "upstream of DAG daily\\_revenue (active): 2 assets, 1 DAG (0 active, 1 paused), 0 external; "
        "at most 2 edges away",
        "",
        "| Distance | Kind | Identity | State | Owners | Reached from | Open findings |",
        "|---|---|---|---|---|---|---|",
        "| 1 | asset | `s3://lake/orders.parquet` |  |  | `daily_revenue` | `paused-producer` |",
        "| 1 | asset | `s3://vendor/fx_rates.csv` |  |  | `daily_revenue` | `asset-unproduced` |",
        "| 2 | dag | `load_orders` | paused | `data-eng, orders-oncall` | `s3://lake/orders.parquet` |  |",
    ]


def test_json_is_the_mcp_tool_s_answer_from_a_document_a_sink_and_its_history(
    capsys: pytest.CaptureFixture[str], example_document: Path, tmp_path: Path
) -> None:
    """The same function as the tool (``SnapshotQueries.impact``), every node on one page, whichever
    way the snapshot is named: the document, the sink's directory, ``SINK@latest`` and ``SINK@~0``."""
    data = example_document.read_bytes()
    expected = SnapshotQueries(data, source="x").impact("s3://lake/orders.parquet", limit=None)
    assert expected["affected"]["total"] == 2 and expected["direction"] == "downstream"
    sink = tmp_path / "sink"
    FileSink(sink).push(json.loads(data))
    for given in (str(example_document), str(sink), f"{sink}@latest", f"{sink}@~0"):
        code, out, err = run(capsys, "s3://lake/orders.parquet", "--snapshot", given, "--format", "json")
        assert (code, err) == (0, ""), given
        assert json.loads(out) == expected, given
    code, out, _ = run(capsys, "load_orders", "--snapshot", str(sink), "--depth", "1", "--format", "json")
    answer = json.loads(out)
    assert [a["identity"] for a in answer["affected"]["items"]] == ["s3://lake/orders.parquet"]
    assert answer["depth"] == 1 and answer["summary"]["maxDistance"] == 1


def test_a_waiver_file_re_audits_the_snapshot_before_the_walk(
    capsys: pytest.CaptureFixture[str], example_document: Path, tmp_path: Path
) -> None:
    waivers = tmp_path / "waivers.json"
    waivers.write_text(json.dumps([{"code": "paused-producer", "subject": "*", "reason": "planned"}]))
    _, out, _ = run(capsys, "load_orders", "--snapshot", str(example_document), "--format", "json")
    assert json.loads(out)["affected"]["items"][0]["openFindings"] == ["paused-producer"]
    argv = ("load_orders", "--snapshot", str(example_document), "--waivers", str(waivers), "--format", "json")
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    assert json.loads(out)["affected"]["items"][0]["openFindings"] == []


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("load_order", "--example"), "error: impact: no DAG or asset 'load_order' in this snapshot; "
         "did you mean 'load_orders'?"),
        (("load_orders", "--example", "--depth", "0"), "error: impact: depth must be 1 or more (or left out "
         "for no limit), got 0"),
        (("load_orders", "--example", "--kind", "asset"), "error: impact: no asset 'load_orders' in this "
         "snapshot"),
        (("load_orders",), "error: impact needs --dags F (with --tasks and --datasets) or --snapshot S"),
        (("load_orders", "--example", "--sink-conn-id", "aws"), "error: impact --sink-conn-id goes with an "
         "object-storage --snapshot"),
        (("load_orders", "--snapshot", "/nonexistent/snapshot.json"), "error: snapshot document "
         "/nonexistent/snapshot.json cannot be read: No such file or directory"),
    ],
)  # fmt: skip
def test_what_cannot_be_answered_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], said: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.splitlines() == [said] or err.startswith(said), err


def test_a_name_that_would_drive_the_terminal_or_the_comment_is_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A DAG id and an asset URI are the deployment's words: a control character is written as an
    escape in the table (never sent to the terminal), and markdown and mentions are made inert."""
    evil = "load\x1b[31m_orders"
    dags = [
        {"dag_id": evil, "owners": ["t"], "description": "d", "is_paused": False},
        {"dag_id": "report", "owners": ["t"], "description": "d", "is_paused": False},
    ]
    assets = {"assets": [{"uri": "s3://lake/@team|x", "producing_tasks": [{"dag_id": evil, "task_id": "t"}],
                          "scheduled_dags": [{"dag_id": "report"}]}]}  # fmt: skip
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(document_for(dags, {}, assets)))
    code, out, err = run(capsys, evil, "--snapshot", str(path))
    assert (code, err) == (0, "")
    assert "\x1b" not in out and "load\\x1b[31m_orders" in out
    code, out, _ = run(capsys, evil, "--snapshot", str(path), "--format", "markdown")
    assert code == 0 and "\x1b" not in out
    assert "| `s3://lake/@team\\|x` |" in out  # the pipe cannot end the cell


@CLI_GROUP
def test_both_front_doors_answer_alike(tmp_path: Path) -> None:
    from cli.test_audit_command import front_doors

    module, airflow = front_doors(tmp_path, "impact", "load_orders", "--example")
    assert (module.returncode, module.stdout) == (airflow.returncode, airflow.stdout) == (0, TABLE.encode())
    module, airflow = front_doors(tmp_path, "impact", "load_order", "--example")
    assert (module.returncode, module.stderr) == (airflow.returncode, airflow.stderr)
    assert module.returncode == 2 and module.stderr.count(b"\n") == 1


# -- object storage: impact and the MCP server read the same sink ----------------------------


@pytest.fixture(scope="module")
def s3() -> Iterator[tuple[S3Store, str, str]]:
    with running_s3() as server, pytest.MonkeyPatch.context() as env:
        conn_id = new_conn_id()
        variable = f"AIRFLOW_CONN_{conn_id.upper()}"
        env.setenv(variable, server.connection())
        yield server, conn_id, variable


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", *argv],
        capture_output=True, text=True, cwd=REPO, timeout=120, env=dict(os.environ),
    )  # fmt: skip


@pytest.mark.slow
def test_impact_and_the_mcp_server_read_an_object_storage_sink_alike(
    s3: tuple[S3Store, str, str], example_document: Path, tmp_path: Path
) -> None:
    """The example snapshot pushed to S3 by the object-storage sink; ``impact`` reads it back with
    ``--sink-conn-id``, and the MCP server started on the same URI answers ``downstream_impact``
    with the same nodes (the tool's page aside, and what it adds to every answer: ``untrusted``)."""
    from mcp import ClientSession, StdioServerParameters
    from support.mcp_client import ask, call
    from support.mcp_client import server as mcp_server

    from airflow_provider_coremodels.jobs.export import open_sink

    _, conn_id, variable = s3
    uri = f"s3://{BUCKET}/impact"
    open_sink(uri, sink_conn_id=conn_id).push(json.loads(example_document.read_bytes()))

    printed = cli("impact", "load_orders", "--snapshot", uri, "--sink-conn-id", conn_id, "--format", "json")
    assert printed.returncode == 0, printed.stderr
    answer = json.loads(printed.stdout)
    assert [a["identity"] for a in answer["affected"]["items"]] == [
        "s3://lake/orders.parquet",
        "daily_revenue",
        "s3://lake/revenue.parquet",
    ]
    table = cli("impact", "load_orders", "--snapshot", uri, "--sink-conn-id", conn_id)
    assert (table.returncode, table.stdout) == (0, TABLE), table.stderr

    params = mcp_server("--snapshot", uri, "--baseline", uri, "--sink-conn-id", conn_id)
    env = {**(params.env or {}), variable: os.environ[variable]}
    params = StdioServerParameters(command=params.command, args=params.args, env=env)

    async def questions(session: ClientSession) -> Any:
        return (
            await call(session, "downstream_impact", identity="load_orders"),
            await call(session, "drift_from_baseline"),
        )

    served, drift = ask(params, questions, errlog=tmp_path / "err")
    served.pop("untrusted")
    for page in (served["affected"], answer["affected"]):
        page.pop("limit")
    assert served == answer
    assert drift["unchanged"] is True and drift["baseline"]["source"] == uri
    said = (tmp_path / "err").read_text()
    assert f"coremodels mcp: serving {uri} (fingerprint " in said
    for secret in SECRETS:
        assert secret not in printed.stdout + printed.stderr + table.stderr + said


@pytest.mark.slow
def test_an_object_storage_sink_with_no_snapshot_yet_is_exit_2(s3: tuple[S3Store, str, str]) -> None:
    _, conn_id, _ = s3
    uri = f"s3://{BUCKET}/never-exported"
    result = cli("impact", "load_orders", "--snapshot", uri, "--sink-conn-id", conn_id)
    assert (result.returncode, result.stdout) == (2, "")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: snapshot document {uri}/latest.json does not exist: {uri} has stored no snapshot yet"
    ]
