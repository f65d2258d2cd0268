"""Enclosed volume and the volume-change penalty (seed 003, §3.2 / §3.6 item 4).

References: the analytic cube volume a³, an independent numpy divergence-theorem volume
(centroid . area-normal), central finite differences of V, of each model's energy and of its
gradient, the closed-form pressure-volume laws (eqs. 18-20) and rigid-motion invariance.
"""

import numpy as np
import pytest
from contact_lab.core.fem import primitives
from contact_lab.core.fem.volume import (
    ATMOSPHERE,
    SERIES_THRESHOLD,
    VolumeModel,
    enclosed_volume,
    enclosed_volume_gradient,
    enclosed_volume_hessian_blocks,
    enclosed_volume_hessian_matvec,
    excess_pressure,
    is_closed_oriented_surface,
    kappa_per_pa,
    pressure_in_atm,
    volume_penalty_energy,
    volume_penalty_gradient,
    volume_penalty_hessian_matvec,
    volume_penalty_local_hessian_blocks,
    volume_work,
    volume_work_first_derivative,
    volume_work_second_derivative,
)
from reference_geometry import random_rotation

MODELS = [int(VolumeModel.QUADRATIC), int(VolumeModel.IDEAL_GAS), int(VolumeModel.LIQUID)]
KAPPA = kappa_per_pa(1.0)  # air at 1 atm [1/Pa]


# --------------------------------------------------------------------------------------------
# Meshes (orientation fixed independently of the kernels: outward for star-shaped meshes)
# --------------------------------------------------------------------------------------------


def _orient_outward(vertices, triangles):
    """Flip triangles whose area normal points towards the vertex centroid (star-shaped meshes)."""
    tri = np.array(triangles, dtype=np.int32)
    xa, xb, xc = vertices[tri[:, 0]], vertices[tri[:, 1]], vertices[tri[:, 2]]
    normal = np.cross(xb - xa, xc - xa)
    outward = np.einsum("ij,ij->i", normal, (xa + xb + xc) / 3.0 - vertices.mean(axis=0)) > 0.0
    tri[~outward] = tri[~outward][:, [0, 2, 1]]
    return tri


def cube_mesh(side, origin=(0.0, 0.0, 0.0)):
    """Cube [origin, origin + side]^3 as 8 vertices and 12 outward triangles."""
    corners = np.array([[i & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)], dtype=np.float64)
    quads = [(0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5)]
    tris = [t for q in quads for t in ((q[0], q[1], q[2]), (q[0], q[2], q[3]))]
    vertices = side * corners + np.asarray(origin, dtype=np.float64)
    return vertices, _orient_outward(vertices, tris)


def icosphere(subdivisions, radius=1.0):
    """Closed, outward-oriented icosphere (``contact_lab.core.fem.primitives.icosphere``)."""
    return primitives.icosphere(radius, subdivisions)


def deformed_sphere(seed, subdivisions=2):
    """Icosphere stretched anisotropically, jittered, rotated and translated (still closed)."""
    rng = np.random.default_rng(seed)
    x, tri = icosphere(subdivisions)
    x = x * np.array([1.3, 0.8, 1.1]) + 0.04 * rng.standard_normal(x.shape)
    x = np.einsum("ij,vj->vi", random_rotation(rng), x) + rng.uniform(-2.0, 2.0, size=3)
    return x, tri


MESHES = {
    "cube": lambda: cube_mesh(0.7, origin=(0.3, -1.2, 0.5)),
    "icosphere": lambda: icosphere(2, radius=0.9),
    "deformed": lambda: deformed_sphere(7),
}


def reference_volume(x, tri):
    """Divergence theorem with the face centroid: V = 1/3 sum_f c_f . n_f A_f (plain numpy)."""
    xa, xb, xc = x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
    area_normal = 0.5 * np.cross(xb - xa, xc - xa)
    return np.einsum("ij,ij->", (xa + xb + xc) / 3.0, area_normal) / 3.0


