"""Bake orchestration: export → simulate (frame by frame) → write the results; and clear.

Both operator paths use this module: the blocking ``execute`` calls :func:`bake_scene`; the modal
``invoke`` calls :func:`start_bake` and then :meth:`BakeJob.step` from a timer, :meth:`BakeJob.finish`
at the end or :meth:`BakeJob.cancel` on Esc. The headless CLI calls :func:`bake_scene` too.

:class:`BakeJob` is the engine-independent machinery (progress, time-budgeted stepping, cancel, report);
:class:`RigidBakeJob` bakes the rigid engine into keyframes, :class:`SoftBakeJob` the soft engine into shape
keys or PC2 caches (plus keyframes for dynamic boxes), :class:`IpcBakeJob` the IPC engine into the same
outputs. :func:`start_bake` picks one from ``scene.contact_lab.engine``.

Nothing is lost: every check runs before the simulation; results are written only after the whole
simulation finished and produced finite values (keyframes into new actions swapped in at the end, PC2
files written next to their targets and renamed over them at the end). A cancel, an error or a
divergence leaves every object's animation, shape keys, modifiers and cache files untouched.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator

import bpy
import numpy as np

from ..core import DivergenceError, iter_simulate
from . import deform_output, keyframes, units
from .scene_export import BakeError, SceneExport, export_scene

__all__ = [
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

ACTION_SUFFIX = "ContactLab"
"""Baked actions are named ``<object name><ACTION_SUFFIX>``."""


def _now() -> float:
    return time.perf_counter()


class BakeJob:
    """One bake in progress: a validated export and its simulation generator, advanced on demand.

    Engine-independent; subclasses provide the generator (:meth:`_simulation`), record each yielded frame
    (:meth:`_record`), write the results (:meth:`_write`) and add their part of the report
    (:meth:`_engine_report`). ``export`` needs ``frames`` (scene frame numbers, shape (F,)), ``fps``,
    ``length_scale`` and ``timings``.
    """

    engine = ""
    """``scene.contact_lab.engine`` value of this kind of job."""

    def __init__(self, scene, export):
        self.scene_name = scene.name
        self.export = export
        self.frames_done = 0
        """Rows recorded so far (1 after the initial state)."""
        self.finished = False
        self.timings = dict(export.timings)
        self.timings.setdefault("simulate", 0.0)
        self._iterator = self._simulation()

    # to be provided by the engines -------------------------------------------------------------
    def _simulation(self) -> Iterator:
        raise NotImplementedError

    def _record(self, item) -> None:
        """Keep what one yielded frame carries and advance :attr:`frames_done`."""
        raise NotImplementedError

    def _divergence_error(self, exc: DivergenceError) -> BakeError:
        frame = int(self.export.frames[min(exc.frame, self.frame_count - 1)])
        names = ", ".join(exc.body_label[:5]) + (" …" if len(exc.body_label) > 5 else "")
        first = exc.body_label[0] if exc.body_label else None
        return BakeError(
            f"Simulation diverged at frame {frame} (objects: {names}); nothing was changed",
            object_name=first,
            frame=frame,
        )

    def _write(self, scene) -> None:
        """Write the finished simulation into ``scene`` (all checks first, then the changes)."""
        raise NotImplementedError

    def _engine_report(self) -> dict:
        return {}

    def per_frame_stats(self) -> dict:
        """Per-frame solver statistics (lists, JSON-compatible), for detailed reports."""
        return {}

    # progress -----------------------------------------------------------------------------------
    @property
    def frame_count(self) -> int:
        return int(self.export.frames.shape[0])

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
                    item = next(self._iterator)
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

    # results ------------------------------------------------------------------------------------
    def report(self, status: str, *, error: str | None = None) -> dict:
        """Machine-readable summary (JSON-compatible) of this job in its current state."""
        ex = self.export
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
        report["timings"] = {k: round(float(v), 6) for k, v in self.timings.items()}
        if error is not None:
            report["error"] = error
        return report

    def finish(self) -> dict:
        """Write the results, store and return the report.

        Raises:
            BakeError: the simulation is not complete, produced non-finite values, or an object vanished or
                changed; nothing was changed then.
        """
        if not self.finished or self.frames_done < self.frame_count:
            raise BakeError("the simulation has not finished")
        scene = self.scene()
        t0 = _now()
        self._write(scene)
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


class RigidBakeJob(BakeJob):
    """Rigid engine: :func:`core.iter_simulate` → location/rotation keyframes of the active objects."""

    engine = "RIGID"

    def __init__(self, scene, export: SceneExport):
        self.trajectory = None
        super().__init__(scene, export)

    def _simulation(self):
        return iter_simulate(self.export.model, **self.export.simulate_kwargs())

    def _record(self, item) -> None:
        _, self.trajectory = item
        self.frames_done = self.trajectory.frames_done

    def _engine_report(self) -> dict:
        ex = self.export
        return {
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
            "stats": _stats_summary(self.trajectory, self.frames_done),
        }

    def per_frame_stats(self) -> dict:
        traj, done = self.trajectory, self.frames_done
        if traj is None:
            return {}
        return {
            "frame": [int(f) for f in self.export.frames[:done]],
            "contact_count": traj.contact_count[:done].tolist(),
            "solver_iterations": traj.solver_iterations[:done].tolist(),
            "solver_residual": traj.solver_residual[:done].tolist(),
            "max_penetration": traj.max_penetration[:done].tolist(),
            "contact_overflow": traj.contact_overflow[:done].tolist(),
        }

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

    def _write(self, scene) -> None:
        if self.trajectory is None:
            raise BakeError("the simulation has not finished")
        self._check_finite()
        transforms = self.export.object_transforms(self.trajectory)
        objects = [_object(scene, body.object_name) for body in self.export.active_bodies]
        _key_transforms(objects, self.export.frames, [transforms[obj.name] for obj in objects])


class SoftBakeJob(BakeJob):
    """Soft engine: :func:`core.fem.simulate_soft.iter_simulate_soft` → shape keys or PC2 caches of the soft
    objects and location/rotation keyframes of the dynamic (active) boxes."""

    engine = "SOFT"

    def __init__(self, scene, export):
        ex = export
        F = int(ex.frames.shape[0])
        self.tet_positions = [np.empty((F, b.tet_vertex_count, 3)) for b in ex.bodies]
        """Per soft body: lattice vertex positions in the world per frame [m], (F, V_tet, 3)."""
        dynamic = ex.dynamic_colliders
        self.box_position = np.empty((F, len(dynamic), 3))
        """Dynamic boxes' centre of mass per frame [m], (F, D, 3)."""
        self.box_quaternion = np.empty((F, len(dynamic), 4))
        """Dynamic boxes' orientation per frame (wxyz), (F, D, 4)."""
        self.newton_iterations = np.zeros(F, dtype=np.int64)
        """Newton iterations of the last implicit step of each frame (0 for the initial state)."""
        self.pcg_iterations = np.zeros(F, dtype=np.int64)
        self.contact_count = np.zeros(F, dtype=np.int64)
        self.max_penetration = np.zeros(F)
        """Deepest contact penetration at the end of the frame's last step [m]."""
        self.converged = np.ones(F, dtype=bool)
        self.frame_seconds = np.zeros(F)
        """Wall-clock time spent on each frame [s]."""
        self._frame_clock = None
        self.written_files: list[str] = []
        super().__init__(scene, export)

    def _simulation(self):
        from ..core.fem.simulate_soft import iter_simulate_soft

        ex = self.export
        settings = ex.solver_settings()
        return iter_simulate_soft(
            ex.world,
            frame_count=self.frame_count,
            fps=ex.fps,
            settings=settings,
            pin_tracks=ex.pin_tracks,
            collider_tracks=ex.collider_tracks,
        )

    def _record(self, item) -> None:
        frame, state = item
        ex = self.export
        world = ex.world
        now = _now()
        if self._frame_clock is not None:
            self.frame_seconds[frame] = now - self._frame_clock
        self._frame_clock = now
        for body, out in zip(ex.bodies, self.tet_positions, strict=True):
            out[frame] = world.body_positions(state, body.body_index)
        for d, collider in enumerate(ex.dynamic_colliders):
            pose = world.collider_pose(state, collider.collider_index)
            self.box_position[frame, d], self.box_quaternion[frame, d] = pose
        stats = getattr(state, "stats", None)
        if stats is not None:
            self._record_stats(frame, stats)
        self.frames_done = frame + 1

    def _record_stats(self, frame: int, stats) -> None:
        """Keep the solver statistics of one yielded frame (those of its last step)."""
        if frame > 0:
            self.newton_iterations[frame] = stats.newton_iterations
            self.pcg_iterations[frame] = stats.pcg_iterations
            self.contact_count[frame] = stats.contact_count
            self.max_penetration[frame] = stats.max_penetration
            self.converged[frame] = stats.converged

    def status_text(self) -> str:
        if self.frames_done <= 1:
            return "Compiling the soft solver (first run only)…"
        return super().status_text()

    def _settings_report(self) -> dict:
        from ..core.fem.world_solver import resolved_contact_thickness

        ex = self.export
        return {
            "substeps": ex.substeps,
            "contact": ex.contact,
            "integrator": ex.integrator,
            "dual_solver": ex.dual_solver,
            "contact_thickness": resolved_contact_thickness(ex.world, ex.solver_settings()),
            "contact_thickness_automatic": ex.contact_thickness <= 0.0,
            "output": ex.output,
            "cache_dir": ex.cache_dir,
        }

    def _engine_report(self) -> dict:
        ex = self.export
        done = self.frames_done
        steps = slice(1, done)
        newton = self.newton_iterations[steps]
        seconds = self.frame_seconds[steps]
        return {
            "bodies": {
                "soft": [b.object_name for b in ex.bodies],
                "active": [c.object_name for c in ex.dynamic_colliders],
                "passive": [c.object_name for c in ex.passive_colliders],
            },
            "settings": self._settings_report(),
            "stats": {
                "soft_bodies": [
                    {
                        "object": b.object_name,
                        "tets": b.tet_count,
                        "tet_vertices": b.tet_vertex_count,
                        "render_vertices": b.render_vertex_count,
                        "pinned_vertices": int(b.pinned.sum()),
                    }
                    for b in ex.bodies
                ],
                "tets": int(sum(b.tet_count for b in ex.bodies)),
                "vertices": int(sum(b.tet_vertex_count for b in ex.bodies)),
                "render_vertices": int(sum(b.render_vertex_count for b in ex.bodies)),
                "max_newton_iterations": int(newton.max()) if newton.size else 0,
                "mean_newton_iterations": float(newton.mean()) if newton.size else 0.0,
                "unconverged_frames": int((~self.converged[steps]).sum()),
                "max_contacts": int(self.contact_count[steps].max()) if newton.size else 0,
                "max_penetration": float(self.max_penetration[steps].max()) if newton.size else 0.0,
                "seconds_per_frame": float(seconds.mean()) if seconds.size else 0.0,
            },
            "warnings": list(ex.warnings),
            "files": list(self.written_files),
        }

    def per_frame_stats(self) -> dict:
        done = self.frames_done
        return {
            "frame": [int(f) for f in self.export.frames[:done]],
            "newton_iterations": self.newton_iterations[:done].tolist(),
            "pcg_iterations": self.pcg_iterations[:done].tolist(),
            "contact_count": self.contact_count[:done].tolist(),
            "max_penetration": self.max_penetration[:done].tolist(),
            "seconds": self.frame_seconds[:done].tolist(),
        }

    # writing --------------------------------------------------------------------------------------
    def _check_finite(self) -> None:
        ex = self.export
        for body, positions in zip(ex.bodies, self.tet_positions, strict=True):
            bad = np.flatnonzero(~np.isfinite(positions).all(axis=(1, 2)))
            if bad.size:
                frame = int(ex.frames[bad[0]])
                raise BakeError(
                    f"Simulation diverged at frame {frame} (objects: {body.object_name}); nothing was changed",
                    object_name=body.object_name,
                    frame=frame,
                )

    def _write(self, scene) -> None:
        ex = self.export
        self._check_finite()
        # 1. everything that can fail, before any change: objects still there and unchanged, positions
        soft_objects = []
        for body in ex.bodies:
            obj = _object(scene, body.object_name)
            if obj.type != "MESH" or len(obj.data.vertices) != body.render_vertex_count:
                raise BakeError(
                    f"'{obj.name}': its mesh changed during the bake; nothing was changed", object_name=obj.name
                )
            soft_objects.append(obj)
        boxes = [_object(scene, c.object_name) for c in ex.dynamic_colliders]
        positions = [
            body.local_positions(tets, ex.length_scale)
            for body, tets in zip(ex.bodies, self.tet_positions, strict=True)
        ]
        for body, local in zip(ex.bodies, positions, strict=True):
            if not np.isfinite(local).all():
                raise BakeError(
                    f"'{body.object_name}': the baked positions are not finite in single precision; nothing was "
                    "changed",
                    object_name=body.object_name,
                )
        transforms = []
        for d, collider in enumerate(ex.dynamic_colliders):
            com = self.box_position[:, d] / ex.length_scale
            quat = units.make_quat_continuous(self.box_quaternion[:, d])
            location = units.body_to_object_location(com, quat, collider.centre_local, collider.scale)
            transforms.append((location, quat))
        frames = ex.frames.astype(np.float64)
        # 2. cache files: each written atomically next to its target, renamed over it once all are written
        if ex.output == "PC2":
            self.written_files = _write_pc2_files(scene, ex, soft_objects, positions)
        # 3. Blender data
        _key_transforms(boxes, ex.frames, transforms)
        for obj, local, path in zip(
            soft_objects, positions, self.written_files or [None] * len(soft_objects), strict=True
        ):
            deform_output.remove_deform_output(obj)
            if ex.output == "PC2":
                deform_output.attach_pc2(obj, path, frame_start=int(ex.frames[0]))
            else:
                deform_output.write_shape_keys(obj, frames, local, hold_ends=True)


