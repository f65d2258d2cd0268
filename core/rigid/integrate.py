"""Semi-implicit Newton–Euler integration of rigid bodies (course §1.2, §1.10.1)."""

import numpy as np

from ..jit import njit_kernel
from ..math.quat import quat_angular_velocity, quat_normalize, quat_slerp, quat_step, quat_to_matrix
from ..math.vec import cross_into, mat3_sandwich, mat3_vec_into


@njit_kernel
def compute_free_velocities(
    body_kind,
    body_inv_mass,
    body_inertia_local,
    body_inv_inertia_local,
    body_linear_damping,
    body_angular_damping,
    body_quat,
    body_vel,
    body_omega,
    body_target_pos,
    body_target_quat,
    body_pos,
    gravity,
    dt,
    kinematic_dt,
    # outputs
    inv_inertia_world,
    vel_free,
    omega_free,
):
    """Velocities at the end of the step without contact impulses: ``u_free = u + h M^-1 f``.

    Dynamic bodies: gravity and the explicit gyroscopic torque ``-w x (I_w w)`` (course eq. 69), then damping as
    Bullet's ``btRigidBody::applyDamping`` does it (so Blender's rigid body damping means the same):
    ``v *= (1 - linear_damping) ** dt``, ``w *= (1 - angular_damping) ** dt`` (damping (nb,) in [0, 1]).
    Kinematic bodies: the velocity that moves them from their pose to the control target in ``kinematic_dt`` (the
    step, or what is left of it when the poses are the mid-point's, :func:`drift_to_midpoint`).
    ``inv_inertia_world`` (nb, 3, 3) [1/(kg·m²)] receives ``R I_body^-1 R^T`` (eq. 66), zero for kinematic bodies.
    """
    R = np.empty((3, 3))
    inertia_world = np.empty((3, 3))
    momentum = np.empty(3)
    gyro = np.empty(3)
    dw = np.empty(3)
    for b in range(body_kind.shape[0]):
        if body_kind[b] != 1:
            for k in range(3):
                vel_free[b, k] = (body_target_pos[b, k] - body_pos[b, k]) / kinematic_dt
            omega_free[b] = quat_angular_velocity(body_quat[b], body_target_quat[b], kinematic_dt)
            inv_inertia_world[b] = 0.0
            continue
        quat_to_matrix(body_quat[b], R)
        mat3_sandwich(R, body_inv_inertia_local[b], inv_inertia_world[b])
        mat3_sandwich(R, body_inertia_local[b], inertia_world)
        w = body_omega[b]
        mat3_vec_into(inertia_world, w, momentum)
        cross_into(w, momentum, gyro)
        mat3_vec_into(inv_inertia_world[b], gyro, dw)
        for k in range(3):
            vel_free[b, k] = body_vel[b, k] + dt * gravity[k]
            omega_free[b, k] = w[k] - dt * dw[k]
        linear = (1.0 - body_linear_damping[b]) ** dt
        angular = (1.0 - body_angular_damping[b]) ** dt
        if linear != 1.0:  # undamped bodies skip the multiply: results stay bit-identical
            for k in range(3):
                vel_free[b, k] *= linear
        if angular != 1.0:
            for k in range(3):
                omega_free[b, k] *= angular


@njit_kernel
def integrate_positions(
    body_kind,
    body_pos,
    body_quat,
    body_vel,
    body_omega,
    body_target_pos,
    body_target_quat,
    pseudo_vel,
    pseudo_omega,
    dt,
    # outputs
    out_pos,
    out_quat,
):
    """``x+ = x + h (v+ + v_p)``, ``Q+ = normalize(Q + h H(Q) (w+ + w_p))`` (course eq. 75); kinematic bodies land on
    their targets. ``pseudo_vel``, ``pseudo_omega`` (nb, 3): the split impulse's position-only velocities
    (:mod:`.position_correction`), zero without it.
    """
    for b in range(body_kind.shape[0]):
        if body_kind[b] != 1:
            out_pos[b] = body_target_pos[b]
            out_quat[b] = quat_normalize(body_target_quat[b])
            continue
        for k in range(3):
            out_pos[b, k] = body_pos[b, k] + dt * (body_vel[b, k] + pseudo_vel[b, k])
        w0 = body_omega[b, 0] + pseudo_omega[b, 0]
        w1 = body_omega[b, 1] + pseudo_omega[b, 1]
        w2 = body_omega[b, 2] + pseudo_omega[b, 2]
        out_quat[b, 0], out_quat[b, 1], out_quat[b, 2], out_quat[b, 3] = quat_step(
            body_quat[b, 0], body_quat[b, 1], body_quat[b, 2], body_quat[b, 3], w0, w1, w2, dt
        )


@njit_kernel
def finish_step(
    body_kind,
    vel_free,
    omega_free,
    dv,
    dw,
    # outputs
    out_vel,
    out_omega,
):
    """``u+ = u_free + M^-1 J^T lambda`` (course eq. 247b); kinematic bodies keep their prescribed velocity."""
    for b in range(body_kind.shape[0]):
        if body_kind[b] == 1:
            for k in range(3):
                out_vel[b, k] = vel_free[b, k] + dv[b, k]
                out_omega[b, k] = omega_free[b, k] + dw[b, k]
        else:
            out_vel[b] = vel_free[b]
            out_omega[b] = omega_free[b]


@njit_kernel
def drift_to_midpoint(body_kind, body_pos, body_quat, body_vel, body_omega, body_target_pos, body_target_quat, half,
                      out_pos, out_quat, out_vel, out_omega):  # fmt: skip
    """The Moreau mid-point ``q^{t+1/2} = q^t + (h/2) H u^t`` (course eq. 246) into the ``out_*`` arrays: dynamic
    bodies drift for ``half`` [s] with their velocities, kinematic bodies go half the way to their targets; the
    velocities are copied (the step's solve starts from ``u^t``)."""
    for b in range(body_kind.shape[0]):
        for k in range(3):
            out_vel[b, k] = body_vel[b, k]
            out_omega[b, k] = body_omega[b, k]
        if body_kind[b] != 1:
            for k in range(3):
                out_pos[b, k] = 0.5 * (body_pos[b, k] + body_target_pos[b, k])
            out_quat[b] = quat_slerp(body_quat[b], body_target_quat[b], 0.5)
            continue
        for k in range(3):
            out_pos[b, k] = body_pos[b, k] + half * body_vel[b, k]
        out_quat[b, 0], out_quat[b, 1], out_quat[b, 2], out_quat[b, 3] = quat_step(
            body_quat[b, 0], body_quat[b, 1], body_quat[b, 2], body_quat[b, 3], body_omega[b, 0], body_omega[b, 1],
            body_omega[b, 2], half)  # fmt: skip