def rel(a, b):
    """Relative error ``||a - b|| / ||b||``."""
    return float(np.linalg.norm(np.ravel(a) - np.ravel(b)) / np.linalg.norm(np.ravel(b)))


def fd_gradient(fun, x, h):
    """Central finite-difference gradient of a scalar function of x (V, 3)."""
    g = np.zeros_like(x)
    for v in range(x.shape[0]):
        for i in range(3):
            xp, xm = x.copy(), x.copy()
            xp[v, i] += h
            xm[v, i] -= h
            g[v, i] = (fun(xp) - fun(xm)) / (2.0 * h)
    return g


def grad_of(kernel, *args):
    def fun(x, tri):
        out = np.empty_like(x)
        kernel(x, tri, *args, out)
        return out

    return fun


# --------------------------------------------------------------------------------------------
# Enclosed volume
# --------------------------------------------------------------------------------------------


def test_meshes_are_closed_and_consistently_oriented():
    """Accept the test meshes and reject an open or inconsistently oriented surface."""
    for make in MESHES.values():
        assert is_closed_oriented_surface(make()[1])
    _, tri = cube_mesh(1.0)
    assert not is_closed_oriented_surface(tri[1:])
    flipped = tri.copy()
    flipped[0] = flipped[0, [0, 2, 1]]
    assert not is_closed_oriented_surface(flipped)


def test_cube_volume_equals_side_cubed():
    """Give a³ for an offset cube of side a, and -a³ when turned inside out."""
    x, tri = cube_mesh(0.7, origin=(0.3, -1.2, 0.5))
    assert enclosed_volume(x, tri) == pytest.approx(0.7**3, rel=1e-14)
    assert enclosed_volume(x, tri[:, [0, 2, 1]].copy()) == pytest.approx(-(0.7**3), rel=1e-14)


@pytest.mark.parametrize("name", ["icosphere", "deformed"])
def test_sphere_volume_matches_divergence_theorem(name):
    """Match the centroid-form divergence-theorem volume; the icosphere is inscribed in the ball."""
    x, tri = MESHES[name]()
    V = enclosed_volume(x, tri)
    assert rel(V, reference_volume(x, tri)) < 1e-13
    if name == "icosphere":
        ball = 4.0 / 3.0 * np.pi * 0.9**3
        assert 0.9 * ball < V < ball


@pytest.mark.parametrize("name", list(MESHES))
def test_volume_gradient_matches_finite_differences(name):
    """dV/dx equals the central finite-difference gradient of V to 1e-7 relative."""
    x, tri = MESHES[name]()
    g = grad_of(enclosed_volume_gradient)(x, tri)
    g_fd = fd_gradient(lambda y: enclosed_volume(y, tri), x, 1e-6)
    assert np.linalg.norm(g) > 0.0
    assert rel(g, g_fd) < 1e-7


def test_volume_invariant_under_rigid_motion():
    """Keep V under random rotations and translations of a deformed closed mesh."""
    rng = np.random.default_rng(3)
    x, tri = deformed_sphere(11)
    V = enclosed_volume(x, tri)
    for _ in range(5):
        y = np.einsum("ij,vj->vi", random_rotation(rng), x) + rng.uniform(-10.0, 10.0, size=3)
        assert rel(enclosed_volume(y, tri), V) < 1e-12


@pytest.mark.parametrize("name", list(MESHES))
def test_volume_hessian_matches_finite_differences(name):
    """Hessian matvec and assembled 9x9 blocks equal finite differences of dV/dx."""
    rng = np.random.default_rng(5)
    x, tri = MESHES[name]()
    p = rng.standard_normal(x.shape)
    h = 1e-6
    gfun = grad_of(enclosed_volume_gradient)
    hp_fd = (gfun(x + h * p, tri) - gfun(x - h * p, tri)) / (2.0 * h)
    hp = np.empty_like(x)
    enclosed_volume_hessian_matvec(x, tri, p, hp)
    assert rel(hp, hp_fd) < 1e-7
    blocks = np.empty((tri.shape[0], 9, 9))
    enclosed_volume_hessian_blocks(x, tri, blocks)
    assert np.array_equal(blocks, np.transpose(blocks, (0, 2, 1)))
    dense = np.zeros((3 * x.shape[0], 3 * x.shape[0]))
    dofs = (3 * tri[:, :, None] + np.arange(3)).reshape(-1, 9)
    for t in range(tri.shape[0]):
        dense[np.ix_(dofs[t], dofs[t])] += blocks[t]
    assert rel(np.einsum("ij,j->i", dense, p.ravel()), hp_fd) < 1e-7


