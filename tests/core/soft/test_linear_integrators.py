"""Implicit integrators on linear oscillators against analytic solutions (seed 003 §3.6 item 5)."""

import numpy as np
import pytest
from contact_lab.core.linalg import dense_to_csr
from contact_lab.core.soft.integrators import (
    LinearSecondOrderSystem,
    backward_euler_step,
    dense_solve,
    integrate_linear,
    newton_solve,
)

OMEGA = 2.0
"""Angular frequency of the scalar oscillator [1/s]."""


def scalar_oscillator():
    """``x'' = -omega^2 x`` with unit mass."""
    return LinearSecondOrderSystem(np.eye(1), np.zeros((1, 1)), np.eye(1) * OMEGA**2)


def spring_chain(n=8, sparse=False):
    """n unequal masses [kg] in a line, joined by unequal springs [N/m], both ends tied to walls."""
    rng = np.random.default_rng(11)
    masses = 0.5 + rng.random(n)
    k = 10.0 + 20.0 * rng.random(n + 1)
    K = np.diag(k[:-1] + k[1:]) - np.diag(k[1:-1], 1) - np.diag(k[1:-1], -1)
    M = np.diag(masses)
    D = np.zeros((n, n))
    if sparse:
        # One shared pattern (the tridiagonal one of K) for M, D and K.
        pattern = (K != 0.0) | np.eye(n, dtype=bool)
        triples = []
        for A in (M, D, K):
            indptr, indices, _ = dense_to_csr(pattern.astype(float))
            rows = np.repeat(np.arange(n), np.diff(indptr))
            triples.append((indptr, indices, A[rows, indices].copy()))
        return LinearSecondOrderSystem(*triples)
    return LinearSecondOrderSystem(M, D, K)


def modes(system):
    """Generalised eigenpairs ``K phi = omega^2 M phi`` with ``Phi^T M Phi = I``: (omega (n,), Phi (n, n))."""
    M, K = system.mass, system.stiffness
    L = np.linalg.cholesky(M)
    Linv = np.linalg.inv(L)
    w2, Y = np.linalg.eigh(Linv @ K @ Linv.T)
    return np.sqrt(w2), Linv.T @ Y


def modal_energies(system, x, v):
    """Energy per mode ``(p_i^2 + omega_i^2 q_i^2)/2`` with ``q = Phi^T M x``, ``p = Phi^T M v``."""
    omega, Phi = modes(system)
    q = Phi.T @ system.mass @ x
    p = Phi.T @ system.mass @ v
    return 0.5 * (p**2 + omega**2 * q**2)


def exact_solution(system, x0, v0, t):
    """Analytic ``x(t)`` of the undamped system by modal superposition."""
    omega, Phi = modes(system)
    q0 = Phi.T @ system.mass @ x0
    p0 = Phi.T @ system.mass @ v0
    return Phi @ (q0 * np.cos(omega * t) + p0 / omega * np.sin(omega * t))


def initial_state(n):
    rng = np.random.default_rng(12)
    return rng.standard_normal(n), rng.standard_normal(n)


def energy_history(system, xs, vs):
    return np.array([system.energy(x, v) for x, v in zip(xs, vs, strict=True)])


@pytest.mark.parametrize("name", ["scalar", "chain", "chain_csr"])
def test_trapezoidal_conserves_quadratic_energy(name):
    """Keep E = v^T M v/2 + x^T K x/2 constant to 1e-12 relative over 1000 TR steps at omega_max h = 0.5."""
    system = {"scalar": scalar_oscillator, "chain": spring_chain, "chain_csr": lambda: spring_chain(sparse=True)}[
        name
    ]()
    omega_max = OMEGA if name == "scalar" else modes(spring_chain())[0].max()
    h = 0.5 / omega_max
    x0, v0 = initial_state(system.size)
    xs, vs = integrate_linear(system, x0, v0, h, 1000, "tr")
    energy = energy_history(system, xs, vs)
    drift = np.abs(energy / energy[0] - 1.0).max()
    print(f"\n[TR {name}] h={h:.4g} max relative energy drift over 1000 steps = {drift:.2e}")
    assert np.abs(xs[-1]).max() > 0.01  # still oscillating, not trivially zero
    assert drift <= 1e-12


