"""Tet FEM rest shape and hyperelastic materials (stable neo-Hookean, fixed corotated, neo-Hookean).

References: central finite differences of the energy (gradient) and of the gradient (Hessian),
numpy.linalg (inverse, det, SVD, eigh) as brute-force oracles, the isotropic linear-elastic
tangent ``mu (delta + T) + lam tr(x)tr`` for the small-strain limit, and the explicit 9x9 tangent
with its cyclic-Jacobi PSD projection as the reference of the analytic eigensystem.

The log-barrier neo-Hookean is only defined for J > 0 (energy +inf otherwise): the shared
parametrized tests feed it the non-inverted deformations of each list (``admissible``).
"""

import numpy as np
import pytest
from contact_lab.core.fem.materials import (
    WORK_MATRICES,
    MaterialModel,
    deformation_gradient_jacobian,
    eigen_modes,
    elastic_energy,
    elastic_gradient,
    elastic_hessian_blocks,
    elastic_hessian_blocks_jacobi,
    material_eigensystem,
    material_energy,
    pk1_stress,
    pk1_stress_derivative,
    polar_rotation,
    project_psd,
    projected_pk1_stress_derivative,
    scaling_block_factor,
    svd3_rotation_variant,
    symmetric_eigen3,
    symmetric_eigen_jacobi,
    tangent_from_eigensystem,
    tet_gradient_from_stress,
    tet_hessian_from_eigensystem,
    tet_hessian_from_tangent,
    tet_workspace,
)
from contact_lab.core.fem.tet_mesh import (
    compute_rest_shape,
    deformation_gradient,
    lame_parameters,
    lumped_vertex_mass,
)

MATERIALS = [int(MaterialModel.STABLE_NEOHOOKEAN), int(MaterialModel.COROTATED), int(MaterialModel.NEOHOOKEAN)]
NEOHOOKEAN = int(MaterialModel.NEOHOOKEAN)
MU, LAM = lame_parameters(1.0e5, 0.35)  # [Pa]
FD_STEP = 1.0e-6

# Singular values: mild, strongly compressed, near-inverted, inverted, stretched + inverted.
SINGULAR_VALUES = [
    (1.2, 0.9, 0.7),
    (0.3, 0.25, 0.2),
    (1.0, 0.8, 0.05),
    (1.0, 0.9, 0.01),
    (1.0, 1.0, -0.5),
    (1.5, 0.6, -0.2),
    (1.1, 1.1, 1.1),
]


def random_rotation(rng):
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0.0:
        q[:, 0] = -q[:, 0]
    return q


def random_F(rng, sigma):
    return random_rotation(rng) @ np.diag(sigma) @ random_rotation(rng).T


def admissible(material, singular_values):
    """The singular-value triples ``material`` is defined at: all, or J > 0 for the barrier neo-Hookean."""
    if material != NEOHOOKEAN:
        return singular_values
    return [s for s in singular_values if np.prod(s) > 0.0]


def energy_density(F, material, work, mu=MU, lam=LAM):
    return material_energy(np.ascontiguousarray(F), mu, lam, material, work)


def stress(F, material, work, mu=MU, lam=LAM):
    P = np.empty((3, 3))
    pk1_stress(np.ascontiguousarray(F), mu, lam, material, work, P)
    return P


def tangent(F, material, work, mu=MU, lam=LAM):
    C = np.empty((9, 9))
    pk1_stress_derivative(np.ascontiguousarray(F), mu, lam, material, work, C)
    return C