# --------------------------------------------------------------------------------------------
# Pressure-volume laws
# --------------------------------------------------------------------------------------------


def closed_form_work(r, V0, kappa, model):
    """Eqs. 18-20 evaluated literally in numpy (the reference for ``volume_work``)."""
    if model == VolumeModel.QUADRATIC:
        return (r * V0 - V0) ** 2 / (2.0 * kappa * V0)
    if model == VolumeModel.IDEAL_GAS:
        return (1.0 / kappa) * V0 * (r - 1.0 - np.log(r))
    return (V0 / kappa) * (r * np.log(r) - r + 1.0)


@pytest.mark.parametrize("model", MODELS)
def test_volume_work_matches_closed_form(model):
    """Match eqs. 18-20, their finite-difference derivatives, and stay continuous across the series switch."""
    V0 = 2.5
    for r in (0.3, 0.8, 1.05, 1.7, 3.0):
        assert rel(volume_work(r * V0, V0, KAPPA, model), closed_form_work(r, V0, KAPPA, model)) < 1e-13
    for r in (0.5, 0.995, 1.3):
        h = 1e-6 * V0
        w1 = volume_work_first_derivative(r * V0, V0, KAPPA, model)
        w1_fd = (volume_work(r * V0 + h, V0, KAPPA, model) - volume_work(r * V0 - h, V0, KAPPA, model)) / (2 * h)
        w2_fd = (
            volume_work_first_derivative(r * V0 + h, V0, KAPPA, model)
            - volume_work_first_derivative(r * V0 - h, V0, KAPPA, model)
        ) / (2 * h)
        assert rel(w1, w1_fd) < 1e-7
        assert rel(volume_work_second_derivative(r * V0, V0, KAPPA, model), w2_fd) < 1e-7
    below = volume_work((1.0 + 0.999 * SERIES_THRESHOLD) * V0, V0, KAPPA, model)
    above = volume_work((1.0 + 1.001 * SERIES_THRESHOLD) * V0, V0, KAPPA, model)
    assert 0.0 < below < above
    assert rel(below, closed_form_work(1.0 + 0.999 * SERIES_THRESHOLD, V0, KAPPA, model)) < 1e-11


def test_models_agree_to_second_order_at_rest_volume():
    """W2, W_gas (kappa = 1/p0) and W_liquid agree near V0 and scale with (V - V0)²."""
    x, tri = icosphere(2)
    V0 = enclosed_volume(x, tri)
    for sign in (+1.0, -1.0):
        energies = {}
        for dv in (1e-3, 2e-3):
            y = x * (1.0 + sign * dv) ** (1.0 / 3.0)
            energies[dv] = [volume_penalty_energy(y, tri, V0, KAPPA, m) for m in MODELS]
            expected = V0 * dv**2 / (2.0 * KAPPA)
            for w in energies[dv]:
                assert rel(w, energies[dv][0]) < 1e-2
                assert rel(w, expected) < 1e-2
        for w1, w2 in zip(energies[1e-3], energies[2e-3], strict=True):
            assert w2 / w1 == pytest.approx(4.0, rel=1e-2)


