"""A bake off Blender's main thread: the worker thread builds and simulates, the main thread only reads and writes.

Blender's UI, its timers and every bpy call live on the main thread. A bake therefore runs the job protocol of
:class:`.driver.JobRun` in three parts (:class:`BackgroundBake`):

1. **gather** on the main thread (:func:`.driver.start_bake`): validate, then read the scene into plain arrays;
2. **build and simulate** on a :class:`BakeWorker` thread (:meth:`.driver.JobRun.simulate`): the core world
   (lattices, hulls, fields) and every frame. The first bake compiles the numba kernels here. The kernels release
   the GIL (``nogil``) and so does LLVM while it compiles, so the main thread keeps drawing; the worker never
   touches bpy;
3. **write** on the main thread (:meth:`.driver.JobRun.commit`), as one transaction.

:meth:`BackgroundBake.tick` is what the modal operator's timer calls: it only reads the worker's progress, so it
returns in microseconds, and writes once the worker is done. :meth:`BackgroundBake.cancel` returns at once: the
worker stops inside its frame, at the engine's next substep, Newton iteration or step halving (the job's
:class:`~contact_lab.core.stop.StopRequest`), or when its compile ends, and its result is dropped; nothing was
written. A frame that runs far past the usual (:func:`overdue`) is named in the progress line, for the user to
decide whether to stop it; nothing stops it on its own.

Two things could still stall the main thread, and both are handled here:

- **Compiles are reported, not guessed.** :class:`CompileWatch` listens to numba's ``numba:compile`` events of the
  worker thread, so "Compiling…" shows exactly while kernels compile (never on a warm bake) with the count.
- **Full garbage collections.** A cold compile creates millions of Python objects; CPython's automatic
  full collection of them holds the GIL (measured up to about a second), freezing the UI whichever thread
  triggers it. :class:`CollectorGuard` switches the automatic collector off for the bake and runs short young
  collections on a thread of its own instead.
"""

from __future__ import annotations

import threading
import time

from ...core.stop import SimulationStoppedError
from ..errors import BakeError
from ..output.transaction import describe_exception
from . import driver
from .driver import JobRun
from .threads import ETA_WINDOW, CollectorGuard, CompileWatch, Progress, overdue


class BakeWorker:
    """Runs one :class:`~.job.BakeJob`'s simulation (:meth:`.driver.JobRun.simulate`) on a daemon thread.

    The thread owns the job from :meth:`start` until :attr:`done`: the main thread only reads its progress
    attributes (ints and floats) and, after :attr:`done`, finishes it. :meth:`cancel` asks the thread to stop inside
    its frame (the job's ``stop`` request); the thread then closes the job's simulation itself.
    """

    def __init__(self, job):
        self.job = job
        self.run = JobRun(job)
        self.error: BaseException | None = None
        """What ended the thread early (a :class:`BakeError` for anything the job reports), or None."""
        self.started = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"contact_lab bake '{job.scene_name}'", daemon=True)

    @property
    def compiles(self) -> CompileWatch:
        return self.run.compiles

    @property
    def phase(self) -> str:
        """'waiting', 'building', 'simulating', 'done', 'cancelled' or 'failed'."""
        return self.run.phase

    @property
    def frame_seconds(self) -> list[float]:
        return self.run.frame_seconds

    @property
    def frame_started(self) -> float:
        return self.run.frame_started

    # control (main thread) -------------------------------------------------------------------------------
    def start(self) -> None:
        self.started = time.perf_counter()
        self._thread.start()

    def cancel(self) -> None:
        """Ask the thread to stop; returns at once (the thread stops at the engine's next check inside the frame,
        or after its compile)."""
        self.run.stop("cancelled by the user")

    @property
    def done(self) -> bool:
        """The thread has finished (simulated every frame, failed or stopped after a cancel)."""
        return self._done.is_set()

    @property
    def cancelled(self) -> bool:
        return self.run.stopped

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread is done or ``timeout`` [s] passed; True when done."""
        return self._done.wait(timeout)

    # the thread -------------------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self.run.simulate()
        except SimulationStoppedError:  # the cancel reached inside a frame
            self.run.phase = "cancelled"
        except BaseException as exc:  # reported to the main thread by tick(); nothing to re-raise into here
            self.error = exc if isinstance(exc, BakeError) else _unexpected(exc)
            self.run.phase = "failed"
        finally:
            if self.run.phase != "done":
                self.job.close()
            self._done.set()

    # progress (main thread) -------------------------------------------------------------------------------
    def seconds_per_frame(self) -> float | None:
        """Mean wall time of the last :data:`ETA_WINDOW` frames that compiled nothing [s], or None before one."""
        window = self.frame_seconds[-ETA_WINDOW:]
        return sum(window) / len(window) if window else None

    def progress(self) -> Progress:
        job = self.job
        done, total = job.frames_done, job.frame_count
        compiling = self.compiles.active > 0
        per_frame = self.seconds_per_frame()
        left = per_frame * max(total - done, 0) if per_frame is not None else None
        if compiling:
            text = f"Compiling the {_engine_label(job.engine)} solver, first run only ({self.compiles.count} done)…"
        else:
            parts = [job.status_text()]
            warning = self.overdue_text(per_frame)
            if warning:
                parts.insert(0, warning)
            if per_frame is not None:
                parts.append(f"{per_frame:.2f} s/frame")
            if left is not None:
                parts.append(f"{_duration(left)} left")
            note = job.solver_note()
            if note:
                parts.append(note)
            text = " · ".join(parts)
        return Progress(
            fraction=done / total if total else 1.0,
            frames_done=done,
            frame_count=total,
            text=text,
            compiling=compiling,
            compiles=self.compiles.count,
            seconds_left=left,
            overdue=not compiling and bool(self.overdue_text(per_frame)),
        )

    def overdue_text(self, per_frame: float | None) -> str:
        """The progress line's warning while the frame in progress is :func:`overdue` (its time counted from the
        last compile's end), e.g. "Frame 12 has run 45 s (usually 0.20 s): press Esc to stop"; else ''."""
        if self.phase != "simulating" or not self.frame_started or self.compiles.active:
            return ""
        job = self.job
        if job.frames_done <= 1:  # only the initial state so far: its time is no estimate of a frame's
            per_frame = None
        running = time.perf_counter() - max(self.frame_started, self.compiles.last_end)
        if not overdue(running, per_frame):
            return ""
        frame = int(job.input.frames[min(job.frames_done, job.frame_count - 1)])
        usual = f" (usually {per_frame:.2f} s)" if per_frame is not None else ""
        return f"Frame {frame} has run {_duration(running)}{usual}: press Esc to stop"