class IpcBakeJob(SoftBakeJob):
    """IPC engine: :func:`core.ipc.simulate_ipc.iter_simulate_ipc` on the soft engine's scene → the same outputs
    as :class:`SoftBakeJob` (shape keys or PC2 caches, keyframes of the dynamic boxes)."""

    engine = "IPC"

    def __init__(self, scene, export):
        F = int(export.frames.shape[0])
        self.min_distance = np.full(F, np.inf)
        """Smallest surface distance within dhat at the end of each frame [m] (inf: no pair within dhat)."""
        self.kappa = np.zeros(F)
        """Barrier stiffness used at the end of each frame [Pa/m]."""
        self.friction_count = np.zeros(F, dtype=np.int64)
        self.intersections = np.zeros(F, dtype=np.int64)
        """Intersecting triangle pairs found by the independent checker per frame (Check Intersections)."""
        self.inverted = np.zeros(F, dtype=np.int64)
        """Inverted tets found by the independent checker per frame (Check Intersections)."""
        super().__init__(scene, export)

    def _simulation(self):
        from ..core.ipc.simulate_ipc import iter_simulate_ipc

        ex = self.export
        return iter_simulate_ipc(
            ex.ipc_world,
            frame_count=self.frame_count,
            fps=ex.fps,
            settings=ex.solver_settings(),
            pin_tracks=ex.pin_tracks,
            collider_tracks=ex.ipc_collider_tracks,
        )

    def _record_stats(self, frame: int, stats) -> None:
        if frame > 0:
            self.newton_iterations[frame] = stats.newton_iterations
            self.pcg_iterations[frame] = stats.pcg_iterations
            self.contact_count[frame] = stats.contact_count
            self.friction_count[frame] = stats.friction_count
            self.min_distance[frame] = stats.min_distance
            self.kappa[frame] = stats.kappa
            self.converged[frame] = stats.converged
        self.intersections[frame] = stats.intersections  # the checker also checks the start (frame 0)
        self.inverted[frame] = stats.inverted

    def step(self, *, max_frames: int | None = 1, time_budget: float | None = None) -> bool:
        """:meth:`BakeJob.step`; a start state IPC cannot take (touching or intersecting surfaces) is an input
        error naming the problem, raised by the first step (nothing was simulated or written)."""
        from ..core.ipc.ipc_solver import IpcInputError

        try:
            return super().step(max_frames=max_frames, time_budget=time_budget)
        except BakeError as exc:
            cause = exc.__cause__
            if not isinstance(cause, IpcInputError):
                raise
            names = [b.object_name for b in self.export.bodies]
            culprit = next((n for n in names if f"{n}" in str(cause)), names[0] if names else None)
            frame = int(self.export.frames[0])
            raise BakeError(
                f"{cause}. Move the objects apart at frame {frame} (IPC surfaces must start with a gap); nothing "
                "was changed",
                object_name=culprit,
                frame=frame,
            ) from cause

    def status_text(self) -> str:
        if self.frames_done <= 1:
            return "Compiling the IPC solver (first run only)…"
        return BakeJob.status_text(self)

    def _settings_report(self) -> dict:
        ex = self.export
        return {
            "substeps": ex.substeps,
            "dhat": ex.resolved_dhat(),
            "dhat_automatic": ex.dhat <= 0.0,
            "kappa": ex.kappa,
            "kappa_automatic": ex.kappa <= 0.0,
            "eps_v": ex.eps_v,
            "tolerance": ex.tolerance,
            "max_iterations": ex.max_iterations,
            "check_intersections": ex.check_intersections,
            "output": ex.output,
            "cache_dir": ex.cache_dir,
        }

    def _engine_report(self) -> dict:
        report = super()._engine_report()
        stats = report["stats"]
        del stats["max_penetration"]  # IPC never penetrates; the checker below verifies it
        steps = slice(1, self.frames_done)
        closest = self.min_distance[steps]
        closest = closest[np.isfinite(closest)]
        stats["min_distance"] = float(closest.min()) if closest.size else None
        stepped = self.frames_done > 1
        # the largest barrier stiffness used [Pa/m]: the automatic or set value, grown while surfaces approach
        stats["max_kappa"] = float(self.kappa[steps].max()) if stepped else 0.0
        stats["max_friction_contacts"] = int(self.friction_count[steps].max()) if stepped else 0
        if self.export.check_intersections:
            stats["checked_frames"] = self.frames_done
            stats["intersections"] = int(self.intersections[: self.frames_done].sum())
            stats["inverted"] = int(self.inverted[: self.frames_done].sum())
        return report

    def per_frame_stats(self) -> dict:
        done = self.frames_done
        out = super().per_frame_stats()
        del out["max_penetration"]
        out["friction_count"] = self.friction_count[:done].tolist()
        out["min_distance"] = [float(d) if np.isfinite(d) else None for d in self.min_distance[:done]]
        out["kappa"] = self.kappa[:done].tolist()
        if self.export.check_intersections:
            out["intersections"] = self.intersections[:done].tolist()
            out["inverted"] = self.inverted[:done].tolist()
        return out