def rel_err(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


def two_tet_mesh():
    vertices = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
    tets = np.array([[0, 1, 2, 3], [1, 2, 3, 4]], dtype=np.int32)
    # make tet 1 positively oriented
    Dm = (vertices[tets[1, 1:]] - vertices[tets[1, 0]]).T
    if np.linalg.det(Dm) < 0:
        tets[1] = tets[1, [0, 2, 1, 3]]
    return vertices, tets


# ------------------------------------------------------------------------------------------
# Rest shape
# ------------------------------------------------------------------------------------------


def test_rest_shape_matches_numpy_on_random_tets():
    rng = np.random.default_rng(1)
    vertices = rng.normal(size=(40, 3))
    tets = []
    while len(tets) < 30:
        t = rng.choice(40, 4, replace=False)
        Dm = (vertices[t[1:]] - vertices[t[0]]).T
        d = np.linalg.det(Dm)
        if abs(d) < 1e-2:
            continue
        if d < 0:
            t[[1, 2]] = t[[2, 1]]
        tets.append(t)
    tets = np.array(tets, dtype=np.int32)
    Dm_inv, volume = compute_rest_shape(vertices, tets)
    Dm = np.stack([(vertices[t[1:]] - vertices[t[0]]).T for t in tets])
    ref_inv = np.linalg.inv(Dm)
    ref_vol = np.linalg.det(Dm) / 6.0
    assert rel_err(Dm_inv, ref_inv) < 1e-12
    assert rel_err(volume, ref_vol) < 1e-12
    assert np.all(volume > 0)


def test_lumped_mass_sums_to_density_times_volume():
    vertices, tets = two_tet_mesh()
    density = 1100.0
    mass = lumped_vertex_mass(vertices, tets, density)
    _, volume = compute_rest_shape(vertices, tets)
    assert mass.shape == (5,)
    assert abs(mass.sum() - density * volume.sum()) < 1e-12 * density * volume.sum()
    assert abs(mass[4] - density * volume[1] / 4.0) < 1e-12


def test_inverted_or_degenerate_rest_tet_raises():
    vertices, tets = two_tet_mesh()
    bad = tets.copy()
    bad[1] = bad[1, [0, 2, 1, 3]]
    with pytest.raises(ValueError, match="rest tet 1 .*inverted"):
        compute_rest_shape(vertices, bad)
    flat = vertices.copy()
    flat[3] = [0.3, 0.3, 0.0]
    with pytest.raises(ValueError, match="rest tet 0 .*degenerate"):
        compute_rest_shape(flat, tets[:1])


def test_lame_parameters_and_deformation_gradient():
    mu, lam = lame_parameters(2.0e6, 0.25)
    assert mu == pytest.approx(2.0e6 / 2.5)
    assert lam == pytest.approx(2.0e6 * 0.25 / (1.25 * 0.5))
    with pytest.raises(ValueError):
        lame_parameters(1.0, 0.5)
    rng = np.random.default_rng(2)
    vertices, tets = two_tet_mesh()
    Dm_inv, _ = compute_rest_shape(vertices, tets)
    x = vertices + 0.2 * rng.normal(size=vertices.shape)
    for t in range(2):
        F = np.empty((3, 3))
        deformation_gradient(x, tets[t], Dm_inv[t], F)
        Ds = (x[tets[t, 1:]] - x[tets[t, 0]]).T
        assert rel_err(F, Ds @ Dm_inv[t]) < 1e-13
        # dF/dx map reproduces F from the stacked nodal coordinates.
        D = np.empty((9, 12))
        deformation_gradient_jacobian(Dm_inv[t], D)
        assert rel_err(D @ x[tets[t]].ravel(), F.ravel()) < 1e-13


# ------------------------------------------------------------------------------------------
# Per-tet energy density, PK1 stress, tangent vs finite differences
# ------------------------------------------------------------------------------------------


def finite_difference_stress_and_tangent(F, material, work):
    """Central differences (step FD_STEP) of the energy density and the stress at F (3, 3): the stress P (9,) and
    the tangent dP/dF (9, 9), column c the derivative along entry c of F (row-major)."""
    P_fd = np.empty(9)
    C_fd = np.empty((9, 9))
    for c in range(9):
        d = np.zeros(9)
        d[c] = FD_STEP
        d = d.reshape(3, 3)
        e_plus = energy_density(F + d, material, work)
        e_minus = energy_density(F - d, material, work)
        P_fd[c] = (e_plus - e_minus) / (2 * FD_STEP)
        C_fd[:, c] = (stress(F + d, material, work) - stress(F - d, material, work)).ravel() / (2 * FD_STEP)
    return P_fd, C_fd


@pytest.mark.parametrize("material", MATERIALS)
def test_stress_and_tangent_match_finite_differences(material):
    rng = np.random.default_rng(10 + material)
    work = tet_workspace()
    worst_p = worst_c = 0.0
    for sigma in admissible(material, SINGULAR_VALUES):
        for _ in range(3):
            F = random_F(rng, sigma)
            P = stress(F, material, work)
            C = tangent(F, material, work)
            P_fd, C_fd = finite_difference_stress_and_tangent(F, material, work)
            worst_p = max(worst_p, rel_err(P.ravel(), P_fd))
            worst_c = max(worst_c, rel_err(C, C_fd))
            assert np.allclose(C, C.T, rtol=0, atol=1e-10 * np.abs(C).max())
    print(f"material {material}: max rel err P {worst_p:.2e}, dP/dF {worst_c:.2e}")
    assert worst_p < 1e-6
    assert worst_c < 1e-6


@pytest.mark.parametrize("material", MATERIALS)
def test_batch_kernels_match_finite_differences_on_two_tet_mesh(material):
    rng = np.random.default_rng(20 + material)
    vertices, tets = two_tet_mesh()
    Dm_inv, volume = compute_rest_shape(vertices, tets)
    x = vertices * np.array([1.0, 0.6, 0.3]) + 0.15 * rng.normal(size=vertices.shape)
    x[4] = x[1] + x[2] + x[3] - 2.2 * x[0]  # push tet 1 far from rest (compressed / sheared)
    n = x.size

    def energy(xf):
        return elastic_energy(xf.reshape(-1, 3), tets, Dm_inv, volume, MU, LAM, material)

    def gradient(xf):
        g = np.empty((len(vertices), 3))
        elastic_gradient(xf.reshape(-1, 3), tets, Dm_inv, volume, MU, LAM, material, g)
        return g.ravel()

    xf = x.ravel().copy()
    g = gradient(xf)
    blocks = np.empty((2, 12, 12))
    elastic_hessian_blocks(x, tets, Dm_inv, volume, MU, LAM, material, False, blocks)
    H = np.zeros((n, n))
    for t in range(2):
        dofs = (3 * tets[t][:, None] + np.arange(3)).ravel()
        H[np.ix_(dofs, dofs)] += blocks[t]
    g_fd = np.empty(n)
    H_fd = np.empty((n, n))
    for c in range(n):
        d = np.zeros(n)
        d[c] = FD_STEP
        g_fd[c] = (energy(xf + d) - energy(xf - d)) / (2 * FD_STEP)
        H_fd[:, c] = (gradient(xf + d) - gradient(xf - d)) / (2 * FD_STEP)
    e_g, e_h = rel_err(g, g_fd), rel_err(H, H_fd)
    print(f"material {material}: two-tet mesh max rel err gradient {e_g:.2e}, Hessian {e_h:.2e}")
    assert e_g < 1e-6
    assert e_h < 1e-6
    # The batch energy is the volume-weighted sum of per-tet densities.
    work = tet_workspace()
    total = 0.0
    for t in range(2):
        F = np.empty((3, 3))
        deformation_gradient(x, tets[t], Dm_inv[t], F)
        total += volume[t] * energy_density(F, material, work)
    assert energy(xf) == pytest.approx(total, rel=1e-14)


# ------------------------------------------------------------------------------------------
# Invariances, rest state, small-strain limit
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("material", MATERIALS)
def test_rotation_invariance(material):
    rng = np.random.default_rng(30 + material)
    work = tet_workspace()
    worst = 0.0
    for sigma in admissible(material, SINGULAR_VALUES):
        F = random_F(rng, sigma)
        psi = energy_density(F, material, work)
        for _ in range(3):
            Q = random_rotation(rng)
            worst = max(worst, abs(energy_density(Q @ F, material, work) - psi) / max(abs(psi), 1.0))
            # P(QF) = Q P(F) (frame indifference of the stress)
            assert rel_err(stress(Q @ F, material, work), Q @ stress(F, material, work)) < 1e-9
    print(f"material {material}: max rel err Psi(QF) - Psi(F): {worst:.2e}")
    assert worst < 1e-10


@pytest.mark.parametrize("material", MATERIALS)
def test_zero_energy_and_stress_at_rest(material):
    work = tet_workspace()
    eye = np.eye(3)
    assert abs(energy_density(eye, material, work)) < 1e-9 * MU
    assert np.abs(stress(eye, material, work)).max() < 1e-9 * MU
    rng = np.random.default_rng(3)
    R = random_rotation(rng)
    assert abs(energy_density(R, material, work)) < 1e-9 * MU
    assert np.abs(stress(R, material, work)).max() < 1e-9 * MU
    vertices, tets = two_tet_mesh()
    Dm_inv, volume = compute_rest_shape(vertices, tets)
    assert abs(elastic_energy(vertices, tets, Dm_inv, volume, MU, LAM, material)) < 1e-9 * MU
    g = np.empty((5, 3))
    elastic_gradient(vertices, tets, Dm_inv, volume, MU, LAM, material, g)
    assert np.abs(g).max() < 1e-9 * MU


@pytest.mark.parametrize("material", MATERIALS)
def test_small_strain_limit_matches_linear_elasticity(material):
    """dP/dF(I) = mu (delta_ik delta_jl + delta_il delta_jk) + lam delta_ij delta_kl."""
    work = tet_workspace()
    eye = np.eye(3)
    C_lin = (
        MU * (np.einsum("ik,jl->ijkl", eye, eye) + np.einsum("il,jk->ijkl", eye, eye))
        + LAM * np.einsum("ij,kl->ijkl", eye, eye)
    ).reshape(9, 9)
    C = tangent(eye, material, work)
    err = rel_err(C, C_lin)
    print(f"material {material}: rest tangent vs linear elasticity rel err {err:.2e}")
    assert err < 1e-12
    # And the nodal Hessian is the linear-elastic stiffness matrix V D^T C_lin D.
    vertices, tets = two_tet_mesh()
    Dm_inv, volume = compute_rest_shape(vertices, tets)
    blocks = np.empty((2, 12, 12))
    elastic_hessian_blocks(vertices, tets, Dm_inv, volume, MU, LAM, material, False, blocks)
    for t in range(2):
        D = np.empty((9, 12))
        deformation_gradient_jacobian(Dm_inv[t], D)
        assert rel_err(blocks[t], volume[t] * D.T @ C_lin @ D) < 1e-12
    # Energy for a tiny strain matches the quadratic form 1/2 eps : C : eps.
    rng = np.random.default_rng(4)
    eps = 1e-6 * rng.normal(size=(3, 3))
    psi = energy_density(eye + eps, material, work)
    assert psi == pytest.approx(0.5 * eps.ravel() @ C_lin @ eps.ravel(), rel=1e-4)


def test_polar_rotation_matches_numpy_svd():
    rng = np.random.default_rng(5)
    work = np.zeros((WORK_MATRICES, 3, 3))
    for sigma in SINGULAR_VALUES:
        F = random_F(rng, sigma)
        R = np.empty((3, 3))
        s = np.empty(3)
        V = np.empty((3, 3))
        polar_rotation(F, R, s, V, work)
        u, sv, vt = np.linalg.svd(F)
        if np.linalg.det(u @ vt) < 0:  # rotation-variant SVD: flip the smallest singular pair
            u[:, 2] = -u[:, 2]
        assert rel_err(R, u @ vt) < 1e-10
        assert abs(np.linalg.det(R) - 1.0) < 1e-12
        S = R.T @ F
        assert np.abs(S - S.T).max() < 1e-12
        assert rel_err(np.sort(s), np.sort(np.array(sigma, dtype=float))) < 1e-10


# ------------------------------------------------------------------------------------------
# Inversion robustness (stable neo-Hookean)
# ------------------------------------------------------------------------------------------


def test_stable_neohookean_is_finite_and_recovers_from_inversion():
    material = int(MaterialModel.STABLE_NEOHOOKEAN)
    work = tet_workspace()
    rest = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    tets = np.array([[0, 1, 2, 3]], dtype=np.int32)
    Dm_inv, volume = compute_rest_shape(rest, tets)
    x = rest.copy()
    x[3] = [0.0, 0.0, -0.5]  # node 3 pushed through the base: J = -0.5
    F = np.empty((3, 3))
    deformation_gradient(x, tets[0], Dm_inv[0], F)
    assert np.linalg.det(F) == pytest.approx(-0.5)
    assert np.isfinite(energy_density(F, material, work))
    assert np.all(np.isfinite(stress(F, material, work)))
    assert np.all(np.isfinite(tangent(F, material, work)))
    assert np.isfinite(energy_density(np.zeros((3, 3)), material, work))  # collapsed to a point

    # Newton on node 3 (nodes 0-2 pinned) with the PSD-projected Hessian and backtracking.
    def energy(x):
        return elastic_energy(x, tets, Dm_inv, volume, MU, LAM, material)

    g = np.empty((4, 3))
    blocks = np.empty((1, 12, 12))
    for _ in range(50):
        elastic_gradient(x, tets, Dm_inv, volume, MU, LAM, material, g)
        if np.linalg.norm(g[3]) < 1e-8 * MU:
            break
        elastic_hessian_blocks(x, tets, Dm_inv, volume, MU, LAM, material, True, blocks)
        H = blocks[0, 9:, 9:] + 1e-12 * MU * np.eye(3)
        step = -np.linalg.solve(H, g[3])
        e0, alpha = energy(x), 1.0
        while alpha > 1e-10:
            trial = x.copy()
            trial[3] += alpha * step
            if energy(trial) <= e0 + 1e-4 * alpha * (g[3] @ step):
                break
            alpha *= 0.5
        x = trial
    deformation_gradient(x, tets[0], Dm_inv[0], F)
    assert np.linalg.det(F) > 0.0
    assert np.linalg.det(F) == pytest.approx(1.0, abs=1e-6)
    assert np.abs(x - rest).max() < 1e-6


# ------------------------------------------------------------------------------------------
# PSD projection
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 9, 12])
def test_project_psd_matches_eigh_reference(n):
    rng = np.random.default_rng(40 + n)
    worst = 0.0
    for _ in range(5):
        A = rng.normal(size=(n, n))
        H = 0.5 * (A + A.T) * 10.0 ** rng.uniform(-3, 6)
        ref_vals, ref_vecs = np.linalg.eigh(H)
        out = np.empty((n, n))
        vals, vecs, work = np.empty(n), np.empty((n, n)), np.empty((n, n))
        clamped = project_psd(H, vals, vecs, work, out)
        scale = np.abs(ref_vals).max()
        assert clamped == bool(np.any(ref_vals < 0))
        assert rel_err(np.sort(vals), ref_vals) < 1e-12
        proj_vals = np.linalg.eigvalsh(out)
        assert proj_vals.min() >= -1e-9 * scale
        err = np.abs(np.sort(proj_vals) - np.sort(np.maximum(ref_vals, 0.0))).max() / scale
        worst = max(worst, err)
        assert err < 1e-12
        # eigenvectors preserved: out v_i = max(l_i, 0) v_i
        assert np.abs(out @ ref_vecs - ref_vecs * np.maximum(ref_vals, 0.0)).max() < 1e-12 * scale
        # brute-force reference projection
        ref = ref_vecs @ np.diag(np.maximum(ref_vals, 0.0)) @ ref_vecs.T
        assert np.abs(out - ref).max() < 1e-12 * scale
        # Jacobi eigenvectors are orthonormal and reconstruct H
        symmetric_eigen_jacobi(H, vals, vecs, work)
        assert np.abs(vecs.T @ vecs - np.eye(n)).max() < 1e-13
        assert np.abs(vecs @ np.diag(vals) @ vecs.T - H).max() < 1e-13 * scale
    print(f"n={n}: max eigenvalue error of projection {worst:.2e} (relative to max|lambda|)")


