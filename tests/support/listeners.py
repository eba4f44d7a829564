"""Real local servers that receive what the provider sends out: StatsD over UDP, SMTP, and a
service that never answers.

``StatsdListener`` is a UDP socket on 127.0.0.1 that keeps every datagram, as a StatsD daemon
receives them from Airflow's own StatsD client. ``SmtpServer`` is an SMTP server (aiosmtpd) on
127.0.0.1 that keeps every message it accepts, as a mail relay would. ``SilentServer`` accepts
TCP connections and never says a word, as a chat service that hangs.
"""

from __future__ import annotations

import email
import selectors
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


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts every connection, never answers, and keeps it open
    until it stops (its ``with`` block ends): a client waiting on it waits for ever. ``accepted``
    counts the connections made, ``hung_up`` those whose client went away first."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        self.hung_up = 0
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.sock, selectors.EVENT_READ)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(5)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(0.2):
                if key.fileobj is self.sock:
                    connection, _ = self.sock.accept()
                    self.accepted += 1
                    self._selector.register(connection, selectors.EVENT_READ)
                elif not key.fileobj.recv(4096):  # type: ignore[union-attr]
                    self.hung_up += 1
                    self._selector.unregister(key.fileobj)
                    key.fileobj.close()  # type: ignore[union-attr]


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
