"""The rigid engine's bake: :func:`core.rigid.iter_simulate` → location/rotation keyframes of the active objects."""

from __future__ import annotations

import numpy as np

from ...core import iter_simulate
from ..bake.job import BakeJob, diverged, scene_object
from ..bake.joint_report import joint_report, per_frame_joint_stats
from ..errors import BakeError
from ..output.actions import ACTION_SUFFIX, commit_transforms, prepare_transforms
from ..output.transaction import Transaction
from ..properties import SHAPE_ITEMS
from .build import RigidSceneInput, SceneExport, build_scene
from .gather import gather_scene

__all__ = ["ACTION_SUFFIX", "RigidBakeJob"]
"""``ACTION_SUFFIX``: the baked actions are named ``<object name><ACTION_SUFFIX>``."""


class RigidBakeJob(BakeJob):
    """Rigid engine: :func:`core.iter_simulate` → location/rotation keyframes of the active objects."""

    engine = "RIGID"
    shapes = frozenset(name for name, _, _ in SHAPE_ITEMS)

    def __init__(self, scene, gathered: RigidSceneInput):
        self.trajectory = None
        self.write_warnings: list[str] = []
        """Leftovers the last write could not remove (see :class:`~..output.transaction.Transaction`)."""
        super().__init__(scene, gathered)

    @classmethod
    def gather(
        cls, scene, *, frame_start: int | None = None, frame_end: int | None = None, owner: str | None = None
    ) -> RigidSceneInput:
        """Refuse soft bodies (the other engines' objects), then read the rigid scene (:func:`.export.gather_scene`)."""
        soft = sorted(o.name for o in scene.objects if getattr(getattr(o, "contact_lab", None), "role", None) == "SOFT")
        if soft:
            raise BakeError(
                f"'{soft[0]}' is a Soft body but the scene's Engine is Rigid: set Scene ▸ Contact Lab Bake ▸ Engine "
                "to Soft or IPC, or change its Role",
                object_name=soft[0],
            )
        return gather_scene(scene, frame_start=frame_start, frame_end=frame_end)

    @classmethod
    def build_export(cls, gathered: RigidSceneInput) -> SceneExport:
        """The core model (:func:`.export.build_scene`)."""
        return build_scene(gathered)

    def _simulation(self):
        return iter_simulate(self.export.model, **self.export.simulate_kwargs(), stop=self.stop)

    def _record(self, item) -> None:
        _, self.trajectory = item
        self.frames_done = self.trajectory.frames_done

    def _engine_report(self) -> dict:
        bodies, settings = self.input.bodies, self.input.settings
        report = {
            "bodies": {
                "active": [b.object_name for b in bodies if b.role == "ACTIVE"],
                "passive": [b.object_name for b in bodies if b.role != "ACTIVE"],
                "compound_parts": {b.object_name: b.parts for b in bodies if b.parts},
            },
            "settings": {
                name: settings[name]
                for name in (
                    "solver",
                    "substeps",
                    "iterations",
                    "tolerance",
                    "shock_propagation",
                    "friction_combine",
                    "restitution_combine",
                )
            },
            "stats": _stats_summary(self.trajectory, self.frames_done),
            "warnings": list(self.write_warnings),
        }
        if self.input.joints:  # a scene without joints keeps its report as it was
            report["joints"] = joint_report(self.input.joints, self.trajectory, self.input.frames, self.frames_done)
        return report

    def per_frame_stats(self) -> dict:
        traj, done = self.trajectory, self.frames_done
        if traj is None:
            return {}
        return (
            {
                "frame": [int(f) for f in self.export.frames[:done]],
                "contact_count": traj.contact_count[:done].tolist(),
                "solver_iterations": traj.solver_iterations[:done].tolist(),
                "solver_residual": traj.solver_residual[:done].tolist(),
                "solver_merit": traj.solver_merit[:done].tolist(),
                "solver_rejections": traj.solver_rejections[:done].tolist(),
                "max_penetration": traj.max_penetration[:done].tolist(),
                "contact_overflow": traj.contact_overflow[:done].tolist(),
                "solver_capped": traj.solver_capped[:done].tolist(),
                "converged": traj.converged[:done].tolist(),
            }
            | (per_frame_joint_stats(traj, done) if self.input.joints else {})
            | _merit_history(traj, done)
        )

    def _check_finite(self, traj) -> None:
        index = [b.body_index for b in self.export.active_bodies]
        ok = np.isfinite(traj.body_pos[:, index]).all(axis=2) & np.isfinite(traj.body_quat[:, index]).all(axis=2)
        if not ok.all():
            f, k = np.argwhere(~ok)[0]
            frame = int(self.export.frames[f])
            name = self.export.active_bodies[k].object_name
            raise diverged(frame, [name])

    def _write(self, scene) -> None:
        if self.trajectory is None or self.export is None:
            raise BakeError("the simulation has not finished")
        self._check_finite(self.trajectory)
        transforms = self.export.object_transforms(self.trajectory)
        objects = [scene_object(scene, body.object_name) for body in self.export.active_bodies]
        # one transaction: every object gets its new action, or none does (module output.transaction)
        with Transaction(f"bake of scene '{scene.name}'") as txn:
            built = prepare_transforms(txn, objects, self.export.frames, [transforms[obj.name] for obj in objects])
            commit_transforms(txn, built)
        self.write_warnings = list(txn.warnings)


def _merit_history(traj, done: int) -> dict:
    """``{"solver_merit_history": [[merit after each sweep] per frame]}`` when the bake recorded it (Convergence
    History; the initial frame's list is empty), else nothing: a report without it keeps its keys."""
    history = traj.solver_merit_history[:done]
    if history.shape[1] == 0:
        return {}
    return {"solver_merit_history": [row[np.isfinite(row)].tolist() for row in history]}


def _stats_summary(traj, done: int) -> dict:
    if traj is None or done <= 1:
        return {
            "max_contacts": 0,
            "max_iterations": 0,
            "max_residual": 0.0,
            "max_penetration": 0.0,
            "contact_overflow": 0,
            "capped_frames": 0,
            "sleeping_at_end": 0,
        }
    sl = slice(1, done)
    return {
        "max_contacts": int(traj.contact_count[sl].max()),
        "max_iterations": int(traj.solver_iterations[sl].max()),
        "max_residual": float(traj.solver_residual[sl].max()),
        "max_penetration": float(traj.max_penetration[sl].max()),
        "contact_overflow": int(traj.contact_overflow[sl].sum()),
        # frames with a substep whose contact solve stopped at Iterations above Tolerance: no warning, a stack of
        # three boxes at the default 1e-6 does this for its first 9 frames and rests as it should
        "capped_frames": int((traj.solver_capped[sl] > 0).sum()),
        "sleeping_at_end": int(traj.sleeping_bodies[done - 1]),
    }