@pytest.mark.parametrize("material", MATERIALS)
def test_projected_hessian_blocks_are_psd_and_match_per_tet_chain(material):
    rng = np.random.default_rng(50 + material)
    vertices, tets = two_tet_mesh()
    # replicate into many tets so the parallel chunking is exercised
    tets = np.tile(tets, (150, 1))
    Dm_inv, volume = compute_rest_shape(vertices, tets)
    x = vertices.copy()
    x[3] = [0.1, 0.2, -0.4]  # tet 0 inverted
    if material == NEOHOOKEAN:
        x[3] = [0.1, 0.2, 0.12]  # the barrier material is undefined inverted: strongly compressed instead
    x[4] = [0.2, 0.3, 0.25]  # tet 1 strongly compressed
    x += 0.01 * rng.normal(size=x.shape)
    blocks = np.empty((len(tets), 12, 12))
    elastic_hessian_blocks(x, tets, Dm_inv, volume, MU, LAM, material, True, blocks)
    raw = np.empty((len(tets), 12, 12))
    elastic_hessian_blocks(x, tets, Dm_inv, volume, MU, LAM, material, False, raw)
    work = tet_workspace()
    G = np.empty((4, 3))
    for t in range(2):
        scale = np.abs(raw[t]).max()
        assert np.linalg.eigvalsh(blocks[t]).min() >= -1e-9 * scale
        # per-tet reference: V D^T proj(dP/dF) D with the numpy eigh projection
        F = np.empty((3, 3))
        deformation_gradient(x, tets[t], Dm_inv[t], F)
        C = tangent(F, material, work)
        w, Q = np.linalg.eigh(C)
        C_psd = Q @ np.diag(np.maximum(w, 0.0)) @ Q.T
        D = np.empty((9, 12))
        deformation_gradient_jacobian(Dm_inv[t], D)
        assert rel_err(blocks[t], volume[t] * D.T @ C_psd @ D) < 1e-10
        H_ref = np.empty((12, 12))
        tet_hessian_from_tangent(C, Dm_inv[t], volume[t], G, H_ref)
        assert rel_err(raw[t], H_ref) < 1e-14
        g_ref = np.empty(12)
        tet_gradient_from_stress(stress(F, material, work), Dm_inv[t], volume[t], G, g_ref)
        assert rel_err(g_ref, volume[t] * D.T @ stress(F, material, work).ravel()) < 1e-13
    assert np.array_equal(blocks[0::2], np.broadcast_to(blocks[0], blocks[0::2].shape))  # deterministic
    assert np.array_equal(blocks[1::2], np.broadcast_to(blocks[1], blocks[1::2].shape))


