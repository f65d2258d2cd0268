"""Thread and compile utilities of a bake, shared by the one-thread and the background drivers (a leaf: it imports
nothing of the bridge).

:class:`CompileWatch` counts numba compiles of one thread, :class:`CollectorGuard` replaces CPython's automatic full
garbage collections with short young ones while a background bake runs, :func:`overdue` says when a frame has run
far past its estimate, :class:`Progress` is the snapshot of a running bake that the panel shows, and
:func:`bake_threads` with :func:`numba_threads` set how many threads a bake's kernels run on.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from dataclasses import dataclass

ETA_WINDOW = 10
"""Frames averaged for the remaining-time estimate."""

COLLECT_INTERVAL = 0.01
"""Seconds between the young garbage collections while a background bake runs (:class:`CollectorGuard`)."""

MIDDLE_INTERVAL = 1.0
"""Seconds between collections of the middle generation (objects that outlived a young collection)."""

OVERDUE_SECONDS = 30.0
"""A frame is named as overdue only after this long [s]: shorter waits are not worth a warning, and a frame of a big
scene can honestly take seconds (the default cube takes 0.04-0.2 s)."""

OVERDUE_FACTOR = 10.0
"""...and only once it ran this many times the recent mean frame time (:func:`overdue`): frame times of one bake
vary by a few times as contacts come and go, not by ten."""


def bake_threads(scene) -> int:
    """The threads a bake of ``scene`` runs its kernels on: Blender's own (Render Properties ▸ Performance ▸ Threads:
    the machine's cores when automatic, or the fixed count; ``blender -t N`` sets it), at most numba's limit
    (``NUMBA_NUM_THREADS``, which the command line's ``--jobs`` divides among its bakes), at least one. A scene
    without render settings (a script's stand-in) gets numba's limit."""
    from numba.core import config

    limit = max(int(getattr(config, "NUMBA_NUM_THREADS", 1)), 1)  # set when numba loads its configuration
    wanted = getattr(getattr(scene, "render", None), "threads", None)
    if not isinstance(wanted, int) or isinstance(wanted, bool):
        return limit
    return max(1, min(wanted, limit))


@contextlib.contextmanager
def numba_threads(count: int):
    """Run this thread's numba kernels on ``count`` threads while inside (numba keeps the setting per calling
    thread, so a bake's worker thread does not change Blender's main thread)."""
    import numba

    previous = numba.get_num_threads()
    numba.set_num_threads(count)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def overdue(running: float, per_frame: float | None) -> bool:
    """Whether a frame that has run ``running`` [s] is far past its estimate ``per_frame`` [s] (None before a frame
    finished): over :data:`OVERDUE_SECONDS` and, when an estimate exists, over :data:`OVERDUE_FACTOR` times it. The
    first frame has no estimate, so the fixed bound alone decides there (compiling time excluded by the caller)."""
    if running <= OVERDUE_SECONDS:
        return False
    return per_frame is None or running > OVERDUE_FACTOR * per_frame


class CompileWatch:
    """Counts numba compilations on one thread (numba's ``numba:compile`` events; a cache hit is not one).

    Install with :meth:`listen` (a context manager) on the thread to watch. :attr:`active` is the depth of compiles
    in progress (a kernel compiles the kernels it calls inside its own compile), :attr:`count` the finished ones.
    Reading both from another thread is safe: each is one int.
    """

    def __init__(self):
        self.count = 0
        self.active = 0
        self.last_end = 0.0
        """``time.perf_counter()`` when the last compile ended (0 before one)."""
        self._thread = None

    def listen(self):
        """Context manager: watch the calling thread's compiles until exit."""
        from numba.core import event

        watch = self
        watch._thread = threading.get_ident()

        class _Listener(event.Listener):
            def on_start(self, event):
                if threading.get_ident() == watch._thread:
                    watch.active += 1

            def on_end(self, event):
                if threading.get_ident() == watch._thread:
                    watch.active -= 1
                    watch.count += 1
                    watch.last_end = time.perf_counter()

        return event.install_listener("numba:compile", _Listener())


class CollectorGuard:
    """No automatic garbage collection while a background bake runs: a daemon thread collects the young generations
    every :data:`COLLECT_INTERVAL` instead, so each collection only walks a few milliseconds' worth of new objects
    and holds the GIL that briefly; long-lived garbage waits for the collector, switched back on afterwards.

    Re-entrant per instance; :meth:`release` restores the collector as it was.
    """

    def __init__(self):
        self._was_enabled = True
        self._stop: threading.Event | None = None
        self.collections = 0
        """Young collections run while held."""

    def hold(self) -> None:
        if self._stop is not None:
            return
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._stop = threading.Event()
        threading.Thread(target=self._collect, args=(self._stop,), name="contact_lab collector", daemon=True).start()

    def _collect(self, stop: threading.Event) -> None:
        threshold0 = gc.get_threshold()[0]
        middle = time.perf_counter()
        while not stop.wait(COLLECT_INTERVAL):
            now = time.perf_counter()
            if now - middle >= MIDDLE_INTERVAL:
                gc.collect(1)
                middle = now
            elif gc.get_count()[0] >= threshold0:
                gc.collect(0)
            else:
                continue
            self.collections += 1

    def release(self) -> None:
        if self._stop is None:
            return
        self._stop.set()
        self._stop = None
        if self._was_enabled:
            gc.enable()


@dataclass
class Progress:
    """What the panel and the status bar show of a running bake (a snapshot, read on the main thread)."""

    fraction: float
    """Frames simulated / frames, in [0, 1]."""
    frames_done: int
    frame_count: int
    text: str
    """One line: the phase or frame, seconds per frame, time left, the solver's work, compiles."""
    compiling: bool
    compiles: int
    """Kernels compiled by this bake so far."""
    seconds_left: float | None
    overdue: bool = False
    """The frame in progress has run far past the estimate (:func:`overdue`); ``text`` says so and how to stop."""
