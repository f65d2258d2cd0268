"""The one loop over frames and substeps.

:func:`iter_simulate` is a generator that yields after every output frame, so a
Blender operator can show progress and cancel, and tests can consume it without
Blender. :func:`simulate` runs it to the end.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass

import numpy as np

from ..enums import SolverStatus
from ..errors import DivergenceError
from ..math.quat import quat_slerp
from ..stop import StopRequest, check_stop
from .collision.pipeline import CollisionPipeline
from .integrate import drift_to_midpoint
from .model import Model
from .settings import RigidSettings, settings_from_keywords
from .sleeping import freeze_sleeping, update_sleep
from .solvers import make_solver
from .state import State
from .trajectory import Trajectory


@dataclass
class KinematicTrack:
    """Prescribed poses of kinematic bodies, sampled once per output frame.

    Between frames the position is interpolated linearly and the orientation by slerp.
    """

    body_index: np.ndarray
    """Kinematic body indices, shape (K,), int."""
    pos: np.ndarray
    """Positions [m], shape (frame_count, K, 3)."""
    quat: np.ndarray
    """Orientations (wxyz), shape (frame_count, K, 4)."""


def _set_kinematic_targets(control, track: KinematicTrack, frame: int, alpha: float) -> None:
    """Targets at ``frame + alpha`` (0 < alpha <= 1) into ``control``."""
    p0, p1 = track.pos[frame], track.pos[frame + 1]
    q0, q1 = track.quat[frame], track.quat[frame + 1]
    for k, b in enumerate(track.body_index):
        control.body_target_pos[b] = (1.0 - alpha) * p0[k] + alpha * p1[k]
        control.body_target_quat[b] = quat_slerp(q0[k], q1[k], alpha)


def iter_simulate(
    model: Model,
    *,
    frame_count: int,
    fps: float = 24.0,
    settings: RigidSettings | None = None,
    kinematic_track: KinematicTrack | None = None,
    stop: StopRequest | None = None,
    on_step: Callable | None = None,
    **keywords,
) -> Generator[tuple[int, Trajectory], None, None]:
    """Simulate ``frame_count - 1`` frames after the initial one; yield ``(frame, trajectory)`` per frame.

    Args:
        model: the scene.
        frame_count: number of output frames including the initial state (frame 0).
        fps: output frame rate [1/s]; the time step is ``1 / (fps * settings.substeps)`` [s].
        settings: the solver settings (default ``RigidSettings()``).
        kinematic_track: poses of kinematic bodies per frame (None: they stay where they are). The soft and IPC
            engines take their tracks as dicts keyed by body or collider; a rigid scene keeps one object for all
            its kinematic bodies, as the add-on and the scripts build it.
        stop: checked before every substep; once set, the loop raises
            :class:`~contact_lab.core.stop.SimulationStoppedError`.
        on_step: called as ``on_step(frame, substep, solver, contacts)`` after each step from output frame
            ``frame`` (its ``substep``-th), before anything else reads the solver (for a look at the step's
            contact problem, :meth:`~.solvers.base.SolverBase.local_problem`).
        keywords: the older form, instead of ``settings``: its fields by name (``substeps=8, solver="PGS"``),
            any other keyword a solver option. Both forms together are a TypeError.

    Yields:
        ``(frame, trajectory)`` after frame ``frame`` was recorded; frame 0 is yielded first.
        The trajectory is filled in place; after the last yield it is complete.
    """
    settings = settings_from_keywords(settings, keywords, "iter_simulate")
    substeps = settings.substeps
    _check_arguments(frame_count, fps, kinematic_track)
    dt = 1.0 / (fps * substeps)
    step_solver = make_solver(
        model, settings.solver, iterations=settings.iterations, tolerance=settings.tolerance,
        **settings.solver_options,
    )  # fmt: skip
    pipeline = CollisionPipeline(model)
    contacts = model.contacts()
    control = model.control()
    state_0, state_1 = model.state(), model.state()
    midpoint = model.state() if settings.time_stepping == "MOREAU" else None
    if kinematic_track is not None:  # kinematic bodies start where their track does
        state_0.body_pos[kinematic_track.body_index] = kinematic_track.pos[0]
        state_0.body_quat[kinematic_track.body_index] = kinematic_track.quat[0]
    rest = _Sleep(model.body_count, settings) if settings.sleeping else None
    history = settings.merit_history and step_solver.sweeps_contacts
    traj = Trajectory(frame_count, model.body_count, model.joint_count, step_solver.iterations if history else 0)
    traj.record(0, state_0)
    yield 0, traj
    for frame in range(frame_count - 1):
        for sub in range(substeps):
            check_stop(stop)
            if kinematic_track is not None:
                _set_kinematic_targets(control, kinematic_track, frame, (sub + 1) / substeps)
            start, horizon = _step_start(model, state_0, control, midpoint, dt)
            pipeline.collide(start, contacts, horizon)
            step_solver.record_merit_history = history and sub == substeps - 1
            if rest is not None:
                rest.update(model, state_0, contacts, dt, step_solver.joints)
            step_solver.step(start, state_1, control, contacts, dt, horizon)
            if on_step is not None:
                on_step(frame, sub, step_solver, contacts)
            if rest is not None and rest.count:
                rest.freeze(state_0, state_1)
            state_0, state_1 = state_1, state_0
            _record_substep(traj, frame + 1, contacts, step_solver)
            if sub == substeps - 1:  # one sample per frame: the merit reads every contact once more
                traj.solver_merit[frame + 1] = step_solver.contact_merit(contacts)
                merits = step_solver.last_merit_history
                traj.solver_merit_history[frame + 1, : merits.shape[0]] = merits
            _check_finite(model, state_0, frame + 1)
        traj.sleeping_bodies[frame + 1] = rest.count if rest is not None else 0
        traj.record(frame + 1, state_0)
        yield frame + 1, traj


def _step_start(model: Model, state: State, control, midpoint: State | None, dt: float) -> tuple[State, float]:
    """Where a step starts and how long its new velocities move the poses: ``(state, dt)`` semi-implicit, or the
    Moreau mid-point ``(q + (h/2) u, dt / 2)`` written into ``midpoint`` (:func:`.integrate.drift_to_midpoint`)."""
    if midpoint is None:
        return state, dt
    drift_to_midpoint(
        model.body_kind, state.body_pos, state.body_quat, state.body_vel, state.body_omega, control.body_target_pos,
        control.body_target_quat, 0.5 * dt, midpoint.body_pos, midpoint.body_quat, midpoint.body_vel,
        midpoint.body_omega,
    )  # fmt: skip
    return midpoint, 0.5 * dt


class _Sleep:
    """The sleeping islands' bookkeeping (:mod:`.sleeping`): per body, how long its island has been at rest."""

    def __init__(self, body_count: int, settings: RigidSettings):
        self.time = settings.sleep_time
        self.linear_speed, self.angular_speed = settings.sleep_linear_speed, settings.sleep_angular_speed
        self.rest_time, self.island = np.zeros(body_count), np.zeros(body_count, np.int64)
        self.island_rest, self.asleep = np.zeros(body_count), np.zeros(body_count, np.bool_)
        self.count = 0
        """Bodies asleep after the last :meth:`update`."""

    def update(self, model: Model, state, contacts, dt: float, joints=None) -> None:
        body0, body1, count = contacts.contact_body0, contacts.contact_body1, contacts.contact_count
        if joints is not None:  # an unbroken joint between two bodies ties their islands as a contact does
            body0, body1, count = _joined_pairs(model, joints.broken, body0, body1, count)
        self.count = update_sleep(
            model.body_kind, state.body_vel, state.body_omega, body0, body1, count, self.linear_speed,
            self.angular_speed, self.time, dt, self.rest_time, self.island, self.island_rest, self.asleep,
        )  # fmt: skip

    def freeze(self, state_0, state_1) -> None:
        """Sleeping bodies keep their pose of ``state_0`` in ``state_1``, at rest."""
        freeze_sleeping(
            self.asleep, state_0.body_pos, state_0.body_quat, state_1.body_pos, state_1.body_quat,
            state_1.body_vel, state_1.body_omega,
        )  # fmt: skip