# ------------------------------------------------------------------------------------------
# Robust SVD, 3x3 eigen / LDL^T, analytic eigensystem (Smith, De Goes, Kim 2019)
# ------------------------------------------------------------------------------------------

# Singular values for the eigensystem tests: SINGULAR_VALUES plus repeated, nearly repeated,
# zero, rank-deficient, nearly collapsed and inverted cases.
EIGEN_SINGULAR_VALUES = SINGULAR_VALUES + [
    (1.0, 1.0, 1.0),
    (2.0, 2.0, 0.5),
    (1.0, 1.0 + 1e-9, 0.5),
    (0.9, 0.6, 0.6),
    (1.0, 0.5, 0.0),
    (1.0, 1.0, 0.0),
    (1.0, 0.0, 0.0),
    (1.0, 1e-8, 1e-9),
    (1.2, 0.8, -1e-6),
    (1.3, 0.4, -1.2),
    (0.7, 0.7, -0.7),
    (-1.0, -1.0, -1.0),
]


def eigen_test_deformations(rng, material):
    """Deformation gradients for the eigensystem tests (identity, rotation, the list above, random)."""
    yield np.eye(3)
    yield random_rotation(rng)
    for sigma in admissible(material, EIGEN_SINGULAR_VALUES):
        if material == NEOHOOKEAN and min(sigma) < 1e-6 * max(sigma):
            # s = (1, 1e-8, 1e-9): det3(F) is off by ~15 % at J = 1e-17, so the explicit tangent
            # (built on F^-T = cof(F) / J) is no reference there.
            continue
        for _ in range(2):
            yield random_F(rng, sigma)
    for _ in range(20):
        F = rng.normal(size=(3, 3))  # about half with det F < 0
        if material == NEOHOOKEAN and np.linalg.det(F) < 0.0:
            F[:, 0] = -F[:, 0]
        yield F
    if material == int(MaterialModel.STABLE_NEOHOOKEAN):
        yield np.zeros((3, 3))  # the corotated tangent is not finite at F = 0 (R undefined)