def test_backward_euler_energy_factor_scalar():
    """Multiply the energy by exactly 1/(1 + omega^2 h^2) per BE step (omega h = 0.5)."""
    system = scalar_oscillator()
    h = 0.5 / OMEGA
    xs, vs = integrate_linear(system, np.array([1.0]), np.array([0.3]), h, 1000, "be")
    energy = energy_history(system, xs, vs)
    ratio = energy[1:] / energy[:-1]
    error = np.abs(ratio * (1.0 + (OMEGA * h) ** 2) - 1.0).max()
    print(f"\n[BE scalar] per-step factor {ratio[0]:.15f} (expected 0.8), max relative error {error:.2e}")
    assert energy[-1] > 0.0
    assert error <= 1e-12


def test_backward_euler_energy_factor_per_mode_chain():
    """Multiply each mode's energy by 1/(1 + omega_i^2 h^2) per BE step on the spring chain."""
    system = spring_chain()
    omega, _ = modes(system)
    h = 0.5 / omega.max()
    x0, v0 = initial_state(system.size)
    xs, vs = integrate_linear(system, x0, v0, h, 20, "be")
    errors = []
    for k in range(20):
        before = modal_energies(system, xs[k], vs[k])
        after = modal_energies(system, xs[k + 1], vs[k + 1])
        errors.append(np.abs(after / before * (1.0 + omega**2 * h**2) - 1.0).max())
    print(
        f"\n[BE chain] omega h in [{omega.min() * h:.3f}, 0.5], max relative error of modal factors {max(errors):.2e}"
    )
    assert max(errors) <= 1e-12


def convergence(system, method, h0, levels=4, t_end=1.0):
    """Position errors at ``t_end`` against the analytic solution for h0, h0/2, ...; returns (errors, rates)."""
    x0, v0 = initial_state(system.size)
    exact = exact_solution(system, x0, v0, t_end)
    errors = []
    for level in range(levels):
        steps = round(t_end / h0) * 2**level
        xs, _ = integrate_linear(system, x0, v0, t_end / steps, steps, method)
        errors.append(np.abs(xs[-1] - exact).max())
    errors = np.array(errors)
    return errors, np.log2(errors[:-1] / errors[1:])


@pytest.mark.parametrize(
    "method, low, high",
    [("be", 0.9, 1.1), ("bdf2", 1.9, 2.1), ("tr", 1.9, 2.1), ("sdirk2", 1.9, 2.1)],
)
@pytest.mark.parametrize("name", ["scalar", "chain"])
def test_convergence_order(method, low, high, name):
    """Measure the position-error rate at t = 1 over h, h/2, h/4, h/8: BE first order, BDF2/TR/SDIRK2 second."""
    if name == "scalar":
        system, h0 = scalar_oscillator(), 0.025  # omega h = 0.05
    else:
        system = spring_chain()
        h0 = 1.0 / round(1.0 / (0.025 / modes(system)[0].max()))  # omega_max h ~ 0.025
    errors, rates = convergence(system, method, h0)
    print(
        f"\n[{method} {name}] h0={h0:.4g} errors={np.array2string(errors, precision=3)} "
        f"rates={np.array2string(rates, precision=4)}"
    )
    assert errors[-1] > 1e-13  # errors are truncation errors, not round-off
    assert np.all((rates >= low) & (rates <= high)), rates


def test_bdf2_dissipates_far_less_than_backward_euler():
    """After 100 steps at omega h = 0.5, BDF2 loses energy but far less than BE; SDIRK2 less still; TR none."""
    system = scalar_oscillator()
    h = 0.5 / OMEGA
    x0, v0 = np.array([1.0]), np.array([0.0])
    e0 = system.energy(x0, v0)
    final = {}
    for method in ("be", "bdf2", "sdirk2", "tr"):
        xs, vs = integrate_linear(system, x0, v0, h, 100, method)
        final[method] = system.energy(xs[-1], vs[-1]) / e0
    print("\n[energy after 100 steps, omega h = 0.5] " + ", ".join(f"{m}={e:.3e}" for m, e in final.items()))
    assert final["be"] == pytest.approx(0.8**100, rel=1e-10)
    assert 0.0 < final["bdf2"] < 1.0 and 0.0 < final["sdirk2"] < 1.0
    # log-energy decay (the numerical damping) of BDF2 is under a tenth of BE's
    assert np.log(final["bdf2"]) > 0.1 * np.log(final["be"])
    assert final["sdirk2"] > final["bdf2"]
    assert final["tr"] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("method", ["be", "tr", "bdf2", "sdirk2"])
