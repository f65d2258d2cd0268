"""Baraff's 3D static-friction pivoting in Coulomb's cone (``friction_pivoting(..., cone=True)``, seed 002 §2.3 "3D").

References: the seed's conditions (eqs. 15, 16 and 21: normal complementarity, ``|f_T| <= μ f_n``, ``f_T · a_T <= 0``
and saturation wherever a contact accelerates along the ground), tested as conditions because the seed's answer
depends on the tangent frame; the planar method where the second tangent is idle; a particle on an incline, whose
exact answer the method must give when the slope lies along a tangent axis.
"""

import math

import numpy as np
import pytest
from contact_lab.core.contact_solvers.friction_pivoting import CONE_UNMET, PIVOT_LIMIT, SOLVED, friction_pivoting

G = 9.81


def _cone_conditions(f, a, mu, tol=1e-8):
    """Eqs. 15, 16 and 21 for rows ``[n, t1, t2]`` per contact; True when all hold to ``tol``."""
    F, Acc = f.reshape(-1, 3), a.reshape(-1, 3)
    fn, an, ft, at = F[:, 0], Acc[:, 0], F[:, 1:], Acc[:, 1:]
    normal = fn.min() > -tol and an.min() > -tol and np.abs(fn * an).max() < tol
    size = np.linalg.norm(ft, axis=1)
    inside = np.all(size <= mu * fn + tol)
    opposed = np.all(np.einsum("ij,ij->i", ft, at) <= tol)  # eq. 21: friction never helps the acceleration
    moving = np.linalg.norm(at, axis=1) > 1e-7
    saturated = np.all(np.abs(size[moving] - mu[moving] * fn[moving]) < tol)
    return bool(normal and inside and opposed and saturated)


def _contacts_problem(seed, m):
    """``m`` contacts on two random bodies pressed together by a random load: ``A = J M⁻¹ Jᵀ`` (3m, 3m), ``b``."""
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(3 * m, 12))
    A = J @ J.T / 12.0 + 1e-3 * np.eye(3 * m)
    b = J @ rng.normal(size=12)
    b[0::3] = -np.abs(b[0::3]) - 0.1  # pressed into the ground
    return A, b


def _turned(A, b, m, seed):
    """The same problem with every contact's tangent frame turned by a random angle."""
    turn = np.eye(3 * m)
    for c, angle in enumerate(np.random.default_rng(seed + 1000).uniform(0, 2 * np.pi, m)):
        turn[3 * c + 1 : 3 * c + 3, 3 * c + 1 : 3 * c + 3] = [[math.cos(angle), -math.sin(angle)],
                                                              [math.sin(angle), math.cos(angle)]]  # fmt: skip
    return turn.T @ A @ turn, turn.T @ b


@pytest.mark.parametrize("mu, least_share", [(0.2, 1.0), (0.6, 1.0), (1.2, 0.95)])
def test_random_problems_meet_the_seeds_3d_conditions(mu, least_share):
    """120 problems of 1–4 contacts, each also with every contact's tangent frame turned (its forces may differ):
    every answer called solved meets eqs. 15, 16 and 21 to 1e-8; all are solved at μ 0.2 and 0.6, and at μ 1.2 at
    least 95 % (the seed proves no termination; the rest end at the pivot limit or say the cone is not met)."""
    solved = 0
    for seed in range(120):
        m = 1 + seed % 4
        A, b = _contacts_problem(seed, m)
        mus = np.full(m, mu)
        for problem in ((A, b), _turned(A, b, m, seed)):
            result = friction_pivoting(*problem, mus, 3, cone=True)
            np.testing.assert_allclose(result.a, problem[0] @ result.f + problem[1], atol=1e-9)
            if result.status == SOLVED:
                solved += 1
                assert _cone_conditions(result.f, result.a, mus), seed
            else:
                assert result.status in (PIVOT_LIMIT, CONE_UNMET), (seed, result.status)
    assert solved >= least_share * 240, solved


def test_friction_along_one_axis_is_the_plane_methods():
    """Problems whose second tangent is idle (no coupling, no load): the cone's forces are those of the planar
    method (tested against the seed's cases in test_friction_pivoting.py) to rounding, sticking or sliding."""
    for seed in range(60):
        rng = np.random.default_rng(seed)
        m = 1 + seed % 3
        J = rng.normal(size=(2 * m, 2 * m + 3))
        A2 = J @ J.T / J.shape[1] + 0.1 * np.eye(2 * m)
        b2 = rng.normal(size=2 * m)
        b2[0::2] = -np.abs(b2[0::2]) - 0.1
        mu = np.full(m, 0.4)
        plane = friction_pivoting(A2, b2, mu, 2)
        keep = np.sort(np.concatenate([3 * np.arange(m), 3 * np.arange(m) + 1]))
        A3, b3 = np.eye(3 * m), np.zeros(3 * m)
        A3[np.ix_(keep, keep)], b3[keep] = A2, b2
        cone = friction_pivoting(A3, b3, mu, 3, cone=True)
        assert plane.status == SOLVED and cone.status == SOLVED, seed
        np.testing.assert_allclose(cone.f[keep], plane.f, rtol=1e-9, atol=1e-10, err_msg=str(seed))
        np.testing.assert_allclose(cone.f[2::3], 0.0, atol=1e-12)


@pytest.mark.parametrize("degrees", [15.0, 40.0])
@pytest.mark.parametrize("heading", [0.0, 35.0])
def test_a_particle_on_an_incline_sticks_or_slides_inside_the_cone(degrees, heading):
    """A unit mass on an incline (μ 0.5, tan 15° < μ < tan 40°), the slope at ``heading`` to the tangent frame's
    first axis. Sticking: friction ``m g sin θ`` up the slope, whatever the frame. Sliding: the friction is on the
    cone, ``|f_T| = μ m g cos θ``; along an axis it is exactly up the slope, ``a = g (sin θ − μ cos θ)`` down it;
    turned, the seed's answer only opposes the acceleration partly, and eq. 21 is what holds."""
    mu, theta, psi = 0.5, math.radians(degrees), math.radians(heading)
    A = np.eye(3)
    down = np.array([math.cos(psi), math.sin(psi)])  # the slope's downhill direction in the tangent frame
    b = np.concatenate([[-G * math.cos(theta)], G * math.sin(theta) * down])
    result = friction_pivoting(A, b, np.array([mu]), 3, cone=True)
    assert result.status == SOLVED and _cone_conditions(result.f, result.a, np.array([mu]))
    f, a = result.f, result.a
    assert f[0] == pytest.approx(G * math.cos(theta), rel=1e-12) and a[0] == pytest.approx(0.0, abs=1e-12)
    if math.tan(theta) <= mu:
        np.testing.assert_allclose(f[1:], -G * math.sin(theta) * down, atol=1e-12)
        np.testing.assert_allclose(a[1:], 0.0, atol=1e-12)
        return
    assert np.linalg.norm(f[1:]) == pytest.approx(mu * G * math.cos(theta), rel=1e-12)
    if heading == 0.0:
        np.testing.assert_allclose(a[1:], G * (math.sin(theta) - mu * math.cos(theta)) * down, atol=1e-12)


def test_the_cone_needs_three_rows_per_contact():
    with pytest.raises(ValueError, match="stride 3"):
        friction_pivoting(np.eye(2), np.zeros(2), np.array([0.5]), 2, cone=True)