def eigensystem(F, material, work, mu=MU, lam=LAM):
    U, V, Q = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    sigma, lam9 = np.empty(3), np.empty(9)
    material_eigensystem(np.ascontiguousarray(F), mu, lam, material, work, U, sigma, V, lam9, Q)
    return U, sigma, V, lam9, Q


def frob_rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


def test_svd3_is_accurate_for_nearly_collapsed_F():
    """F = U diag(s) V^T to 1e-14 |F| with rotations U, V, |s| sorted, det-sign on s2 only.

    The residual of the near-rank-1 cases is what cross-products of ``F^T F`` eigenvectors miss
    (~eps s0 / s1 ~ 1e-8 for s = (1, 1e-8, 1e-9)); the one-sided Jacobi keeps it at rounding level.
    """
    rng = np.random.default_rng(60)
    work = tet_workspace()
    cases = EIGEN_SINGULAR_VALUES + [(1.0, 1e-5, 1e-6), (1.0, 1e-12, -1e-13), (3.0, 1e-10, 1e-10)]
    worst = 0.0
    for sigma_true in cases:
        for _ in range(20):
            F = random_F(rng, sigma_true)
            U, V, s = np.empty((3, 3)), np.empty((3, 3)), np.empty(3)
            svd3_rotation_variant(F, U, s, V, work)
            err = np.linalg.norm(U @ np.diag(s) @ V.T - F) / np.linalg.norm(F)
            worst = max(worst, err)
            assert err < 1e-14
            assert np.abs(U.T @ U - np.eye(3)).max() < 1e-14
            assert np.abs(V.T @ V - np.eye(3)).max() < 1e-14
            assert np.linalg.det(U) > 0.0 and np.linalg.det(V) > 0.0
            assert abs(s[0]) >= abs(s[1]) * (1 - 1e-14) and abs(s[1]) >= abs(s[2]) * (1 - 1e-14)
            assert s[0] >= 0.0 and s[1] >= 0.0
            ref = np.linalg.svd(F, compute_uv=False)
            assert np.abs(np.abs(s) - ref).max() < 1e-14 * ref[0]
    print(f"svd3: max relative residual {worst:.1e}")


