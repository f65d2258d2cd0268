"""Bake orchestration: pick the engine's job, export → simulate (frame by frame) → write the results; and clear.

Both operator paths use this module: the blocking ``execute`` calls :func:`bake_scene`; the modal
``invoke`` calls :func:`start_bake` and then :meth:`BakeJob.step` from a timer, :meth:`BakeJob.finish`
at the end or :meth:`BakeJob.cancel` on Esc. The headless CLI calls :func:`bake_scene` too.

This module knows the engines only by name: :data:`ENGINE_JOBS` maps ``scene.contact_lab.engine`` to the
engine's job class (:class:`~.job.BakeJob` subclasses in ``rigid/``, ``soft/`` and ``ipc/``), which exports
its scene, drives its core engine and writes its outputs (keyframes, shape keys or PC2 caches).

Nothing is lost: every check runs before the simulation; results are written only after the whole
simulation finished and produced finite values (keyframes into new actions swapped in at the end, PC2
files written next to their targets and renamed over them at the end). A cancel, an error or a
divergence leaves every object's animation, shape keys, modifiers and cache files untouched.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import BakeError
from .ipc.job import IpcBakeJob
from .job import BakeJob, _now, store_report
from .output import actions
from .output import deform as deform_output
from .rigid.job import RigidBakeJob
from .scene import contact_objects, engine_shape_problems, raise_problems
from .soft.job import SoftBakeJob
from .validate import check_before_bake

__all__ = [
    "ENGINE_JOBS",
    "BakeError",
    "BakeJob",
    "IpcBakeJob",
    "RigidBakeJob",
    "SoftBakeJob",
    "bake_scene",
    "clear_bake",
    "per_frame_stats",
    "start_bake",
    "store_report",
]

ENGINE_JOBS: dict[str, type[BakeJob]] = {job.engine: job for job in (RigidBakeJob, SoftBakeJob, IpcBakeJob)}
"""``scene.contact_lab.engine`` → the job class that bakes it."""


def start_bake(scene, *, frame_start: int | None = None, frame_end: int | None = None) -> BakeJob:
    """Validate (:func:`.validate.check_before_bake`) and export ``scene`` for its engine and return a job ready
    to be stepped, carrying the validation's warnings. Changes nothing.

    Raises:
        BakeError: invalid input; the message names the object.
    """
    t0 = _now()
    job_class = ENGINE_JOBS.get(str(getattr(scene.contact_lab, "engine", "RIGID")), RigidBakeJob)
    warnings = check_before_bake(scene, job_class.engine, frame_start=frame_start, frame_end=frame_end)
    active, passive = contact_objects(scene)
    label = "IPC" if job_class.engine == "IPC" else job_class.engine.title()
    raise_problems(engine_shape_problems(active + passive, job_class.shapes, label))
    export = job_class.export_scene(scene, frame_start=frame_start, frame_end=frame_end)
    export.timings["export"] = _now() - t0
    job = job_class(scene, export)
    job.warnings = warnings  # the validation's warnings lead the report's (addon.validate)
    return job


def bake_scene(
    scene,
    *,
    frame_start: int | None = None,
    frame_end: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Blocking bake of ``scene``: validate, simulate every frame, write the results (see :func:`start_bake`).

    Args:
        scene: a bpy Scene with Contact Lab objects.
        frame_start, frame_end: override ``scene.contact_lab``'s range.
        progress: called as ``progress(frames_done, frame_count)`` after every frame.

    Returns:
        The report (also stored as JSON in ``scene.contact_lab.last_report``).

    Raises:
        BakeError: invalid input or a failed simulation; no animation, shape key, modifier or cache file was
            changed.
    """
    job = start_bake(scene, frame_start=frame_start, frame_end=frame_end)
    try:
        job.run(progress)
    except BakeError as exc:
        store_report(scene, job.report("FAILED", error=str(exc)))
        raise
    return job.finish()


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