def test_excess_pressure_of_ten_percent_compression():
    """10 % compression at kappa = 1 atm^-1 gives +0.1 atm (QUADRATIC) and the gas/liquid laws."""
    x, tri = cube_mesh(1.0)
    V0 = enclosed_volume(x, tri)
    V = enclosed_volume(x * 0.9 ** (1.0 / 3.0), tri)
    assert V / V0 == pytest.approx(0.9, rel=1e-14)
    p_quad = pressure_in_atm(excess_pressure(V, V0, KAPPA, int(VolumeModel.QUADRATIC)))
    p_gas = pressure_in_atm(excess_pressure(V, V0, KAPPA, int(VolumeModel.IDEAL_GAS)))
    p_liq = pressure_in_atm(excess_pressure(V, V0, KAPPA, int(VolumeModel.LIQUID)))
    assert p_quad == pytest.approx(0.1, rel=1e-12)
    assert p_gas == pytest.approx(1.0 / 0.9 - 1.0, rel=1e-12)  # p0 V0 / V - p0 with p0 = 1 atm
    assert p_liq == pytest.approx(-np.log(0.9), rel=1e-12)
    assert excess_pressure(V, V0, KAPPA, int(VolumeModel.QUADRATIC)) == pytest.approx(0.1 * ATMOSPHERE, rel=1e-12)


@pytest.mark.parametrize("model", [int(VolumeModel.IDEAL_GAS), int(VolumeModel.LIQUID)])
def test_gas_and_liquid_reject_nonpositive_volume(model):
    """Return +inf energy and NaN derivatives for an inside-out surface (V <= 0)."""
    x, tri = icosphere(1)
    V0 = enclosed_volume(x, tri)
    inverted = -x  # point reflection flips the sign of V
    assert volume_penalty_energy(inverted, tri, V0, KAPPA, model) == np.inf
    out = np.empty_like(x)
    volume_penalty_gradient(inverted, tri, V0, KAPPA, model, out)
    assert np.all(np.isnan(out))
    assert np.isfinite(volume_penalty_energy(inverted, tri, V0, KAPPA, int(VolumeModel.QUADRATIC)))


# --------------------------------------------------------------------------------------------
# Penalty on a mesh: gradient, Hessian, invariants, stiffening
# --------------------------------------------------------------------------------------------


def squeezed(seed, factor):
    """Deformed closed mesh whose rest volume V0 is ``factor`` times its current volume."""
    x, tri = deformed_sphere(seed)
    return x, tri, factor * enclosed_volume(x, tri)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("factor", [0.75, 1.25])