def _write_pc2_files(scene, export, objects, positions) -> list[str]:
    """Write one PC2 file per soft object into ``export.cache_dir``; return their absolute paths.

    All files are first written as hidden temporaries (atomically, by :func:`core.pc2.write_pc2`) and renamed
    over their targets only when every one was written, so a failure leaves the previous caches intact.

    Raises:
        BakeError: the folder cannot be created or a file cannot be written.
    """
    from ..core import pc2

    folder = export.cache_dir
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise BakeError(f"cannot create the PC2 Cache Folder '{folder}': {exc.strerror or exc}") from exc
    from .soft_export import cache_file_name

    paths = [os.path.join(folder, cache_file_name(bpy.data.filepath, scene.name, obj.name)) for obj in objects]
    staged = []
    try:
        for path, local in zip(paths, positions, strict=True):
            tmp = os.path.join(folder, "." + os.path.basename(path) + ".new")
            pc2.write_pc2(tmp, local, start_frame=float(export.frames[0]), sample_rate=1.0)
            staged.append(tmp)
    except OSError as exc:
        for tmp in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        reason = exc.strerror or exc
        raise BakeError(f"cannot write the PC2 cache in '{folder}': {reason}; nothing was changed") from exc
    for tmp, path in zip(staged, paths, strict=True):
        os.replace(tmp, path)
    return paths


