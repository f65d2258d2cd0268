"""A bake in progress, whatever the engine: progress, time-budgeted stepping, cancel, report.

:class:`BakeJob` drives an engine's ``iter_simulate`` generator; each engine's bridge subclasses it
(:class:`~.rigid.job.RigidBakeJob`, :class:`~.soft.job.SoftBakeJob`, :class:`~.ipc.job.IpcBakeJob`) to
export its scene (:meth:`BakeJob.start`), record each frame, write the results and add its part of the
report. :mod:`.driver` picks the subclass from ``scene.contact_lab.engine``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator
from typing import Any

import bpy
import numpy as np

from ...core.errors import DivergenceError
from ...core.stop import SimulationStoppedError, StopRequest
from ..errors import BakeError
from ..output.transaction import describe_exception
from .threads import bake_threads


def _now() -> float:
    return time.perf_counter()


def diverged(frame: int, names: list[str]) -> BakeError:
    """The error of a simulation that stopped being finite at scene frame ``frame`` in objects ``names``."""
    shown = ", ".join(names[:5]) + (" …" if len(names) > 5 else "")
    return BakeError(
        f"Simulation diverged at frame {frame} (objects: {shown}); nothing was changed",
        object_name=names[0] if names else None,
        frame=frame,
    )


class BakeJob:
    """One bake in progress: the gathered scene, its core world once built, and the simulation generator.

    Engine-independent; subclasses read and build their scene (:meth:`gather`, :meth:`build_export`), provide the
    generator (:meth:`_simulation`), record each yielded frame (:meth:`_record`), write the results
    (:meth:`_write`) and add their part of the report (:meth:`_engine_report`). The gathered input and the export
    both carry ``frames`` (scene frame numbers, shape (F,)), ``fps``, ``length_scale`` and ``timings``.
    """

    engine = ""
    """``scene.contact_lab.engine`` value of this kind of job."""

    shapes = frozenset({"BOX", "SPHERE", "CAPSULE", "PLANE", "MESH"})
    """``obj.contact_lab.shape`` values this engine simulates (checked by :mod:`.driver` before the export; the
    engine's own export decides which roles may use them)."""

    def __init__(self, scene, gathered):
        self.scene_name = scene.name
        self.input: Any = gathered
        """What :meth:`gather` read (plain data, no bpy)."""
        self.export: Any = None
        """The core world and everything the write needs, once :meth:`build` ran (None before)."""
        self.frames_done = 0
        """Rows recorded so far (1 after the initial state)."""
        self.finished = False
        self.timings = dict(gathered.timings)
        self.timings.setdefault("simulate", 0.0)
        self.warnings: list[str] = []
        """Warnings of the validation before the bake (:mod:`..checks.validate`); the report lists them first."""
        self.compiled_kernels = 0
        """numba compilations while this job built and simulated (0 once the kernel cache is warm)."""
        self.threads = bake_threads(scene)
        """Threads the simulation's kernels run on (:func:`.threads.bake_threads`: Blender's Threads setting)."""
        self.stop = StopRequest()
        """Passed to the engine's ``iter_simulate``: setting it (any thread) stops the simulation inside its frame,
        between substeps and Newton iterations (:meth:`step` then raises ``SimulationStoppedError``)."""
        self._iterator: Generator | None = None

    # to be provided by the engines -------------------------------------------------------------
    @classmethod
    def gather(cls, scene, *, frame_start: int | None = None, frame_end: int | None = None, owner: str | None = None):
        """Validate ``scene`` for this engine and read everything the bake needs into plain data (Blender's main
        thread; changes nothing); raises :class:`BakeError`. ``owner``: the .blend file the bake is saved into (default:
        the open file), which owns files the bake writes."""
        raise NotImplementedError

    @classmethod
    def build_export(cls, gathered):
        """The core world of a gathered scene, with everything the write needs (no bpy: any thread); raises
        :class:`BakeError`."""
        raise NotImplementedError

    @classmethod
    def export_scene(cls, scene, *, frame_start: int | None = None, frame_end: int | None = None):
        """:meth:`gather` then :meth:`build_export`, in this thread (scripts and tests)."""
        return cls.build_export(cls.gather(scene, frame_start=frame_start, frame_end=frame_end))

    def _built(self) -> None:
        """Called once :attr:`export` is set, before the first frame (subclasses size their buffers here)."""

    @classmethod
    def output_folders(cls, scene, owner: str | None = None) -> list[tuple[str, str, str]]:
        """``(setting name, value as stored, absolute folder)`` of every folder a bake of ``scene`` writes files
        into, checked by :mod:`.driver` before the export (:mod:`..paths`); raises :class:`BakeError` for an unusable
        setting."""
        return []

    def _simulation(self) -> Generator:
        raise NotImplementedError

    def _record(self, item) -> None:
        """Keep what one yielded frame carries and advance :attr:`frames_done`."""
        raise NotImplementedError

    def _divergence_error(self, exc: DivergenceError) -> BakeError:
        return diverged(int(self.input.frames[min(exc.frame, self.frame_count - 1)]), exc.body_label)

    def _write(self, scene) -> None:
        """Write the finished simulation into ``scene`` (all checks first, then the changes)."""
        raise NotImplementedError

    def _engine_report(self) -> dict:
        return {}

    def per_frame_stats(self) -> dict:
        """Per-frame solver statistics (lists, JSON-compatible), for detailed reports."""
        return {}

    def _convergence_warning(self) -> str | None:
        """The warning for simulated frames whose solver stopped at its iteration cap (:func:`unconverged`), or
        None."""
        return None

    # progress -----------------------------------------------------------------------------------
    @property
    def frame_count(self) -> int:
        return int(self.input.frames.shape[0])

    @property
    def progress(self) -> float:
        """Fraction of frames simulated, in [0, 1]."""
        return self.frames_done / self.frame_count if self.frame_count else 1.0

    @property
    def current_frame(self) -> int:
        """Scene frame of the last recorded row (the start frame before anything ran)."""
        return int(self.input.frames[max(self.frames_done - 1, 0)])

    def status_text(self) -> str:
        """Where the bake is: the frame, or that it has not started simulating yet."""
        if self.export is None:
            return "Preparing the simulation…"
        if self.frames_done <= 1:
            return "Starting the simulation…"
        return f"Frame {self.current_frame} ({self.frames_done}/{self.frame_count})"

    def solver_note(self) -> str:
        """A short note on the last frame's solver work for the progress line (e.g. Newton iterations), or ''."""
        return ""

    def scene(self):
        scene = bpy.data.scenes.get(self.scene_name)
        if scene is None:
            raise BakeError(f"scene '{self.scene_name}' no longer exists")
        return scene

    # simulation ---------------------------------------------------------------------------------
    def build(self) -> None:
        """Build the core world from the gathered data (:meth:`build_export`) and create the simulation; a no-op
        once built. No bpy: the UI runs it on the bake's worker thread, where the first bake compiles.

        Raises:
            BakeError: the core refused the scene or failed with any exception (named); nothing was changed.
        """
        if self.export is not None:
            return
        t0 = _now()
        try:
            self.export = type(self).build_export(self.input)
            self._built()
            self._iterator = self._simulation()  # the engine's settings record checks itself here
        except BaseException as exc:
            self.export = None
            if isinstance(exc, BakeError) or not isinstance(exc, Exception):
                raise
            # MemoryError from a huge lattice too: a message and a report, not a traceback
            raise BakeError(
                f"Building the simulation failed ({describe_exception(exc)}){_hint(exc)}; nothing was changed"
            ) from exc
        finally:
            self.timings["build"] = _now() - t0

    def close(self) -> None:
        """Stop the simulation generator (on the thread that steps it)."""
        if self._iterator is not None:
            self._iterator.close()

    def step(self, *, max_frames: int | None = 1, time_budget: float | None = None) -> bool:
        """Simulate up to ``max_frames`` frames or until ``time_budget`` [s] is used; True when done.

        Raises:
            BakeError: the simulation diverged or failed with any exception (names the scene frame, the objects or
                the exception type). ``KeyboardInterrupt`` and ``SystemExit`` pass through.
            SimulationStoppedError: :attr:`stop` was set; the frame in progress is lost, the recorded ones stay.
        """
        if self.finished:
            return True
        self.build()
        iterator = self._iterator
        assert iterator is not None  # build() made it
        t0 = _now()
        pulled = 0
        try:
            while True:
                try:
                    item = next(iterator)
                except StopIteration:
                    self.finished = True
                    break
                self._record(item)
                pulled += 1
                if max_frames is not None and pulled >= max_frames:
                    break
                if time_budget is not None and _now() - t0 >= time_budget:
                    break
        except DivergenceError as exc:
            raise self._divergence_error(exc) from exc
        except (BakeError, SimulationStoppedError):
            raise
        except Exception as exc:  # any failure of the core (MemoryError too) is a message and a report, not a traceback
            frame = int(self.input.frames[min(self.frames_done, self.frame_count - 1)])
            raise BakeError(
                f"Simulation failed at frame {frame} ({describe_exception(exc)}){_hint(exc)}; nothing was changed",
                frame=frame,
            ) from exc
        finally:
            self.timings["simulate"] += _now() - t0
        if self.frames_done >= self.frame_count:
            self.finished = True
        return self.finished

    def run(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Simulate to the end; ``progress(frames_done, frame_count)`` is called after every frame."""
        while not self.step(max_frames=1):
            if progress is not None:
                progress(self.frames_done, self.frame_count)
        if progress is not None:
            progress(self.frames_done, self.frame_count)

    # results ------------------------------------------------------------------------------------
    def report(self, status: str, *, error: str | None = None) -> dict:
        """Machine-readable summary (JSON-compatible) of this job in its current state."""
        ex = self.input
        report = {
            "status": status,
            "engine": self.engine,
            "scene": self.scene_name,
            "frames": {
                "start": int(ex.frames[0]),
                "end": int(ex.frames[-1]),
                "count": self.frame_count,
                "simulated": self.frames_done,
            },
            "fps": ex.fps,
            "unit_scale": ex.length_scale,
        }
        report.update(self._engine_report())
        unconverged = self._convergence_warning()
        extra = [unconverged] if unconverged else []
        warnings = list(dict.fromkeys(self.warnings + report.get("warnings", []) + extra))  # in order, each once
        if warnings:
            report["warnings"] = warnings
        report["compiled_kernels"] = int(self.compiled_kernels)
        report["threads"] = int(self.threads)
        report["timings"] = {k: round(float(v), 6) for k, v in self.timings.items()}
        if error is not None:
            report["error"] = error
        return report

    def finish(self) -> dict:
        """Write the results, store and return the report (a FAILED report when writing fails).

        Raises:
            BakeError: the simulation is not complete, produced non-finite values, an object vanished or changed,
                or writing failed with any exception (the write is one transaction, module
                :mod:`.output.transaction`); nothing was changed then.
        """
        if not self.finished or self.frames_done < self.frame_count:
            raise BakeError("the simulation has not finished")
        scene = self.scene()
        t0 = _now()
        try:
            self._write(scene)
        except BaseException as exc:  # every caller gets the FAILED report (the write rolled back)
            error = exc
            if not isinstance(exc, BakeError):  # the engines' transactions convert theirs; this is anything else
                error = BakeError(f"Writing the results failed ({describe_exception(exc)}); nothing was changed")
            store_report(scene, self.report("FAILED", error=str(error)))
            if error is exc or not isinstance(exc, Exception):
                raise  # a BakeError, or KeyboardInterrupt / SystemExit
            raise error from exc
        self.timings["write"] = _now() - t0
        self.timings["total"] = sum(v for k, v in self.timings.items() if k != "total")
        report = self.report("FINISHED")
        store_report(scene, report)
        scene.frame_set(scene.frame_current, subframe=scene.frame_subframe)  # show the baked pose
        return report

    def cancel(self, reason: str = "cancelled by the user", *, close: bool = True) -> dict:
        """Stop the simulation and discard its result; nothing but the scene's last report changes.

        Args:
            close: stop the generator here; False when another thread is stepping it (:mod:`.worker`: the worker
                stops it itself).
        """
        self.stop.set(reason)  # a worker stepping the simulation stops inside its frame
        if close:
            self.close()
        self.finished = True
        report = self.report("CANCELLED", error=f"Bake cancelled at frame {self.current_frame}: {reason}")
        scene = bpy.data.scenes.get(self.scene_name)
        if scene is not None:
            store_report(scene, report)
        return report


def unconverged(frames, converged, setting: str) -> str | None:
    """One warning for the simulated frames that did not converge, naming how many, the first and the fix.

    Args:
        frames: scene frame numbers of the simulated steps (the rows after the initial state), shape (S,).
        converged: whether each of them converged (every solver step within the frame), shape (S,) bool.
        setting: what to change, with its panel path ("raise Physics ▸ …").

    Returns:
        e.g. "3 of 24 frames did not converge (first: frame 5): raise …"; None when every frame converged. The
        words "did not converge" are what scripts and the scene checks look for.
    """
    bad = np.flatnonzero(~np.asarray(converged, dtype=bool))
    if bad.size == 0:
        return None
    total = len(converged)
    return (
        f"{bad.size} of {total} frame{'s' if total != 1 else ''} did not converge (first: frame {int(frames[bad[0]])}):"
        f" the solver stopped at its iteration cap, so the motion there may be wrong; {setting}"
    )


def _hint(exc: BaseException) -> str:
    if isinstance(exc, MemoryError):
        return ": out of memory, lower the Lattice Resolution, the number of soft objects or the frame range"
    return ""


def scene_object(scene, name: str):
    obj = scene.objects.get(name)
    if obj is None:
        raise BakeError(f"'{name}' was removed during the bake; nothing was changed")
    return obj


def store_report(scene, report: dict) -> None:
    """Keep ``report`` as JSON on ``scene.contact_lab.last_report`` for the panel."""
    scene.contact_lab.last_report = json.dumps(report)
