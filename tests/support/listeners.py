"""Real local servers that receive what the provider sends out: StatsD over UDP, and SMTP.

``StatsdListener`` is a UDP socket on 127.0.0.1 that keeps every datagram, as a StatsD daemon
receives them from Airflow's own StatsD client. ``SmtpServer`` is an SMTP server (aiosmtpd) on
127.0.0.1 that keeps every message it accepts, as a mail relay would.
"""

from __future__ import annotations

import email
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from typing import Any


class StatsdListener:
    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.lines: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)

    def __enter__(self) -> StatsdListener:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65535)
            except TimeoutError:
                continue
            except OSError:
                return
            self.lines.extend(data.decode("utf-8", "replace").splitlines())

    def env(self, prefix: str = "airflow") -> dict[str, str]:
        """The ``[metrics]`` configuration that sends Airflow's StatsD metrics here."""
        return {
            "AIRFLOW__METRICS__STATSD_ON": "True",
            "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
            "AIRFLOW__METRICS__STATSD_PORT": str(self.port),
            "AIRFLOW__METRICS__STATSD_PREFIX": prefix,
        }

    def take(self) -> list[str]:
        """The lines received so far (``name:value|type``), and forget them."""
        taken, self.lines = self.lines, []
        return taken

    @staticmethod
    def values(lines: list[str], prefix: str) -> dict[str, str]:
        """``name -> value|type`` of the lines whose name starts with ``prefix`` (the last one wins)."""
        out = {}
        for line in lines:
            name, _, value = line.partition(":")
            if name.startswith(prefix):
                out[name] = value
        return out


@dataclass
class _Collector:
    messages: list[Message] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(email.message_from_bytes(envelope.original_content or envelope.content))
        return "250 OK"


@dataclass
class SmtpServer:
    port: int
    collector: _Collector

    @property
    def messages(self) -> list[Message]:
        return self.collector.messages

    def connection(self) -> str:
        """An ``smtp`` connection in Airflow's JSON form: plain SMTP on the local port."""
        import json

        return json.dumps(
            {
                "conn_type": "smtp",
                "host": "127.0.0.1",
                "port": self.port,
                "extra": {"disable_tls": True, "disable_ssl": True, "from_email": "airflow@example.com"},
            }
        )


def running_smtp() -> Iterator[SmtpServer]:
    from aiosmtpd.controller import Controller

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    collector = _Collector()
    controller = Controller(collector, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield SmtpServer(port, collector)
    finally:
        controller.stop()
