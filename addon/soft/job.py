"""The soft engine's bake: :func:`core.soft.frame_loop.iter_simulate` → shape keys or PC2 caches."""

from __future__ import annotations

import time

import numpy as np

from ...core.fem.trajectory import SoftTrajectory
from .. import units
from ..bake.job import BakeJob, diverged, scene_object, unconverged
from ..errors import BakeError
from ..output import deform as deform_output
from ..output.actions import commit_transforms, prepare_transforms
from ..output.caches import resolve_cache_dir
from ..output.transaction import Transaction
from ..scene import raise_problems
from .build import SoftSceneExport, SoftSceneInput, build_soft_scene
from .gather import gather_soft_scene


class SoftBakeJob(BakeJob):
    """Soft engine: :func:`core.soft.frame_loop.iter_simulate` → shape keys or PC2 caches of the soft
    objects and location/rotation keyframes of the dynamic (active) boxes."""

    engine = "SOFT"
    convergence_fix = "raise Scene ▸ Contact Lab Bake ▸ Soft Substeps (a shorter step)"
    """The end of the warning for frames that did not converge (:func:`..job.unconverged`)."""

    def __init__(self, scene, gathered):
        F = int(gathered.frames.shape[0])
        self.trajectory = SoftTrajectory(F, 0)
        """The core's :class:`~contact_lab.core.fem.trajectory.SoftTrajectory` (positions, per-frame statistics);
        an empty one until the first frame, so a report before then reads zeros."""
        self.box_position = np.empty((F, 0, 3))
        """Dynamic boxes' centre of mass per frame [m], (F, D, 3) (sized once built)."""
        self.box_quaternion = np.empty((F, 0, 4))
        """Dynamic boxes' orientation per frame (wxyz), (F, D, 4) (sized once built)."""
        self.frame_seconds = np.zeros(F)
        """Wall-clock time spent on each frame [s]."""
        self._frame_clock = None
        self.written_files: list[str] = []
        """PC2 files of the last successful write (absolute paths)."""
        self.write_warnings: list[str] = []
        """Leftovers the last write could not remove (see :class:`~..output.transaction.Transaction`)."""
        super().__init__(scene, gathered)

    @classmethod
    def gather(
        cls, scene, *, frame_start: int | None = None, frame_end: int | None = None, owner: str | None = None
    ) -> SoftSceneInput:
        """Validate and read the soft engine's scene (:func:`.export.gather_soft_scene`)."""
        gathered, _meshes, _matrices = gather_soft_scene(
            scene, frame_start=frame_start, frame_end=frame_end, owner=owner
        )
        return gathered

    @classmethod
    def build_export(cls, gathered) -> SoftSceneExport:
        """The soft world: lattices, embedding, colliders (:func:`.export.build_soft_scene`)."""
        return build_soft_scene(gathered)

    def _built(self) -> None:
        F, D = self.frame_count, len(self.export.dynamic_colliders)
        self.box_position = np.empty((F, D, 3))
        self.box_quaternion = np.empty((F, D, 4))

    @classmethod
    def output_folders(cls, scene, owner: str | None = None) -> list[tuple[str, str, str]]:
        """The PC2 Cache Folder when the output is PC2 (also for IPC, which shares the setting)."""
        settings = scene.contact_lab
        if settings.soft_output != "PC2":
            return []
        setting = f"PC2 Cache Folder of scene '{scene.name}'"
        return [(setting, str(settings.soft_cache_dir).strip(), resolve_cache_dir(scene, owner))]

    def _simulation(self):
        from ...core.soft import frame_loop

        ex = self.export
        return frame_loop.iter_simulate(
            ex.world,
            frame_count=self.frame_count,
            fps=ex.fps,
            settings=ex.solver_settings(),
            pin_tracks=ex.pin_tracks,
            collider_tracks=ex.collider_tracks,
            stop=self.stop,
        )

    def _record(self, item) -> None:
        frame, self.trajectory = item
        ex = self.export
        now = time.perf_counter()
        if self._frame_clock is not None:
            self.frame_seconds[frame] = now - self._frame_clock
        self._frame_clock = now
        for d, collider in enumerate(ex.dynamic_colliders):
            pose = ex.world.collider_pose(self.trajectory.state, collider.collider_index)
            self.box_position[frame, d], self.box_quaternion[frame, d] = pose
        self.frames_done = frame + 1

    def tet_positions(self) -> list[np.ndarray]:
        """Per soft body: lattice vertex positions in the world per frame [m], (F, V_tet, 3) (views)."""
        world, node_pos = self.export.world, self.trajectory.node_pos
        starts = world.body_node_start
        return [node_pos[:, starts[b.body_index] : starts[b.body_index + 1]] for b in self.export.bodies]

    def solver_note(self) -> str:
        done = self.frames_done
        if done <= 1 or self.trajectory.newton_iterations.shape[0] < done:
            return ""
        return f"{int(self.trajectory.newton_iterations[done - 1])} Newton iterations"

    def _settings_report(self) -> dict:
        from ...core.soft.world_solver import resolved_contact_thickness

        ex = self.export or self.input
        thickness = ex.contact_thickness
        if self.export is not None:
            thickness = resolved_contact_thickness(self.export.world, self.export.solver_settings())
        return {
            "substeps": ex.substeps,
            "contact": ex.contact,
            "integrator": ex.integrator,
            "dual_solver": ex.dual_solver,
            "contact_thickness": thickness,
            "contact_thickness_automatic": ex.contact_thickness <= 0.0,
            "friction_velocity": ex.friction_velocity,
            "output": ex.output,
            "cache_dir": ex.cache_dir,
        }

    def _body_names(self) -> dict:
        """Soft, active and passive object names (from the gathered scene until the world is built)."""
        if self.export is not None:
            ex = self.export
            return {
                "soft": [b.object_name for b in ex.bodies],
                "active": [c.object_name for c in ex.dynamic_colliders],
                "passive": [c.object_name for c in ex.passive_colliders],
            }
        inp = self.input
        colliders = inp.colliders + [m.record for m in getattr(inp, "meshes", [])]
        return {
            "soft": [b.object_name for b in inp.bodies],
            "active": [c.object_name for c in colliders if c.role == "ACTIVE"],
            "passive": [c.object_name for c in colliders if c.role != "ACTIVE"],
        }

    def _engine_report(self) -> dict:
        ex = self.export
        done, traj = self.frames_done, self.trajectory
        steps = slice(1, done)
        newton = traj.newton_iterations[steps]
        seconds = self.frame_seconds[steps]
        bodies = ex.bodies if ex is not None else []
        return {
            "bodies": self._body_names(),
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
                    for b in bodies
                ],
                "tets": int(sum(b.tet_count for b in bodies)),
                "vertices": int(sum(b.tet_vertex_count for b in bodies)),
                "render_vertices": int(sum(b.render_vertex_count for b in bodies)),
                # the most Newton iterations of one step (every step counts, not only each frame's last one)
                "max_newton_iterations": int(traj.solver_iterations[steps].max()) if newton.size else 0,
                "mean_newton_iterations": float(newton.mean()) if newton.size else 0.0,
                "unconverged_frames": int((~traj.converged[steps]).sum()),
                "max_contacts": int(traj.contact_count[steps].max()) if newton.size else 0,
                "max_penetration": float(traj.max_penetration[steps].max()) if newton.size else 0.0,
                "seconds_per_frame": float(seconds.mean()) if seconds.size else 0.0,
            },
            "warnings": list(self.input.warnings) + list(self.write_warnings),
            "files": list(self.written_files),
        }

    def _convergence_warning(self) -> str | None:
        done = self.frames_done
        if done <= 1:
            return None
        return unconverged(self.input.frames[1:done], self.trajectory.converged[1:done], self.convergence_fix)

    def per_frame_stats(self) -> dict:
        done, traj = self.frames_done, self.trajectory
        return {
            "frame": [int(f) for f in self.input.frames[:done]],
            "solver_iterations": traj.solver_iterations[:done].tolist(),
            "newton_iterations": traj.newton_iterations[:done].tolist(),
            "pcg_iterations": traj.pcg_iterations[:done].tolist(),
            "contact_count": traj.contact_count[:done].tolist(),
            "max_penetration": traj.max_penetration[:done].tolist(),
            "converged": traj.converged[:done].tolist(),
            "seconds": self.frame_seconds[:done].tolist(),
        }

    # writing --------------------------------------------------------------------------------------
    def _check_finite(self) -> None:
        ex = self.export
        for body, positions in zip(ex.bodies, self.tet_positions(), strict=True):
            bad = np.flatnonzero(~np.isfinite(positions).all(axis=(1, 2)))
            if bad.size:
                frame = int(ex.frames[bad[0]])
                raise diverged(frame, [body.object_name])

    def _write(self, scene) -> None:
        ex = self.export
        self._check_finite()
        # 1. everything that can fail, before any change: objects still there and unchanged, positions
        soft_objects = []
        for body in ex.bodies:
            obj = scene_object(scene, body.object_name)
            if obj.type != "MESH" or len(obj.data.vertices) != body.render_vertex_count:
                raise BakeError(
                    f"'{obj.name}': its mesh changed during the bake; nothing was changed", object_name=obj.name
                )
            soft_objects.append(obj)
        raise_problems(output_problems(soft_objects, ex.output))
        boxes = [scene_object(scene, c.object_name) for c in ex.dynamic_colliders]
        positions = [
            body.local_positions(tets, ex.length_scale)
            for body, tets in zip(ex.bodies, self.tet_positions(), strict=True)
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
        pc2_output = ex.output == "PC2"
        self.written_files = []
        # 2. one transaction: prepare beside the old data, swap in, discard the replaced data (module
        # output.transaction); any failure puts back every object and every cache file
        with Transaction(f"bake of scene '{scene.name}'") as txn:
            built = prepare_transforms(txn, boxes, ex.frames, transforms)
            staged = deform_output.stage_pc2_files(txn, scene, ex, soft_objects, positions) if pc2_output else []
            swaps, meshes = [], set()
            for obj, local in zip(soft_objects, positions, strict=True):
                if obj.data in meshes:  # PC2 of linked duplicates: their shared mesh is replaced once, for all
                    swaps.append(deform_output.DeformSwap(obj, ex.output))
                    continue
                meshes.add(obj.data)
                swaps.append(deform_output.prepare_deform_output(txn, obj, ex.output, frames, local, hold_ends=True))
            commit_transforms(txn, built)
            for k, swap in enumerate(swaps):
                cache = staged[k][0] if pc2_output else None
                deform_output.commit_deform_output(txn, swap, cache_path=cache, frame_start=float(ex.frames[0]))
            if pc2_output:
                deform_output.commit_pc2_files(txn, staged, soft_objects)
        self.written_files = [target for target, _ in staged]
        self.write_warnings = list(txn.warnings)


def output_problems(soft_objects: list, output: str) -> list[tuple[str | None, str]]:
    """Why the bake could not write the deform output of ``soft_objects`` (``output``: 'SHAPE_KEYS' or 'PC2'):
    a foreign modifier with the cache modifier's name; two objects sharing one mesh, which cannot hold the shape
    keys of both (PC2 output is fine: each object gets its own cache modifier and file).

    The one source of these refusals: the write checks them before any change, Check Scene before the bake.
    """
    problems: list[tuple[str | None, str]] = []
    owners: dict = {}
    for obj in soft_objects:
        problem = deform_output.deform_output_problem(obj)
        if problem:
            problems.append((obj.name, problem))
        other = owners.setdefault(obj.data, obj)
        if output == "SHAPE_KEYS" and other is not obj:
            problems.append(
                (
                    obj.name,
                    f"'{other.name}' and '{obj.name}' share the mesh '{obj.data.name}', which cannot hold the shape "
                    "keys of both: make them single-user (Object ▸ Relations ▸ Make Single User ▸ Object & Data) or "
                    "set Soft Output to PC2 Cache; nothing was changed",
                )
            )
    return problems
