"""The MCP server driven as an assistant's client drives it: the SDK's own stdio client and
``ClientSession``, with the server a real subprocess (``python -m airflow_provider_coremodels mcp``,
or ``airflow coremodels mcp``) speaking JSON-RPC on its stdin and stdout."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

T = TypeVar("T")

#: A start-up reads the snapshot before it answers ``initialize``: 10,000 DAGs take seconds.
START_TIMEOUT = 120


def server(*args: str, airflow_cli: bool = False) -> StdioServerParameters:
    """How to start the server: ``python -m`` (the default) or the ``airflow coremodels`` group.

    The SDK gives the child only a few safe variables of our environment (PATH, HOME, ...), so the
    throw-away ``AIRFLOW_HOME`` the tests use is passed on by name, and ``PYTHONPATH`` where it is
    set (a checkout whose package must win over an installed one, in the server too).
    """
    env = {
        "AIRFLOW_HOME": os.environ["AIRFLOW_HOME"],
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
    }
    if airflow_cli:
        airflow = str(Path(sys.executable).parent / "airflow")
        return StdioServerParameters(command=airflow, args=["coremodels", "mcp", *args], env=env)
    return StdioServerParameters(
        command=sys.executable, args=["-m", "airflow_provider_coremodels", "mcp", *args], env=env
    )


def ask(
    params: StdioServerParameters,
    questions: Callable[[ClientSession], Awaitable[T]],
    *,
    errlog: Path,
    timeout: float = START_TIMEOUT,
) -> T:
    """Start the server, initialise a session, run ``questions`` and close; the server's stderr
    goes to ``errlog``."""

    async def main() -> T:
        with anyio.fail_after(timeout), errlog.open("w", encoding="utf-8") as log:
            async with (
                stdio_client(params, errlog=log) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await questions(session)

    return anyio.run(main)


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must answer: its structured content, checked against its text twin."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}({arguments}) failed: {result.content}"
    assert result.structured_content is not None
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


async def timed_call(session: ClientSession, tool: str, **arguments: Any) -> tuple[float, dict[str, Any]]:
    """``call``, with the seconds the answer took as the client sees them (the request's round trip)."""
    started = time.perf_counter()
    answer = await call(session, tool, **arguments)
    return time.perf_counter() - started, answer


async def call_error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """Call a tool that must refuse: the text of its error."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) did not fail: {result.structured_content}"
    return str(result.content[0].text)  # type: ignore[union-attr]