class BackgroundBake:
    """A bake driven from Blender's main thread by a timer: :meth:`tick` until it is not 'RUNNING'.

    Construction gathers the scene on the calling (main) thread (:func:`.driver.start_bake`, which raises
    :class:`BakeError` / ``UnsafePathError`` for bad input, changing nothing); :meth:`start` hands the job to a
    :class:`BakeWorker`. Each :meth:`tick` reads the progress and, once the worker is done, writes the results on
    this thread (:meth:`.job.BakeJob.finish`) or stores the FAILED report. :meth:`cancel` stores a CANCELLED report
    and returns at once; nothing is written.
    """

    def __init__(self, scene, *, allow_outside_paths: bool = False):
        self.job = driver.start_bake(scene, allow_outside_paths=allow_outside_paths)
        self.worker = BakeWorker(self.job)
        self.guard = CollectorGuard()
        self.report: dict | None = None
        """The stored report once the bake ended (FINISHED, FAILED or CANCELLED)."""
        self.error: BakeError | None = None
        """Why it failed (FAILED), or None."""
        self.state = "READY"
        """'READY', 'RUNNING', 'FINISHED', 'FAILED' or 'CANCELLED'."""

    def start(self) -> None:
        self.guard.hold()
        self.state = "RUNNING"
        self.worker.start()

    def progress(self) -> Progress:
        return self.worker.progress()

    def tick(self) -> str:
        """Advance the bake's main-thread side; returns :attr:`state`.

        While the worker runs this only reads its progress. When it is done: writes the results and stores the
        FINISHED report, or stores the FAILED one (:attr:`error` says why).
        """
        if self.state != "RUNNING":
            return self.state
        if not self.worker.done:
            return self.state
        try:
            if self.worker.error is not None:
                raise self.worker.error
            self.report = self.worker.run.commit()  # the write: main thread, one transaction
            self.state = "FINISHED"
        except BakeError as exc:
            self._failed(exc)
        except KeyboardInterrupt:  # Ctrl-C in the console during the write: rolled back, a report, no traceback
            self._failed(BakeError("The bake was interrupted while writing the results; nothing was changed"))
        finally:
            self.guard.release()
        return self.state

    def cancel(self, reason: str = "cancelled by the user") -> dict:
        """Stop the bake: the worker is asked to stop and its result dropped; returns the stored CANCELLED report."""
        if self.state in ("FINISHED", "FAILED", "CANCELLED"):
            return self.report or {}
        self.worker.cancel()
        self.report = self.job.cancel(reason, close=False)  # the worker closes its generator itself
        self.state = "CANCELLED"
        self.guard.release()
        return self.report

    def _failed(self, exc: BakeError) -> None:
        self.error = exc
        self.state = "FAILED"
        self.report = self.worker.run.fail(exc)  # (a failed write already stored the same report)


def _unexpected(exc: BaseException) -> BakeError:
    error = BakeError(f"The bake failed ({describe_exception(exc)}); nothing was changed")
    error.__cause__ = exc
    return error


def _engine_label(engine: str) -> str:
    return {"RIGID": "rigid", "SOFT": "soft", "IPC": "IPC"}.get(engine, engine.lower())


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60.0:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