def _joined_pairs(model: Model, broken: np.ndarray, body0: np.ndarray, body1: np.ndarray, count: int):
    """The contacts' body pairs followed by those of the unbroken joints between two bodies (int32, as the
    contacts'), and their count."""
    pairs = model.joint_body[~broken & (model.joint_body.min(axis=1) >= 0)].astype(np.int32)
    return (np.concatenate([body0[:count], pairs[:, 0]]), np.concatenate([body1[:count], pairs[:, 1]]),
            count + pairs.shape[0])  # fmt: skip


def _check_arguments(frame_count: int, fps: float, kinematic_track: KinematicTrack | None) -> None:
    if frame_count < 1:
        raise ValueError("frame_count must be at least 1")
    if fps <= 0.0:
        raise ValueError("fps must be positive")
    if kinematic_track is not None and kinematic_track.pos.shape[0] < frame_count:
        raise ValueError("the kinematic track is shorter than the simulated frame range")


def _record_substep(traj: Trajectory, frame: int, contacts, step_solver) -> None:
    """Fold one substep's contact and solver statistics into output frame ``frame`` (maxima, sums)."""
    n = contacts.contact_count
    traj.contact_count[frame] = max(traj.contact_count[frame], n)
    traj.contact_overflow[frame] += contacts.contact_overflow
    traj.solver_iterations[frame] = max(traj.solver_iterations[frame], step_solver.last_iterations)
    traj.solver_residual[frame] = max(traj.solver_residual[frame], step_solver.last_residual)
    traj.solver_rejections[frame] += step_solver.last_rejections
    capped = step_solver.last_status == SolverStatus.MAX_ITERATIONS
    traj.solver_capped[frame] += capped
    traj.converged[frame] &= not capped
    joints = step_solver.joints
    if joints is not None:
        traj.joint_error_linear[frame] = max(traj.joint_error_linear[frame], float(joints.error[0]))
        traj.joint_error_angular[frame] = max(traj.joint_error_angular[frame], float(joints.error[1]))
        traj.joint_impulse[frame] = max(traj.joint_impulse[frame], float(np.abs(joints.impulse).max()))
        for j in joints.last_broken:
            traj.joint_broken_frame[j] = frame
    if n:
        traj.max_penetration[frame] = max(traj.max_penetration[frame], -float(contacts.contact_gap[:n].min()))


def _check_finite(model: Model, state, frame: int) -> None:
    """Raise :class:`DivergenceError` naming the bodies whose pose or velocity is no longer finite."""
    finite = (
        np.isfinite(state.body_pos).all(axis=1)
        & np.isfinite(state.body_quat).all(axis=1)
        & np.isfinite(state.body_vel).all(axis=1)
        & np.isfinite(state.body_omega).all(axis=1)
    )
    if not finite.all():
        bad = [int(i) for i in np.flatnonzero(~finite)]
        raise DivergenceError(frame, bad, [model.body_label[i] for i in bad])


def simulate(model: Model, **kwargs) -> Trajectory:
    """Run :func:`iter_simulate` (same arguments) to the end and return the complete trajectory."""
    result = None
    for _, result in iter_simulate(model, **kwargs):  # noqa: B007 (the last yield is the result)
        pass
    return result
