"""The IPC engine's bake: :func:`core.ipc.frame_loop.iter_simulate` → the soft engine's outputs."""

from __future__ import annotations

import numpy as np

from ..errors import BakeError
from ..soft.job import SoftBakeJob
from .build import IpcSceneExport, IpcSceneInput, build_ipc_scene
from .gather import gather_ipc_scene


class IpcBakeJob(SoftBakeJob):
    """IPC engine: :func:`core.ipc.frame_loop.iter_simulate` on the soft engine's scene → the same outputs
    as :class:`SoftBakeJob` (shape keys or PC2 caches, keyframes of the dynamic boxes)."""

    engine = "IPC"
    convergence_fix = "raise Scene ▸ Contact Lab Bake ▸ IPC ▸ Max Iterations, or Soft Substeps"

    def __init__(self, scene, gathered: IpcSceneInput):
        super().__init__(scene, gathered)
        from ...core.ipc.trajectory import IpcTrajectory

        self.trajectory = IpcTrajectory(self.frame_count, 0)  # empty until the first frame: reports read zeros

    @classmethod
    def gather(
        cls, scene, *, frame_start: int | None = None, frame_end: int | None = None, owner: str | None = None
    ) -> IpcSceneInput:
        """Validate and read the IPC engine's scene (:func:`.export.gather_ipc_scene`)."""
        return gather_ipc_scene(scene, frame_start=frame_start, frame_end=frame_end, owner=owner)

    @classmethod
    def build_export(cls, gathered: IpcSceneInput) -> IpcSceneExport:
        """The soft world and its IPC view (:func:`.export.build_ipc_scene`)."""
        return build_ipc_scene(gathered)

    def _simulation(self):
        from ...core.ipc import frame_loop

        ex = self.export
        return frame_loop.iter_simulate(
            ex.ipc_world,
            frame_count=self.frame_count,
            fps=ex.fps,
            settings=ex.ipc_settings(),
            pin_tracks=ex.pin_tracks,
            collider_tracks=ex.ipc_collider_tracks,
            stop=self.stop,
        )

    def step(self, *, max_frames: int | None = 1, time_budget: float | None = None) -> bool:
        """:meth:`BakeJob.step`; a start state IPC cannot take (touching or intersecting surfaces) is an input
        error naming the problem, raised by the first step (nothing was simulated or written)."""
        from ...core.errors import IpcInputError

        try:
            return super().step(max_frames=max_frames, time_budget=time_budget)
        except BakeError as exc:
            cause = exc.__cause__
            if not isinstance(cause, IpcInputError):
                raise
            names = [b.object_name for b in self.input.bodies]
            culprit = next((n for n in names if f"{n}" in str(cause)), names[0] if names else None)
            frame = int(self.input.frames[0])
            raise BakeError(
                f"{cause}. Move the objects apart at frame {frame} (IPC surfaces must start with a gap); nothing "
                "was changed",
                object_name=culprit,
                frame=frame,
            ) from cause

    def solver_note(self) -> str:
        """The last frame's Newton iterations over all its solver steps (the soft note counts its last step's)."""
        done, traj = self.frames_done, self.trajectory
        if done <= 1 or traj.newton_total.shape[0] < done:
            return ""
        solves = int(traj.solves[done - 1])
        return f"{int(traj.newton_total[done - 1])} Newton iterations in {solves} step{'s' if solves != 1 else ''}"

    def _settings_report(self) -> dict:
        ex, inp = self.export, self.input
        return {
            "substeps": inp.substeps,
            "dhat": ex.resolved_dhat() if ex is not None else inp.dhat,
            "dhat_automatic": inp.dhat <= 0.0,
            "kappa": inp.kappa,
            "kappa_automatic": inp.kappa <= 0.0,
            "eps_v": inp.eps_v,
            "tolerance": inp.tolerance,
            "max_iterations": inp.max_iterations,
            "check_intersections": inp.check_intersections,
            "output": inp.output,
            "cache_dir": inp.cache_dir,
        }

    def _engine_report(self) -> dict:
        report = super()._engine_report()
        stats = report["stats"]
        del stats["max_penetration"]  # IPC never penetrates; the checker below verifies it
        traj = self.trajectory
        steps = slice(1, self.frames_done)
        closest = traj.min_distance[steps]
        closest = closest[np.isfinite(closest)]
        stats["min_distance"] = float(closest.min()) if closest.size else None
        stepped = self.frames_done > 1
        # the largest barrier stiffness used [Pa/m]: the automatic or set value, grown while surfaces approach
        stats["max_kappa"] = float(traj.kappa[steps].max()) if stepped else 0.0
        stats["max_friction_contacts"] = int(traj.friction_count[steps].max()) if stepped else 0
        # fast contacts: steps halved until every step's straight-line motion is collision-free
        stats["solver_steps"] = int(traj.steps[steps].sum())
        stats["halved_steps"] = int(traj.splits[steps].sum())
        # Newton iterations per solver step over every step of every frame (the soft report's per-frame keys, here
        # measured on each solve, the ones a halving threw away included)
        solves = int(traj.solves[steps].sum())
        stats["newton_solves"] = solves
        stats["newton_iterations"] = int(traj.newton_total[steps].sum())
        stats["pcg_iterations"] = int(traj.pcg_total[steps].sum())
        stats["max_newton_iterations"] = int(traj.newton_max[steps].max()) if stepped else 0
        stats["mean_newton_iterations"] = stats["newton_iterations"] / solves if solves else 0.0
        if self.input.check_intersections:
            stats["checked_frames"] = self.frames_done
            stats["intersections"] = int(traj.intersections[: self.frames_done].sum())
            stats["inverted"] = int(traj.inverted[: self.frames_done].sum())
        return report

    def per_frame_stats(self) -> dict:
        done, traj = self.frames_done, self.trajectory
        out = super().per_frame_stats()
        del out["max_penetration"]
        out["friction_count"] = traj.friction_count[:done].tolist()
        out["min_distance"] = [float(d) if np.isfinite(d) else None for d in traj.min_distance[:done]]
        out["kappa"] = traj.kappa[:done].tolist()
        out["solver_steps"] = traj.steps[:done].tolist()
        out["newton_solves"] = traj.solves[:done].tolist()
        out["newton_total"] = traj.newton_total[:done].tolist()
        out["newton_max"] = traj.newton_max[:done].tolist()
        out["pcg_total"] = traj.pcg_total[:done].tolist()
        if self.input.check_intersections:
            out["intersections"] = traj.intersections[:done].tolist()
            out["inverted"] = traj.inverted[:done].tolist()
        return out
