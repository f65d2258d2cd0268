"""Bake orchestration: export → simulate (frame by frame) → swap in new actions; and clear.

Both operator paths use this module: the blocking ``execute`` calls :func:`bake_scene`; the modal
``invoke`` calls :func:`start_bake` and then :meth:`BakeJob.step` from a timer, :meth:`BakeJob.finish`
at the end or :meth:`BakeJob.cancel` on Esc. The headless CLI calls :func:`bake_scene` too.

Nothing is lost: every check runs before the simulation; keyframes go into new actions that replace
the objects' actions only after the whole simulation finished and produced finite poses. A cancel,
an error or a divergence leaves every object's animation untouched.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import bpy
import numpy as np

from ..core import DivergenceError, iter_simulate
from . import keyframes
from .scene_export import BakeError, SceneExport, export_scene

__all__ = [
    "BakeError",
    "BakeJob",
    "bake_scene",
    "clear_bake",
    "start_bake",
    "store_report",
]

ACTION_SUFFIX = "ContactLab"
"""Baked actions are named ``<object name><ACTION_SUFFIX>``."""


def _now() -> float:
    return time.perf_counter()


class BakeJob:
    """One bake in progress: a validated export and the simulation generator, advanced on demand."""

    def __init__(self, scene, export: SceneExport):
        self.scene_name = scene.name
        self.export = export
        self.trajectory = None
        self.frames_done = 0
        """Trajectory rows recorded so far (1 after the initial state)."""
        self.finished = False
        self.timings = dict(export.timings)
        self.timings.setdefault("simulate", 0.0)
        self._iterator = iter_simulate(export.model, **export.simulate_kwargs())

    # progress -----------------------------------------------------------------------------------
    @property
    def frame_count(self) -> int:
        return self.export.frame_count

    @property
    def progress(self) -> float:
        """Fraction of frames simulated, in [0, 1]."""
        return self.frames_done / self.frame_count if self.frame_count else 1.0

    @property
    def current_frame(self) -> int:
        """Scene frame of the last recorded row (the start frame before anything ran)."""
        return int(self.export.frames[max(self.frames_done - 1, 0)])

    def status_text(self) -> str:
        if self.frames_done <= 1:
            return "Compiling solver (first run only)…"
        return f"Frame {self.current_frame} ({self.frames_done}/{self.frame_count})"

    def scene(self):
        scene = bpy.data.scenes.get(self.scene_name)
        if scene is None:
            raise BakeError(f"scene '{self.scene_name}' no longer exists")
        return scene

    # simulation ---------------------------------------------------------------------------------
    def step(self, *, max_frames: int | None = 1, time_budget: float | None = None) -> bool:
        """Simulate up to ``max_frames`` frames or until ``time_budget`` [s] is used; True when done.

        Raises:
            BakeError: the simulation diverged or failed (names the scene frame and the objects).
        """
        if self.finished:
            return True
        t0 = _now()
        pulled = 0
        try:
            while True:
                try:
                    _, self.trajectory = next(self._iterator)
                except StopIteration:
                    self.finished = True
                    break
                self.frames_done = self.trajectory.frames_done
                pulled += 1
                if max_frames is not None and pulled >= max_frames:
                    break
                if time_budget is not None and _now() - t0 >= time_budget:
                    break
        except DivergenceError as exc:
            raise self._divergence_error(exc) from exc
        except (ValueError, ArithmeticError) as exc:
            frame = int(self.export.frames[min(self.frames_done, self.frame_count - 1)])
            raise BakeError(f"Simulation failed at frame {frame}: {exc}", frame=frame) from exc
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

    def _divergence_error(self, exc: DivergenceError) -> BakeError:
        frame = int(self.export.frames[min(exc.frame, self.frame_count - 1)])
        names = ", ".join(exc.body_label[:5]) + (" …" if len(exc.body_label) > 5 else "")
        first = exc.body_label[0] if exc.body_label else None
        return BakeError(
            f"Simulation diverged at frame {frame} (objects: {names}); nothing was changed",
            object_name=first,
            frame=frame,
        )

    # results ------------------------------------------------------------------------------------
    def report(self, status: str, *, error: str | None = None) -> dict:
        """Machine-readable summary (JSON-compatible) of this job in its current state."""
        ex = self.export
        done = self.frames_done
        report = {
            "status": status,
            "scene": self.scene_name,
            "frames": {
                "start": int(ex.frames[0]),
                "end": int(ex.frames[-1]),
                "count": ex.frame_count,
                "simulated": done,
            },
            "fps": ex.fps,
            "unit_scale": ex.length_scale,
            "bodies": {
                "active": [b.object_name for b in ex.active_bodies],
                "passive": [b.object_name for b in ex.passive_bodies],
            },
            "settings": {
                "solver": ex.solver,
                "substeps": ex.substeps,
                "iterations": ex.iterations,
                "tolerance": ex.tolerance,
                "friction_combine": ex.friction_combine,
                "restitution_combine": ex.restitution_combine,
            },
            "stats": _stats_summary(self.trajectory, done),
            "timings": {k: round(float(v), 6) for k, v in self.timings.items()},
        }
        if error is not None:
            report["error"] = error
        return report

    def _check_finite(self) -> None:
        traj = self.trajectory
        index = [b.body_index for b in self.export.active_bodies]
        ok = np.isfinite(traj.body_pos[:, index]).all(axis=2) & np.isfinite(traj.body_quat[:, index]).all(axis=2)
        if not ok.all():
            f, k = np.argwhere(~ok)[0]
            frame = int(self.export.frames[f])
            name = self.export.active_bodies[k].object_name
            raise BakeError(
                f"Simulation diverged at frame {frame} (objects: {name}); nothing was changed",
                object_name=name,
                frame=frame,
            )

    def finish(self) -> dict:
        """Write the keyframes (swap in new actions), store and return the report.

        Raises:
            BakeError: the simulation is not complete, produced non-finite poses, or an object vanished.
        """
        if not self.finished or self.trajectory is None or self.frames_done < self.frame_count:
            raise BakeError("the simulation has not finished")
        self._check_finite()
        scene = self.scene()
        t0 = _now()
        transforms = self.export.object_transforms(self.trajectory)
        objects = []
        for body in self.export.active_bodies:
            obj = scene.objects.get(body.object_name)
            if obj is None:
                raise BakeError(f"'{body.object_name}' was removed during the bake; nothing was changed")
            objects.append(obj)
        frames = self.export.frames.astype(np.float64)
        built = []
        try:  # phase 1: new actions, not yet assigned
            for obj in objects:
                location, quaternion = transforms[obj.name]
                built.append(
                    keyframes.new_transform_action(
                        obj, frames, location, quaternion, action_name=f"{obj.name}{ACTION_SUFFIX}"
                    )
                )
        except BaseException:
            for action, _ in built:
                bpy.data.actions.remove(action)
            raise
        # phase 2: swap (nothing left that can fail half-way on valid data)
        for obj, (action, slot) in zip(objects, built, strict=True):
            _swap_in(obj, action, slot)
        self.timings["write"] = _now() - t0
        self.timings["total"] = sum(v for k, v in self.timings.items() if k != "total")
        report = self.report("FINISHED")
        store_report(scene, report)
        scene.frame_set(scene.frame_current, subframe=scene.frame_subframe)  # show the baked pose
        return report

    def cancel(self, reason: str = "cancelled by the user") -> dict:
        """Stop the simulation and discard its result; nothing but the scene's last report changes."""
        self._iterator.close()
        self.finished = True
        report = self.report("CANCELLED", error=f"Bake cancelled at frame {self.current_frame}: {reason}")
        scene = bpy.data.scenes.get(self.scene_name)
        if scene is not None:
            store_report(scene, report)
        return report


