"""A request to stop a running simulation, checked by every engine's loops between kernel calls.

A frame can take minutes (a fast impact halving IPC's step 1024 times, a Newton solve at its iteration cap), so a
cancel cannot wait for the next frame. The caller keeps a :class:`StopRequest`, passes it to the engine's
``iter_simulate(..., stop=request)`` and calls :meth:`StopRequest.set` from any thread; the loops call
:meth:`StopRequest.check` between substeps, Newton iterations and step halvings (in Python, never inside a kernel),
which raises :class:`SimulationStoppedError`. The simulation's state is then mid-step and must be discarded.
"""

from __future__ import annotations

import threading


class SimulationStoppedError(Exception):
    """A :class:`StopRequest` ended the simulation; nothing it computed after the last yielded frame is valid."""


class StopRequest:
    """A flag one thread sets and a simulation loop polls (a ``threading.Event``: setting and reading are atomic)."""

    def __init__(self):
        self._event = threading.Event()
        self.reason = ""
        """Why the stop was asked (for the message), '' before."""

    def set(self, reason: str = "stopped") -> None:
        """Ask the simulation to stop at its next check; returns at once (any thread)."""
        self.reason = reason
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise :class:`SimulationStoppedError` when a stop was asked (about 0.1 us when not)."""
        if self._event.is_set():
            raise SimulationStoppedError(self.reason or "stopped")


def check_stop(stop: StopRequest | None) -> None:
    """:meth:`StopRequest.check` of ``stop``, or nothing for None (the loops' optional argument)."""
    if stop is not None:
        stop.check()