def test_penalty_gradient_matches_finite_differences(model, factor):
    """f_vol = -dW/dx equals minus the finite-difference gradient of W to 1e-6 relative."""
    x, tri, V0 = squeezed(1, factor)
    force = -grad_of(volume_penalty_gradient, V0, KAPPA, model)(x, tri)
    g_fd = fd_gradient(lambda y: volume_penalty_energy(y, tri, V0, KAPPA, model), x, 1e-6)
    assert np.linalg.norm(force) > 0.0
    assert rel(force, -g_fd) < 1e-6


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("factor", [0.75, 1.25])
def test_penalty_hessian_matvec_matches_finite_differences(model, factor):
    """The full (rank-1 + local) Hessian product equals finite differences of the gradient."""
    rng = np.random.default_rng(9)
    x, tri, V0 = squeezed(2, factor)
    gfun = grad_of(volume_penalty_gradient, V0, KAPPA, model)
    p, q = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
    h = 1e-6
    hp_fd = (gfun(x + h * p, tri) - gfun(x - h * p, tri)) / (2.0 * h)
    hp, hq = np.empty_like(x), np.empty_like(x)
    volume_penalty_hessian_matvec(x, tri, V0, KAPPA, model, p, hp)
    volume_penalty_hessian_matvec(x, tri, V0, KAPPA, model, q, hq)
    assert rel(hp, hp_fd) < 1e-6
    assert np.sum(q * hp) == pytest.approx(np.sum(p * hq), rel=1e-12)  # symmetric
    # The sparse local blocks alone miss exactly the rank-1 term W'' (g . p) g.
    blocks = np.empty((tri.shape[0], 9, 9))
    volume_penalty_local_hessian_blocks(x, tri, V0, KAPPA, model, blocks)
    local = np.zeros_like(x)
    p_local = p[tri].reshape(-1, 9)
    np.add.at(local, tri, np.einsum("tij,tj->ti", blocks, p_local).reshape(-1, 3, 3))
    g = grad_of(enclosed_volume_gradient)(x, tri)
    V = enclosed_volume(x, tri)
    w2 = volume_work_second_derivative(V, V0, KAPPA, model)
    assert rel(local + w2 * np.sum(g * p) * g, hp) < 1e-6


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_volume_force_has_zero_net_force_and_torque(model, seed):
    """Sum f_vol = 0 and sum x × f_vol = 0 on random deformed closed meshes (1e-10 relative)."""
    x, tri, V0 = squeezed(seed, 0.7 + 0.2 * seed)
    f = -grad_of(volume_penalty_gradient, V0, KAPPA, model)(x, tri)
    scale_f = np.sum(np.linalg.norm(f, axis=1))
    scale_t = np.sum(np.linalg.norm(np.cross(x, f), axis=1))
    assert scale_f > 0.0
    assert np.linalg.norm(f.sum(axis=0)) < 1e-10 * scale_f
    assert np.linalg.norm(np.cross(x, f).sum(axis=0)) < 1e-10 * scale_t


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("strain", [-0.05, 0.05])
def test_restoring_force_stiffens_as_kappa_decreases(model, strain):
    """For a fixed radial displacement the restoring force grows 10x per 10x smaller kappa."""
    x, tri = icosphere(2)
    V0 = enclosed_volume(x, tri)
    u = strain * x  # imposed inward (-) or outward (+) displacement
    magnitudes = []
    for kappa_atm in (1.0, 0.1, 0.01):
        f = -grad_of(volume_penalty_gradient, V0, kappa_per_pa(kappa_atm), model)(x + u, tri)
        assert np.sum(f * u) < 0.0  # opposes the displacement
        magnitudes.append(np.linalg.norm(f))
    assert magnitudes[0] < magnitudes[1] < magnitudes[2]
    assert magnitudes[1] / magnitudes[0] == pytest.approx(10.0, rel=1e-12)  # W' ∝ 1/kappa
    assert magnitudes[2] / magnitudes[1] == pytest.approx(10.0, rel=1e-12)


@pytest.mark.parametrize("model", MODELS)
def test_volume_loss_under_pressure_load_decreases_with_kappa(model):
    """Newton on uniform scaling under an external 0.5 atm load reaches the analytic volume law."""
    X, tri = icosphere(2)
    V0 = enclosed_volume(X, tri)
    load = 0.5 * ATMOSPHERE  # [Pa]; potential load * V, force -load * dV/dx
    losses = []
    for kappa_atm in (1.0, 0.1, 0.01):
        kappa = kappa_per_pa(kappa_atm)
        s = 1.0
        g, hx, hv = np.empty_like(X), np.empty_like(X), np.empty_like(X)
        for _ in range(50):
            x = s * X
            volume_penalty_gradient(x, tri, V0, kappa, model, g)
            volume_penalty_hessian_matvec(x, tri, V0, kappa, model, X, hx)
            gv = grad_of(enclosed_volume_gradient)(x, tri)
            enclosed_volume_hessian_matvec(x, tri, X, hv)
            de = np.sum((g + load * gv) * X)
            dde = np.sum((hx + load * hv) * X)
            s -= de / dde
            if abs(de / dde) < 1e-15:
                break
        r = enclosed_volume(s * X, tri) / V0
        if model == VolumeModel.QUADRATIC:
            expected = 1.0 - kappa * load  # -(r - 1)/kappa = load
        elif model == VolumeModel.IDEAL_GAS:
            expected = 1.0 / (1.0 + kappa * load)  # p0 (1/r - 1) = load, p0 = 1/kappa
        else:
            expected = np.exp(-kappa * load)  # -ln(r)/kappa = load
        assert r == pytest.approx(expected, rel=1e-10)
        losses.append(1.0 - r)
    assert losses[0] > losses[1] > losses[2] > 0.0