def test_dense_and_csr_systems_agree(method):
    """Run the chain with dense matrices and with CSR + PCG: same trajectory to 1e-10."""
    x0, v0 = initial_state(8)
    dense, sparse = spring_chain(), spring_chain(sparse=True)
    h = 0.5 / modes(dense)[0].max()
    xd, vd = integrate_linear(dense, x0, v0, h, 50, method)
    xs, vs = integrate_linear(sparse, x0, v0, h, 50, method)
    scale = np.abs(xd).max() + np.abs(vd).max()
    assert np.abs(xd - xs).max() <= 1e-10 * scale
    assert np.abs(vd - vs).max() <= 1e-10 * scale


def test_dense_solve_matches_numpy():
    """Solve random nonsymmetric systems (pivoting needed) with the dense kernel and match numpy.linalg.solve."""
    rng = np.random.default_rng(13)
    A = rng.standard_normal((30, 30))
    A[0, 0] = 0.0  # forces a row swap at the first pivot
    b = rng.standard_normal(30)
    x = np.empty(30)
    dense_solve(A, b, x)
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-10, atol=1e-12)


def test_newton_reproduces_linear_backward_euler():
    """Solve the BE momentum residual r(v) = M(v - v^n) + h(K(x^n + h v) + D v) by Newton: one step, same answer."""
    system = spring_chain()
    M, D, K = system.mass, system.damping + 0.3 * np.eye(8), system.stiffness
    system = LinearSecondOrderSystem(M, D, K)
    x, v = initial_state(8)
    h = 0.01
    J = M + h * D + h * h * K

    def residual(u):
        return M @ (u - v) + h * (K @ (x + h * u) + D @ u)

    result = newton_solve(residual, lambda u, r: np.linalg.solve(J, -r), v, tol=1e-12, max_iter=5)
    _, v_ref = backward_euler_step(system, x, v, h)
    assert result.converged and result.iterations == 1
    np.testing.assert_allclose(result.x, v_ref, rtol=1e-12, atol=1e-12)


def test_newton_converges_on_stiff_nonlinear_backward_euler_step():
    """Take a large BE step of a hardening (Duffing) spring chain: Newton converges to a residual below 1e-11."""
    system = spring_chain()
    M, K = system.mass, system.stiffness
    cubic = 5.0e3  # [N/m^3] hardening coefficient on every mass
    x, v = initial_state(8)
    x, v = 2.0 * x, 20.0 * v
    h = 0.05

    def residual(u):
        y = x + h * u
        return M @ (u - v) + h * (K @ y + cubic * y**3)

    def jacobian_solve(u, r):
        y = x + h * u
        J = M + h * h * (K + np.diag(3.0 * cubic * y**2))
        return np.linalg.solve(J, -r)

    result = newton_solve(residual, jacobian_solve, v, tol=1e-11, max_iter=50)
    print(f"\n[Newton Duffing BE] iterations={result.iterations} residual={result.residual_norm:.2e}")
    assert result.converged and result.residual_norm <= 1e-11
    assert result.iterations <= 25


def test_newton_backtracking_rescues_divergent_newton():
    """Solve atan(x) = 0 from x0 = 10, where undamped Newton diverges; report non-convergence when capped."""
    residual = np.arctan

    def jacobian_solve(x, r):
        return -r * (1.0 + x**2)

    result = newton_solve(residual, jacobian_solve, np.array([10.0]), tol=1e-12, max_iter=50)
    assert result.converged and abs(result.x[0]) <= 1e-12
    # Undamped Newton from the same start goes to infinity: the backtracking is what helps.
    x = np.array([10.0])
    for _ in range(3):
        x = x + jacobian_solve(x, residual(x))
    assert abs(x[0]) > 1e3
    capped = newton_solve(residual, jacobian_solve, np.array([10.0]), tol=1e-12, max_iter=2)
    assert not capped.converged and capped.iterations == 2