def test_symmetric_eigen3_and_scaling_block_factor():
    rng = np.random.default_rng(61)
    n_ldl = n_eigen = 0
    for trial in range(200):
        A = rng.normal(size=(3, 3))
        K = 0.5 * (A + A.T) if trial % 2 else A @ A.T + 1e-3 * np.eye(3)  # indefinite / SPD
        K *= 10.0 ** rng.uniform(-3, 6)
        ref_vals, ref_vecs = np.linalg.eigh(K)
        scale = np.abs(ref_vals).max()
        vals, vecs = np.empty(3), np.empty((3, 3))
        symmetric_eigen3(K.copy(), vals, vecs)
        assert np.abs(np.sort(vals) - ref_vals).max() < 1e-14 * scale
        assert np.abs(vecs.T @ vecs - np.eye(3)).max() < 1e-14
        assert np.abs(vecs @ np.diag(vals) @ vecs.T - K).max() < 1e-14 * scale
        d, S = np.empty(3), np.empty((3, 3))
        ldl = scaling_block_factor(K.copy(), d, S)
        assert ldl == bool(ref_vals.min() > 0.0)
        n_ldl += ldl
        n_eigen += not ldl
        assert np.abs(S @ np.diag(d) @ S.T - K).max() < 1e-13 * scale
        proj_ref = ref_vecs @ np.diag(np.maximum(ref_vals, 0.0)) @ ref_vecs.T
        assert np.abs(S @ np.diag(np.maximum(d, 0.0)) @ S.T - proj_ref).max() < 1e-13 * scale
    assert n_ldl > 50 and n_eigen > 50


@pytest.mark.parametrize("material", MATERIALS)
def test_analytic_eigensystem_reconstructs_the_tangent(material):
    """Orthonormal eigenmatrices with tangent @ q_m = lambda_m q_m; the unclamped sum is dP/dF."""
    rng = np.random.default_rng(62 + material)
    work = tet_workspace()
    worst = 0.0
    count = 0
    for F in eigen_test_deformations(rng, material):
        C = tangent(F, material, work)
        U, sigma, V, lam9, Q = eigensystem(F, material, work)
        modes = np.empty((9, 9))
        eigen_modes(U, V, Q, modes)
        assert np.abs(modes @ modes.T - np.eye(9)).max() < 1e-13
        scale = np.linalg.norm(C)
        assert np.abs(C @ modes.T - modes.T * lam9).max() <= 1e-10 * scale
        recon = np.empty((9, 9))
        tangent_from_eigensystem(U, V, lam9, Q, False, np.empty((9, 9)), recon)
        err = frob_rel(recon, C)
        worst = max(worst, err)
        assert err < 1e-9, (F, err)
        # and through the chain rule to 12x12, without clamping
        Dm_inv = np.linalg.inv(rng.normal(size=(3, 3)) + 2.0 * np.eye(3))
        H_ref, H = np.empty((12, 12)), np.empty((12, 12))
        tet_hessian_from_tangent(C, Dm_inv, 0.3, np.empty((4, 3)), H_ref)
        tet_hessian_from_eigensystem(
            U, V, lam9, Q, Dm_inv, 0.3, False, np.empty((4, 3)), np.empty((9, 12)), np.empty(9), H
        )
        assert frob_rel(H, H_ref) < 1e-9
        count += 1
    print(f"material {material}: {count} deformations, max rel Frobenius error of the reconstruction {worst:.1e}")


@pytest.mark.parametrize("material", MATERIALS)
def test_analytic_projection_matches_jacobi_projection(material):
    """proj(dP/dF) from the analytic eigensystem equals the cyclic-Jacobi projection of the 9x9.

    The reference is accurate to ~1e-16 ||dP/dF||; when a clamped eigenvalue dwarfs the rest
    (corotated twist ``-4 mu / (s_i + s_j)`` with ``s_i + s_j -> 0``, e.g. s = (0.7, 0.7, -0.7)
    or a tet collapsed to a line), ||dP/dF|| / ||proj|| reaches 1e8..1e17 and only that absolute
    bound is asserted; every other case must agree to 1e-8 relative.
    """
    rng = np.random.default_rng(64 + material)
    work = tet_workspace()
    n = 9
    vals, vecs, jac = np.empty(n), np.empty((n, n)), np.empty((n, n))
    worst = 0.0
    n_clamped = n_strict = n_ill = 0
    for F in eigen_test_deformations(rng, material):
        C = tangent(F, material, work)
        ref = np.empty((9, 9))
        clamped = project_psd(C, vals, vecs, jac, ref)
        n_clamped += clamped
        P = np.empty((9, 9))
        projected_pk1_stress_derivative(np.ascontiguousarray(F), MU, LAM, material, work, P)
        assert np.linalg.eigvalsh(P).min() >= -1e-12 * np.linalg.norm(P)
        err_abs = np.linalg.norm(P - ref)
        if np.linalg.norm(C) <= 1e4 * np.linalg.norm(ref):
            n_strict += 1
            err = frob_rel(P, ref)
            worst = max(worst, err)
            assert err < 1e-8, (F, err)
        else:
            n_ill += 1
            assert material == int(MaterialModel.COROTATED)
            assert err_abs < 1e-13 * np.linalg.norm(C)
        if not clamped:
            assert frob_rel(P, C) < 1e-9
    print(
        f"material {material}: {n_strict} well-conditioned (max rel err {worst:.1e}), {n_ill} ill-conditioned, "
        f"{n_clamped} with clamped eigenvalues"
    )
    assert n_clamped >= 20 and n_strict >= 40


