"""The soft world's Newton matrix work: the Rayleigh damping assembled once per step, the cached CSR part of the
preconditioner, and the modified Newton that keeps the start-of-step tangent while it converges.

References: the per-tet damping sum, the preconditioner built from scratch, the analytic backward Euler fall, and
the same steps solved with a fresh tangent at every iteration (full Newton).
"""

import numpy as np
import pytest
from contact_lab.core.enums import ShapeType
from contact_lab.core.fem.primitives import box_tet_mesh
from contact_lab.core.fem.world import ColliderKind, SoftWorldBuilder
from contact_lab.core.soft import world_solver
from contact_lab.core.soft.frame_loop import SoftSettings, iter_simulate_soft
from contact_lab.core.soft.kernels_operator import build_group_preconditioner, build_group_preconditioner_from
from contact_lab.core.soft.kernels_world import damping_csr_energy_gradient, damping_energy_gradient
from contact_lab.core.soft.world_solver import SoftWorldSolver

H = 1.0 / 48.0


def _jelly_on_ground(*, height=0.0005, damping=0.02, box=False):
    """A 10 cm cube of 3^3 cells (Flesh-like, damped) ``height`` above a plane, optionally beside a dynamic box."""
    b = SoftWorldBuilder()
    V, T = box_tet_mesh((3, 3, 3), np.array([-0.05, -0.05, height]), np.array([0.05, 0.05, height + 0.1]))
    b.add_soft_body(V, T, density=1050.0, youngs_modulus=1e5, poisson_ratio=0.45, damping=damping, friction=0.5)
    b.add_collider(ShapeType.PLANE, kind=ColliderKind.STATIC, friction=0.5)
    if box:
        b.add_collider(ShapeType.BOX, kind=ColliderKind.DYNAMIC, half_extents=(0.03, 0.03, 0.03), mass=0.2,
                       position=(0.2, 0.0, 0.0301))  # fmt: skip
    return b.finalize()


def test_damping_matrix_assembled_once_equals_the_per_tet_sum():
    """``1/2 dx^T D dx`` and ``D dx`` from the step's assembled damping matrix equal the per-tet sums over the
    projected tangents at x^n (relative 1e-12), for random end positions."""
    world = _jelly_on_ground()
    solver = SoftWorldSolver(world)
    state = world.state()
    rng = np.random.default_rng(4)
    state.x += 1e-3 * rng.standard_normal(state.x.shape)  # a deformed start: K^n is not the rest tangent
    solver.begin_step(state, H)
    pat = solver.pattern
    for _ in range(3):
        x = state.x + 1e-3 * rng.standard_normal(state.x.shape)
        g_csr = np.zeros_like(x)
        g_tet = np.zeros_like(x)
        e_csr = damping_csr_energy_gradient(pat.indptr, pat.indices, solver._damp_data, x, solver._x_base, g_csr)
        e_tet = damping_energy_gradient(x, solver._x_base, world.tet_indices, solver._start_hess, solver._damp_scale,
                                        g_tet)  # fmt: skip
        assert e_tet > 0.0
        assert e_csr == pytest.approx(e_tet, rel=1e-12)
        np.testing.assert_allclose(g_csr, g_tet, rtol=1e-12, atol=1e-12 * np.abs(g_tet).max())


def test_cached_preconditioner_blocks_give_the_preconditioner_built_from_scratch():
    """With contact elements and a dynamic box (12x12 group), the preconditioner from the cached CSR blocks is the
    one built from the CSR matrix directly, bit for bit."""
    world = _jelly_on_ground(box=True)
    solver = SoftWorldSolver(world)
    state = world.state()
    solver.begin_step(state, H)
    v = solver._v_pred.copy()
    v[:, 2] -= 0.05  # into the contact layer
    solver._residual(v, H, True, False)
    assert solver.el_count > 0 and np.any(solver.el_stiff[: solver.el_count] > 0.0)
    csr, _ = solver._operator()
    node_group, group_nodes, group_size = solver.node_group, solver.group_nodes, solver.group_size
    terms = solver._terms()
    offset = solver._group_layout[2]
    direct = np.zeros_like(solver._packed)
    cached = np.zeros_like(solver._packed)
    build_group_preconditioner(csr, terms, solver._beta**2, node_group, group_nodes, group_size, offset, direct)
    build_group_preconditioner_from(solver._matrix_blocks, terms, solver._beta**2, node_group, group_nodes, group_size,
                                    offset, solver._block_work, cached)  # fmt: skip
    assert np.any(group_size == 4)
    assert cached.tobytes() == direct.tobytes()


def test_free_fall_takes_one_tangent_per_step():
    """Nothing deforms a falling jelly: every step follows backward Euler (v = v^n + h g) with the start-of-step
    tangent alone (one evaluation per step, no refresh)."""
    world = _jelly_on_ground(height=1.0)
    state = world.state()
    frames = 5
    hessians = []
    for frame, state in iter_simulate_soft(world, frame_count=frames, fps=24.0, settings=SoftSettings(substeps=2)):
        if frame:
            hessians.append(state.stats.hessian_evaluations)
            assert state.stats.converged and state.stats.newton_iterations >= 1
    n = 2 * (frames - 1)
    expected_v = n * H * world.gravity
    np.testing.assert_allclose(state.v, np.broadcast_to(expected_v, state.v.shape), atol=1e-6)
    np.testing.assert_allclose(state.x - world.node_rest, np.broadcast_to(H * H * n * (n + 1) / 2 * world.gravity,
                               state.x.shape), atol=1e-8)  # fmt: skip
    assert hessians == [1] * (frames - 1)


def _run(world, steps, **settings):
    """``steps`` solver steps of ``H`` from rest; returns (state, tangents evaluated in all steps)."""
    solver = SoftWorldSolver(world, SoftSettings(**settings))
    state = world.state()
    hessians = 0
    for _ in range(steps):
        state.stats = solver.step(state, state, H)
        hessians += state.stats.hessian_evaluations
    return state, hessians


def test_modified_newton_lands_where_full_newton_does(monkeypatch):
    """A damped jelly dropped onto the ground with friction: the modified Newton (start-of-step tangent, refreshed
    only when convergence slows) ends where full Newton (a fresh tangent at every iteration) does, within what
    Newton's tolerance allows, and it evaluates fewer tangents."""
    steps = 24
    modified, hessians_modified = _run(_jelly_on_ground(height=0.01), steps, residual_tolerance=1e-9)
    monkeypatch.setattr(world_solver, "REFRESH_RATIO", 0.0)  # refresh at every iteration after the first
    full, hessians_full = _run(_jelly_on_ground(height=0.01), steps, residual_tolerance=1e-9)
    assert modified.stats.contact_count > 0
    np.testing.assert_allclose(modified.x, full.x, atol=1e-7)
    np.testing.assert_allclose(modified.v, full.v, atol=1e-5)
    assert hessians_modified < 0.8 * hessians_full