def _stats_summary(traj, done: int) -> dict:
    if traj is None or done <= 1:
        return {
            "max_contacts": 0,
            "max_iterations": 0,
            "max_residual": 0.0,
            "max_penetration": 0.0,
            "contact_overflow": 0,
        }
    sl = slice(1, done)
    return {
        "max_contacts": int(traj.contact_count[sl].max()),
        "max_iterations": int(traj.solver_iterations[sl].max()),
        "max_residual": float(traj.solver_residual[sl].max()),
        "max_penetration": float(traj.max_penetration[sl].max()),
        "contact_overflow": int(traj.contact_overflow[sl].sum()),
    }


def per_frame_stats(job: BakeJob) -> dict:
    """Per-frame solver statistics of a job (lists, JSON-compatible), for detailed reports."""
    traj, done = job.trajectory, job.frames_done
    if traj is None:
        return {}
    return {
        "frame": [int(f) for f in job.export.frames[:done]],
        "contact_count": traj.contact_count[:done].tolist(),
        "solver_iterations": traj.solver_iterations[:done].tolist(),
        "solver_residual": traj.solver_residual[:done].tolist(),
        "max_penetration": traj.max_penetration[:done].tolist(),
        "contact_overflow": traj.contact_overflow[:done].tolist(),
    }