def _object(scene, name: str):
    obj = scene.objects.get(name)
    if obj is None:
        raise BakeError(f"'{name}' was removed during the bake; nothing was changed")
    return obj


def _key_transforms(objects: list, frames: np.ndarray, transforms: list) -> None:
    """Key location + rotation_quaternion of ``objects``: new actions first, then swapped in (all or nothing).

    Args:
        objects: bpy objects. frames: scene frames (F,). transforms: per object ``(location (F, 3) [BU],
            quaternion (F, 4) wxyz)``.
    """
    frames = np.asarray(frames, dtype=np.float64)
    built = []
    try:  # phase 1: new actions, not yet assigned
        for obj, (location, quaternion) in zip(objects, transforms, strict=True):
            name = f"{obj.name}{ACTION_SUFFIX}"
            built.append(keyframes.new_transform_action(obj, frames, location, quaternion, action_name=name))
    except BaseException:
        for action, _ in built:
            bpy.data.actions.remove(action)
        raise
    # phase 2: swap (nothing left that can fail half-way on valid data)
    for obj, (action, slot) in zip(objects, built, strict=True):
        _swap_in(obj, action, slot)


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
    return job.per_frame_stats()


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
    """Validate and export ``scene`` for its engine and return a job ready to be stepped. Changes nothing.

    Raises:
        BakeError: invalid input; the message names the object.
    """
    t0 = _now()
    engine = str(getattr(scene.contact_lab, "engine", "RIGID"))
    if engine == "SOFT":
        from .soft_export import export_soft_scene

        export = export_soft_scene(scene, frame_start=frame_start, frame_end=frame_end)
        export.timings["export"] = _now() - t0
        return SoftBakeJob(scene, export)
    if engine == "IPC":
        from .ipc_export import export_ipc_scene

        export = export_ipc_scene(scene, frame_start=frame_start, frame_end=frame_end)
        export.timings["export"] = _now() - t0
        return IpcBakeJob(scene, export)
    soft = sorted(o.name for o in scene.objects if getattr(getattr(o, "contact_lab", None), "role", None) == "SOFT")
    if soft:
        raise BakeError(
            f"'{soft[0]}' is a Soft body but the scene's Engine is Rigid: set Physics ▸ Contact Lab Bake ▸ Engine to "
            "Soft or IPC, or change its Role",
            object_name=soft[0],
        )
    from .scene_export import contact_objects, raise_problems
    from .soft_export import mesh_shape_problems

    active, passive = contact_objects(scene)
    raise_problems(mesh_shape_problems(active + passive, "Rigid"))
    export = export_scene(scene, frame_start=frame_start, frame_end=frame_end)
    export.timings["export"] = _now() - t0
    return RigidBakeJob(scene, export)


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
        s = getattr(obj, "contact_lab", None)
        if s is None:
            continue
        removed = obj.type == "MESH" and deform_output.remove_deform_output(obj)
        if s.baked_action is None and not s.has_previous:
            if removed:
                cleared.append(obj.name)
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
