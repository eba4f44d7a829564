"""What a finding is: its severity, the waiver that may cover it, and the finding itself.

Apart from the rest of the model so that the finding catalogue (``rules.py``), which Airflow's
command line loads at every start for the ``--fail-on`` choices, loads nothing else with it.
``model.py`` re-exports these three.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    """Finding severities; their order and the ``--fail-on`` thresholds live in ``rules.py``."""

    INFO = "Info"
    WARNING = "Warning"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class Waived:
    """The waiver that covers a finding: why, and until when (an ISO date, or None for no end)."""

    reason: str
    expires: str | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    """One audit result; ``waived`` is set when a waiver covers it (it then never fails a run);
    ``team`` the teams it belongs to where the rules file names teams (empty: unowned; None: no
    teams were named), outside the fingerprint (``core/checks/teams.py``)."""

    section: str
    severity: Severity
    code: str
    subject: str
    message: str
    detail: str | None = None
    waived: Waived | None = None
    team: tuple[str, ...] | None = None