def store_report(scene, report: dict) -> None:
    """Keep ``report`` as JSON on ``scene.contact_lab.last_report`` for the panel."""
    scene.contact_lab.last_report = json.dumps(report)


# bookkeeping of previous animation ---------------------------------------------------------------


def _remember_previous(obj) -> None:
    s = obj.contact_lab
    ad = obj.animation_data
    current = ad.action if ad is not None else None
    if s.has_previous and s.baked_action is not None and current == s.baked_action:
        return  # a re-bake: keep what the object had before its first bake
    s.has_previous = True
    s.previous_action = current
    s.previous_slot = keyframes.slot_identifier(obj) if current is not None else ""
    s.previous_rotation_mode = obj.rotation_mode
    s.previous_location = tuple(obj.location)
    s.previous_rotation_quaternion = tuple(obj.rotation_quaternion)
    s.previous_rotation_euler = tuple(obj.rotation_euler)


def _discard_action(action) -> None:
    """Remove a Contact Lab action once nothing uses it any more."""
    if action is not None and action.users == 0:
        bpy.data.actions.remove(action)


def _swap_in(obj, action, slot) -> None:
    s = obj.contact_lab
    _remember_previous(obj)
    old = s.baked_action
    keyframes.assign_action(obj, action, slot)
    obj.rotation_mode = "QUATERNION"
    s.baked_action = action
    if old is not None and old != action:
        _discard_action(old)
    desired = f"{obj.name}{ACTION_SUFFIX}"
    if action.name != desired and bpy.data.actions.get(desired) is None:
        action.name = desired  # the replaced bake's name is free again


# public entry points ---------------------------------------------------------------------------------


def start_bake(scene, *, frame_start: int | None = None, frame_end: int | None = None) -> BakeJob:
    """Validate and export ``scene`` and return a job ready to be stepped. Changes nothing.

    Raises:
        BakeError: invalid input; the message names the object.
    """
    t0 = _now()
    export = export_scene(scene, frame_start=frame_start, frame_end=frame_end)
    export.timings["export"] = _now() - t0
    return BakeJob(scene, export)


def bake_scene(
    scene,
    *,
    frame_start: int | None = None,
    frame_end: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Blocking bake of ``scene``: validate, simulate every frame, swap in the new actions.

    Args:
        scene: a bpy Scene with Contact Lab objects.
        frame_start, frame_end: override ``scene.contact_lab``'s range.
        progress: called as ``progress(frames_done, frame_count)`` after every frame.

    Returns:
        The report (also stored as JSON in ``scene.contact_lab.last_report``).

    Raises:
        BakeError: invalid input or a failed simulation; no animation was changed.
    """
    job = start_bake(scene, frame_start=frame_start, frame_end=frame_end)
    try:
        job.run(progress)
    except BakeError as exc:
        store_report(scene, job.report("FAILED", error=str(exc)))
        raise
    return job.finish()


def clear_bake(scene, objects=None) -> list[str]:
    """Remove Contact Lab bakes and restore what the objects had before (action, rotation mode, pose).

    Args:
        scene: scene whose objects are cleared.
        objects: restrict to these objects (default: every object of the scene with a bake).

    Returns:
        Names of the objects that were cleared.
    """
    cleared = []
    for obj in list(scene.objects if objects is None else objects):
        s = getattr(obj, "contact_lab", None)
        if s is None or (s.baked_action is None and not s.has_previous):
            continue
        baked = s.baked_action
        ad = obj.animation_data
        current = ad.action if ad is not None else None
        if baked is not None and current == baked:
            if s.has_previous:
                keyframes.assign_action(obj, s.previous_action, s.previous_slot)
                obj.rotation_mode = s.previous_rotation_mode or "XYZ"
                obj.location = tuple(s.previous_location)
                obj.rotation_quaternion = tuple(s.previous_rotation_quaternion)
                obj.rotation_euler = tuple(s.previous_rotation_euler)
            else:
                keyframes.assign_action(obj, None)
        s.baked_action = None
        s.previous_action = None
        s.previous_slot = ""
        s.has_previous = False
        _discard_action(baked)
        cleared.append(obj.name)
    return cleared