@pytest.mark.parametrize("material", MATERIALS)
def test_projected_hessian_blocks_match_jacobi_reference_on_a_deformed_mesh(material):
    """elastic_hessian_blocks(project=True) (analytic, LDL^T shortcut) vs the Jacobi batch kernel."""
    from contact_lab.core.fem.primitives import box_tet_mesh

    rng = np.random.default_rng(66 + material)
    vertices, tets = box_tet_mesh((4, 4, 4), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    Dm_inv, volume = compute_rest_shape(vertices, tets)
    x = vertices * np.array([1.0, 0.7, 1.2]) + 0.12 * rng.normal(size=vertices.shape)
    x[:10] = x[0]  # a few collapsed tets
    if material == NEOHOOKEAN:  # undefined for J <= 0: distorted (J in [0.25, 1.8]) but not inverted
        x = vertices * np.array([1.0, 0.7, 1.2]) + 0.03 * rng.normal(size=vertices.shape)
    blocks = np.empty((len(tets), 12, 12))
    ref = np.empty_like(blocks)
    elastic_hessian_blocks(x, tets, Dm_inv, volume, MU, LAM, material, True, blocks)
    elastic_hessian_blocks_jacobi(x, tets, Dm_inv, volume, MU, LAM, material, True, ref)
    raw = np.empty_like(blocks)
    elastic_hessian_blocks(x, tets, Dm_inv, volume, MU, LAM, material, False, raw)
    errs = np.array([frob_rel(blocks[t], ref[t]) for t in range(len(tets))])
    inverted = np.array([np.linalg.det(x[t[1:]] - x[t[0]]) < 0 for t in tets])
    indefinite = np.array([np.linalg.eigvalsh(raw[t]).min() < -1e-9 * np.abs(raw[t]).max() for t in range(len(tets))])
    # Reference conditioning as in test_analytic_projection_matches_jacobi_projection (collapsed
    # corotated tets: s1 + s2 = 0).
    norms = np.linalg.norm(raw, axis=(1, 2))
    strict = norms <= 1e4 * np.linalg.norm(ref, axis=(1, 2))
    print(
        f"material {material}: {len(tets)} tets ({inverted.sum()} inverted, {indefinite.sum()} indefinite, "
        f"{(~strict).sum()} ill-conditioned), max rel Frobenius diff {errs[strict].max():.1e}"
    )
    if material == NEOHOOKEAN:
        assert inverted.sum() == 0 and indefinite.sum() > 50
    else:
        assert inverted.sum() > 20 and indefinite.sum() > 50 and strict.sum() > 350
    assert errs[strict].max() < 1e-8
    assert np.all(np.linalg.norm(blocks - ref, axis=(1, 2))[~strict] < 1e-13 * norms[~strict])
    if material in (int(MaterialModel.STABLE_NEOHOOKEAN), NEOHOOKEAN):
        assert strict.all()
    assert all(np.linalg.eigvalsh(b).min() >= -1e-12 * np.linalg.norm(b) for b in blocks)


# ------------------------------------------------------------------------------------------
# Classical neo-Hookean with a log barrier (the IPC material)
# ------------------------------------------------------------------------------------------


def random_F_with_J(rng, low=0.3, high=2.0):
    """A general (not SVD-built) random F with ``low <= det F <= high``."""
    while True:
        F = np.eye(3) + 0.4 * rng.normal(size=(3, 3))
        if low <= np.linalg.det(F) <= high:
            return F


def neohookean_psi(s, mu=MU, lam=LAM):
    """Psi in singular values (numpy reference): mu/2 (|s|^2 - 3) - mu log J + lam/2 log(J)^2."""
    log_J = np.log(np.prod(s))
    return 0.5 * mu * (s @ s - 3.0) - mu * log_J + 0.5 * lam * log_J**2


def test_neohookean_closed_form_and_finite_differences_for_random_F():
    """Psi, P = mu F + (lam log J - mu) F^-T against numpy; P against FD of Psi, dP/dF against FD of P."""
    rng = np.random.default_rng(70)
    work = tet_workspace()
    worst_p = worst_c = worst_closed = 0.0
    for _ in range(30):
        F = random_F_with_J(rng)
        J = np.linalg.det(F)
        psi_ref = 0.5 * MU * (np.sum(F * F) - 3.0) - MU * np.log(J) + 0.5 * LAM * np.log(J) ** 2
        assert energy_density(F, NEOHOOKEAN, work) == pytest.approx(psi_ref, rel=1e-13, abs=1e-13 * MU)
        P = stress(F, NEOHOOKEAN, work)
        worst_closed = max(worst_closed, rel_err(P, MU * F + (LAM * np.log(J) - MU) * np.linalg.inv(F).T))
        C = tangent(F, NEOHOOKEAN, work)
        P_fd, C_fd = finite_difference_stress_and_tangent(F, NEOHOOKEAN, work)
        worst_p = max(worst_p, rel_err(P.ravel(), P_fd))
        worst_c = max(worst_c, rel_err(C, C_fd))
        assert np.abs(C - C.T).max() <= 1e-12 * np.abs(C).max()
    print(
        f"neo-Hookean, J in [0.3, 2]: P vs closed form {worst_closed:.1e}, vs FD {worst_p:.1e}; "
        f"dP/dF vs FD {worst_c:.1e}"
    )
    assert worst_closed < 1e-13
    assert worst_p < 1e-7
    assert worst_c < 1e-7


def test_neohookean_singular_value_eigenvalues_match_generic_formulas():
    """The closed forms used by ``material_eigensystem`` against the generic Smith et al. 2019 ones
    evaluated numerically from ``psi(s)`` alone: ``lambda_T = (psi_i + psi_j) / (s_i + s_j)``,
    ``lambda_L = (psi_i - psi_j) / (s_i - s_j)``, K by central FD of ``psi_i`` (itself central FD)."""
    rng = np.random.default_rng(71)
    work = tet_workspace()
    h = 1e-5

    def psi_grad(s):
        return np.array([(neohookean_psi(s + h * e) - neohookean_psi(s - h * e)) / (2 * h) for e in np.eye(3)])

    worst_tf = worst_k = 0.0
    for _ in range(20):
        F = random_F_with_J(rng)
        U, sigma, V, lam9, Q = eigensystem(F, NEOHOOKEAN, work)
        assert np.all(sigma > 0.0)
        g = psi_grad(sigma)
        for k in range(3):
            i, j = (k + 1) % 3, (k + 2) % 3
            twist = (g[i] + g[j]) / (sigma[i] + sigma[j])
            flip = (g[i] - g[j]) / (sigma[i] - sigma[j])
            worst_tf = max(worst_tf, abs(lam9[3 + k] - twist) / MU)
            if abs(sigma[i] - sigma[j]) > 0.05:  # the difference quotient loses digits otherwise
                worst_tf = max(worst_tf, abs(lam9[6 + k] - flip) / MU)
        # K = d^2 psi / ds^2 from its eigen-decomposition vs FD of the (FD) gradient.
        K = Q @ np.diag(lam9[:3]) @ Q.T
        K_fd = np.array([(psi_grad(sigma + 1e-4 * e) - psi_grad(sigma - 1e-4 * e)) / 2e-4 for e in np.eye(3)])
        worst_k = max(worst_k, rel_err(K, K_fd))
    print(f"neo-Hookean eigenvalues vs generic formulas: twist/flip {worst_tf:.1e} (/ mu), K {worst_k:.1e}")
    assert worst_tf < 1e-5
    assert worst_k < 1e-5


def test_neohookean_energy_is_a_barrier():
    """Psi(diag(1, 1, t)) = mu/2 (t^2 - 1) - mu log t + lam/2 log(t)^2 increases monotonically to +inf
    as t -> 0+; Psi = +inf for J <= 0, per tet and in the batch energy."""
    work = tet_workspace()
    t = np.logspace(0.0, -300.0, 301)
    psi = np.array([energy_density(np.diag([1.0, 1.0, ti]), NEOHOOKEAN, work) for ti in t])
    ref = 0.5 * MU * (t**2 - 1.0) - MU * np.log(t) + 0.5 * LAM * np.log(t) ** 2
    assert psi[0] == 0.0
    assert np.all(np.isfinite(psi))
    assert np.all(np.diff(psi) > 0.0)
    assert rel_err(psi, ref) < 1e-14
    assert psi[-1] > 1e5 * LAM  # ~ lam/2 (690)^2 at t = 1e-300
    for ti in [0.0, -0.0, -1e-300, -1e-3, -1.0]:
        assert energy_density(np.diag([1.0, 1.0, ti]), NEOHOOKEAN, work) == np.inf
    assert energy_density(np.zeros((3, 3)), NEOHOOKEAN, work) == np.inf
    vertices, tets = two_tet_mesh()
    Dm_inv, volume = compute_rest_shape(vertices, tets)
    x = vertices.copy()
    assert elastic_energy(x, tets, Dm_inv, volume, MU, LAM, NEOHOOKEAN) == 0.0
    x[3] = [0.1, 0.2, -0.1]  # tet 0 inverted, tet 1 not
    assert elastic_energy(x, tets, Dm_inv, volume, MU, LAM, NEOHOOKEAN) == np.inf


@pytest.mark.parametrize(
    ("start", "min_rejected"),
    [((0.6, -0.3, 0.02), 0), ((0.3, 0.3, 4.0), 1)],
    ids=["squashed_J0.02", "stretched_J4"],
)
def test_neohookean_newton_with_barrier_line_search_never_inverts(start, min_rejected):
    """Newton (PSD-projected Hessian) whose backtracking rejects +inf: every accepted iterate has
    J > 0 and the rest shape is reached. From the stretched start the full first step overshoots
    through J = 0 and is rejected by the barrier alone (+inf energy)."""
    work = tet_workspace()
    rest = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    tets = np.array([[0, 1, 2, 3]], dtype=np.int32)
    Dm_inv, volume = compute_rest_shape(rest, tets)
    x = rest.copy()
    x[3] = start

    def energy(x):
        return elastic_energy(x, tets, Dm_inv, volume, MU, LAM, NEOHOOKEAN)

    g = np.empty((4, 3))
    blocks = np.empty((1, 12, 12))
    F = np.empty((3, 3))
    rejected_inf = 0
    for _ in range(100):
        elastic_gradient(x, tets, Dm_inv, volume, MU, LAM, NEOHOOKEAN, g)
        if np.linalg.norm(g[3]) < 1e-8 * MU:
            break
        elastic_hessian_blocks(x, tets, Dm_inv, volume, MU, LAM, NEOHOOKEAN, True, blocks)
        step = -np.linalg.solve(blocks[0, 9:, 9:] + 1e-12 * MU * np.eye(3), g[3])
        e0, alpha = energy(x), 1.0
        while True:
            trial = x.copy()
            trial[3] += alpha * step
            e = energy(trial)
            rejected_inf += e == np.inf
            if e <= e0 + 1e-4 * alpha * (g[3] @ step):
                break
            alpha *= 0.5
        x = trial
        deformation_gradient(x, tets[0], Dm_inv[0], F)
        assert np.linalg.det(F) > 0.0
        assert np.isfinite(energy_density(F, NEOHOOKEAN, work))
    print(f"neo-Hookean Newton from {start}: {rejected_inf} trial steps rejected as +inf (inverted)")
    assert rejected_inf >= min_rejected
    assert np.abs(x - rest).max() < 1e-8
