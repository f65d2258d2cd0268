"""Driving a bake: pick the engine's job, gather → simulate (frame by frame) → write the results; and clear.

One driver of the job protocol (:class:`JobRun`): a job is gathered on Blender's main thread (:func:`start_bake`),
simulated on any thread (:meth:`JobRun.simulate`: build, then frame by frame, reporting progress and honouring a
stop), then committed on the main thread (:meth:`JobRun.commit`: the write) or rolled back (:meth:`JobRun.fail`,
:meth:`JobRun.interrupt`: a report, nothing written). Its callers are thin: scripts and the operator's blocking
``execute`` call :func:`bake_scene`; the operator's modal ``invoke`` runs the simulation on a worker thread
(:class:`.worker.BackgroundBake`) and commits from a timer; the command line's single-file bake
(:mod:`...cli.single`) runs it in this process and saves the file.

This module knows the engines only by name: :data:`ENGINE_JOBS` maps ``scene.contact_lab.engine`` to the
engine's job class (:class:`~.job.BakeJob` subclasses in ``rigid/``, ``soft/`` and ``ipc/``), which gathers
its scene, drives its core engine and writes its outputs (keyframes, shape keys or PC2 caches).

Nothing is lost. Every check runs before the simulation: the scene's objects and settings, and the folders
files will be written into (:func:`check_output_folders`: a folder read from the .blend must stay inside the
.blend's folder unless allowed, module :mod:`..paths`, and must be writable or creatable). The results are written
only after the whole simulation finished with finite values, as one transaction
(:mod:`..output.transaction`): new actions, meshes with the new shape keys and PC2 files are prepared beside the
old ones, then swapped in by reversible steps, and what they replaced is deleted only once every step succeeded.
A cancel, a divergence or any exception, during the simulation or while writing (``MemoryError`` and a full disk
included), leaves every object's animation, shape keys, modifiers, rotation mode and pose and every cache file
on disk as they were, and stores a FAILED (or CANCELLED) report on the scene saying why.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable

import bpy

from .. import paths
from ..checks.validate import check_before_bake
from ..errors import BakeError
from ..ipc.job import IpcBakeJob
from ..output import actions
from ..output import deform as deform_output
from ..paths import UnsafePathError
from ..rigid.job import RigidBakeJob
from ..scene import contact_objects, engine_shape_problems, raise_problems
from ..soft.job import SoftBakeJob
from .job import BakeJob, _now, store_report
from .threads import CompileWatch, numba_threads

__all__ = [
    "ENGINE_JOBS",
    "BakeError",
    "BakeJob",
    "IpcBakeJob",
    "RigidBakeJob",
    "SoftBakeJob",
    "UnsafePathError",
    "bake_scene",
    "check_output_folders",
    "clear_bake",
    "per_frame_stats",
    "start_bake",
    "store_report",
]

ENGINE_JOBS: dict[str, type[BakeJob]] = {job.engine: job for job in (RigidBakeJob, SoftBakeJob, IpcBakeJob)}
"""``scene.contact_lab.engine`` → the job class that bakes it."""


def check_output_folders(
    scene,
    job_class: type[BakeJob] | None = None,
    *,
    allow_outside_paths: bool = False,
    trusted_folders: Iterable[str] = (),
    owner: str | None = None,
) -> list[str]:
    """Check every folder a bake of ``scene`` would write into, before anything runs; creates nothing.

    Each folder must resolve inside the .blend file's folder or one of ``trusted_folders`` (unless
    ``allow_outside_paths``; module :mod:`..paths`) and be writable or creatable. ``owner``: the .blend file the
    bake is saved into (default: the open file); a ``//`` folder is relative to its folder, which is trusted when
    ``owner`` is given.

    Returns:
        The folders, resolved.

    Raises:
        UnsafePathError: a folder leads outside; the message names the setting, the path and how to allow it.
        BakeError: a folder setting is unusable (empty, relative in an unsaved file) or cannot be written.
    """
    job_class = job_class or ENGINE_JOBS.get(str(getattr(scene.contact_lab, "engine", "RIGID")), RigidBakeJob)
    resolved = []
    trusted = list(trusted_folders)
    if owner:  # the caller chose the file the bake is saved into: its folder, like the CLI's output folder
        trusted.append(os.path.dirname(os.path.abspath(owner)))
    for setting, raw, folder in job_class.output_folders(scene, owner):
        real = paths.check_inside(
            folder,
            setting=setting,
            raw=raw,
            blend_path=bpy.data.filepath,
            trusted=trusted,
            allow_outside=allow_outside_paths,
        )
        paths.check_writable(folder, setting=setting)
        resolved.append(real)
    return resolved


def start_bake(
    scene,
    *,
    frame_start: int | None = None,
    frame_end: int | None = None,
    allow_outside_paths: bool = False,
    trusted_folders: Iterable[str] = (),
    owner: str | None = None,
) -> BakeJob:
    """Validate (:func:`..checks.validate.check_before_bake`) and gather ``scene`` for its engine (Blender's main
    thread: everything is read from bpy here) and return a job ready to be built and stepped on any thread, carrying the
    validation's warnings. Changes nothing.

    Args:
        scene: a bpy Scene with Contact Lab objects.
        frame_start, frame_end: override ``scene.contact_lab``'s range.
        allow_outside_paths: write output folders of the .blend even where they lead outside its folder (the
            user confirmed; see :func:`check_output_folders`).
        trusted_folders: folders the user chose for this bake, allowed like the .blend's own folder.
        owner: the .blend file the bake will be saved into (default: the open file, ``bpy.data.filepath``). It
            owns the PC2 caches: their names derive from it and a ``//`` Cache Folder is relative to its folder
            (the command line passes its ``-o`` file).

    Raises:
        UnsafePathError: an output folder leads outside the allowed folders (before anything is simulated).
        BakeError: invalid input; the message names the object.
    """
    t0 = _now()
    job_class = ENGINE_JOBS.get(str(getattr(scene.contact_lab, "engine", "RIGID")), RigidBakeJob)
    warnings = check_before_bake(scene, job_class.engine, frame_start=frame_start, frame_end=frame_end)
    check_output_folders(
        scene, job_class, allow_outside_paths=allow_outside_paths, trusted_folders=trusted_folders, owner=owner
    )
    active, passive = contact_objects(scene)
    label = "IPC" if job_class.engine == "IPC" else job_class.engine.title()
    raise_problems(engine_shape_problems(active + passive, job_class.shapes, label))
    gathered = job_class.gather(scene, frame_start=frame_start, frame_end=frame_end, owner=owner)
    gathered.timings["gather"] = _now() - t0
    job = job_class(scene, gathered)
    job.warnings = warnings  # the validation's warnings lead the report's (addon.checks.validate)
    return job


def bake_scene(
    scene,
    *,
    frame_start: int | None = None,
    frame_end: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    allow_outside_paths: bool = False,
    trusted_folders: Iterable[str] = (),
    owner: str | None = None,
) -> dict:
    """Blocking bake of ``scene``: validate, simulate every frame, write the results (see :func:`start_bake`).

    Args:
        scene: a bpy Scene with Contact Lab objects.
        frame_start, frame_end: override ``scene.contact_lab``'s range.
        progress: called as ``progress(frames_done, frame_count)`` after every frame.
        allow_outside_paths, trusted_folders, owner: see :func:`start_bake`.

    Returns:
        The report (also stored as JSON in ``scene.contact_lab.last_report``).

    Raises:
        BakeError: invalid input, a failed simulation or a failed write (any exception inside is converted);
            no animation, shape key, modifier or cache file was changed, and a FAILED report is stored once the
            simulation started.
        KeyboardInterrupt: Ctrl-C; nothing was changed, and a CANCELLED report is stored (FAILED when it came
            during the write, which rolled back).
    """
    job = start_bake(
        scene,
        frame_start=frame_start,
        frame_end=frame_end,
        allow_outside_paths=allow_outside_paths,
        trusted_folders=trusted_folders,
        owner=owner,
    )
    run = JobRun(job, progress)
    try:
        run.simulate()
        return run.commit()
    except BakeError as exc:
        run.fail(exc, scene)
        raise
    except KeyboardInterrupt:  # Ctrl-C: passes on (a script stops); the report says where the bake ended
        run.interrupt("interrupted (Ctrl-C)")
        raise


class JobRun:
    """One bake job through the protocol, the same for every caller.

    :meth:`simulate` (any thread, never bpy) builds the core world and steps it frame by frame, counting the numba
    compiles, timing the frames and calling ``progress(frames_done, frame_count)`` after each, until the last frame
    or :meth:`stop`. Then, on the main thread, :meth:`commit` writes the results (one transaction) and returns the
    FINISHED report, or the bake ends without writing anything: :meth:`fail` stores the FAILED report,
    :meth:`interrupt` the CANCELLED one.
    """

    def __init__(self, job: BakeJob, progress: Callable[[int, int], None] | None = None):
        self.job = job
        self.progress = progress
        self.compiles = CompileWatch()
        self.phase = "waiting"
        """'waiting', 'building', 'simulating', 'done' or 'cancelled' (the background bake adds 'failed')."""
        self.frame_seconds: list[float] = []
        """Wall time of each simulated frame that compiled nothing [s] (the remaining-time estimate)."""
        self.frame_started = 0.0
        """``time.perf_counter()`` when the frame in progress started (0 before the first)."""
        self._stop = threading.Event()

    def stop(self, reason: str) -> None:
        """Ask :meth:`simulate` to stop (from any thread): it ends after its compile or inside its frame, at the
        engine's next check (raising :class:`~contact_lab.core.stop.SimulationStoppedError` there)."""
        self._stop.set()
        self.job.stop.set(reason)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def simulate(self) -> bool:
        """Build, then simulate frame by frame until the end or :meth:`stop`; True when every frame ran.

        Raises:
            BakeError: the build or a frame failed (named); nothing was written.
            SimulationStoppedError: :meth:`stop` reached inside a frame.
        """
        job = self.job
        try:
            with self.compiles.listen(), numba_threads(job.threads):
                self.phase = "building"
                job.build()
                job.compiled_kernels = self.compiles.count
                self.phase = "simulating"
                while not self._stop.is_set():
                    t0, compiled = time.perf_counter(), self.compiles.count
                    self.frame_started = t0
                    finished = job.step(max_frames=1)
                    job.compiled_kernels = self.compiles.count
                    if self.compiles.count == compiled:  # a frame that compiled says nothing about the next ones
                        self.frame_seconds.append(time.perf_counter() - t0)
                    if self.progress is not None:
                        self.progress(job.frames_done, job.frame_count)
                    if finished:
                        break
        finally:
            job.compiled_kernels = self.compiles.count
        self.phase = "cancelled" if self._stop.is_set() else "done"
        return self.phase == "done"

    def commit(self) -> dict:
        """Write the results (main thread, one transaction); the stored FINISHED report (see
        :meth:`.job.BakeJob.finish`: a failed write rolls back and stores the FAILED report itself)."""
        return self.job.finish()

    def fail(self, exc: BakeError, scene=None) -> dict:
        """The bake failed before its write: store and return the FAILED report naming ``exc`` (on ``scene``,
        default the job's scene if it still exists). Nothing was written."""
        report = self.job.report("FAILED", error=str(exc))
        scene = scene if scene is not None else bpy.data.scenes.get(self.job.scene_name)
        if scene is not None:
            store_report(scene, report)
        return report

    def interrupt(self, reason: str) -> None:
        """Ctrl-C on this thread: stop the simulation and store the CANCELLED report, unless the write had begun
        (it rolls back and stores its FAILED report itself)."""
        if not self.job.finished:
            self.job.cancel(reason)


def clear_bake(scene, objects=None) -> list[str]:
    """Remove Contact Lab bakes and restore what the objects had before.

    Rigid bakes: the previous action, rotation mode and pose come back. Soft bakes: the baked shape keys (and
    their action) or the Mesh Cache modifier are removed (:func:`deform_output.remove_deform_output`); the
    user's own shape keys and modifiers stay, PC2 files stay on disk.

    Args:
        scene: scene whose objects are cleared.
        objects: restrict to these objects (default: every object of the scene with a bake).

    Returns:
        Names of the objects that were cleared.
    """
    cleared = []
    for obj in list(scene.objects if objects is None else objects):
        if getattr(obj, "contact_lab", None) is None:
            continue
        removed = obj.type == "MESH" and deform_output.remove_deform_output(obj)
        if actions.clear_baked_action(obj) or removed:
            cleared.append(obj.name)
    return cleared


def per_frame_stats(job: BakeJob) -> dict:
    """Per-frame solver statistics of a job (lists, JSON-compatible), for detailed reports."""
    return job.per_frame_stats()
