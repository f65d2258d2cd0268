"""Contact islands: a body's mass changes nothing in bodies it never touches, with every solver the add-on offers.

References: the analytic rest height of a box on the ground, the same box simulated alone (bit for bit with PROX,
whose islands are solved as if alone) and a brute-force connected-components search for the island kernel.
"""

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder, RFactorStrategy, simulate
from contact_lab.core.contact_solvers.islands import contact_islands
from contact_lab.core.rigid.solvers import SOLVER_NAMES

G = 9.81
HALF = 0.5
"""The boxes are 1 m cubes: resting on the ground, their centres are at z = 0.5 m."""
FPS, SUBSTEPS, ITERATIONS, TOLERANCE = 24, 4, 100, 1e-6
"""The add-on's default bake settings (Scene ▸ Contact Lab Bake, a new scene at 24 fps)."""
SECONDS = 2.0


def _ground_and_boxes(heavy_mass, *, light=True):
    """The ground (static plane), a resting 1 m box of ``heavy_mass`` [kg] at the origin and, with ``light``, a
    resting 1 kg box 30 m away: two islands that share nothing but the ground."""
    b = ModelBuilder(gravity=(0, 0, -G))
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="ground")
    b.add_shape_plane(ground)
    heavy = b.add_body(pos=(0, 0, HALF), mass=heavy_mass, label="heavy")
    b.add_shape_box(heavy, (HALF, HALF, HALF))
    if light:
        far = b.add_body(pos=(30.0, 0, HALF), mass=1.0, label="light")
        b.add_shape_box(far, (HALF, HALF, HALF))
    return b.finalize()


def _bake(model, solver, **options):
    frames = int(SECONDS * FPS) + 1
    return simulate(
        model, frame_count=frames, fps=FPS, substeps=SUBSTEPS, solver=solver, iterations=ITERATIONS,
        tolerance=TOLERANCE, **options,
    )  # fmt: skip


@pytest.mark.parametrize("heavy_mass", [1e5, 1e9])
@pytest.mark.parametrize("solver", SOLVER_NAMES)
def test_a_light_box_far_away_does_not_move_a_heavy_resting_box(solver, heavy_mass):
    """The heavy box stays within 1 mm of its rest height at every frame, as it does alone.

    Before islands, PROX's global r-factor (``1 / max lambda_max`` over all contacts, set by the 1 kg box) let the
    heavy box's rows move by about 1e-5 of their error per sweep: it sank 77 cm and jumped 2.7 m (1e5 kg), or fell
    through the ground (1e9 kg).
    """
    both = _bake(_ground_and_boxes(heavy_mass), solver)
    alone = _bake(_ground_and_boxes(heavy_mass, light=False), solver)
    heavy_z = both.body_pos[:, 1, 2]
    assert np.abs(alone.body_pos[:, 1, 2] - HALF).max() < 1e-3
    assert np.abs(heavy_z - HALF).max() < 1e-3, f"heavy box between {heavy_z.min():.4f} and {heavy_z.max():.4f} m"
    assert np.abs(heavy_z - alone.body_pos[:, 1, 2]).max() < 1e-3
    assert np.abs(both.body_pos[:, 2, 2] - HALF).max() < 1e-3  # the light box rests too
    if solver == "PROX":
        # each island is solved as if alone: the heavy box's motion is the lone box's, bit for bit
        assert both.body_pos[:, 1].tobytes() == alone.body_pos[:, 1].tobytes()
        assert both.body_quat[:, 1].tobytes() == alone.body_quat[:, 1].tobytes()


@pytest.mark.parametrize("strategy", [RFactorStrategy.GLOBAL, RFactorStrategy.LOCAL])
def test_prox_solves_each_island_of_a_scene_as_if_alone(strategy):
    """Two stacks 5 m apart (a 30 kg box on a 1 kg one, and two 1 kg boxes): each moves as it does in a scene of
    its own, bit for bit, although the first one's r backs off many times (a shared back-off slowed the other)."""

    def stacks(which):
        b = ModelBuilder(gravity=(0, 0, -G))
        ground = b.add_body(kind=BodyKind.KINEMATIC)
        b.add_shape_plane(ground, mu=0.6)
        for x, top in ((0.0, 30.0), (5.0, 1.0)):
            if x in which:
                low = b.add_body(pos=(x, 0, 0.25), mass=1.0, omega=(0, 0, 2.0))
                b.add_shape_box(low, (0.25, 0.25, 0.25), mu=0.6)
                high = b.add_body(pos=(x + 0.05, 0, 0.75), quat=(0.99, 0, 0, 0.14), mass=top)
                b.add_shape_box(high, (0.25, 0.25, 0.25), mu=0.6)
        return b.finalize()

    both = _bake(stacks((0.0, 5.0)), "PROX", r_strategy=strategy)
    first = _bake(stacks((0.0,)), "PROX", r_strategy=strategy)
    second = _bake(stacks((5.0,)), "PROX", r_strategy=strategy)
    assert both.body_pos[:, 1:3].tobytes() == first.body_pos[:, 1:3].tobytes()
    assert both.body_pos[:, 3:5].tobytes() == second.body_pos[:, 1:3].tobytes()
    assert both.body_quat[:, 3:5].tobytes() == second.body_quat[:, 1:3].tobytes()


def _brute_force_islands(body0, body1, inv_mass):
    """Contact sets of the connected components, by repeated merging of contacts that share a finite-mass body."""
    groups = [{k} for k in range(len(body0))]
    merged = True
    while merged:
        merged = False
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                bodies_i = {b for k in groups[i] for b in (body0[k], body1[k]) if inv_mass[b] > 0.0}
                bodies_j = {b for k in groups[j] for b in (body0[k], body1[k]) if inv_mass[b] > 0.0}
                if bodies_i & bodies_j:
                    groups[i] |= groups.pop(j)
                    merged = True
                    break
            if merged:
                break
    return sorted(sorted(g) for g in groups)


def test_contact_islands_match_brute_force_connected_components():
    """Random contact graphs (bodies 0-2 have infinite mass, as the ground and kinematic bodies, and every contact
    has a finite-mass body): the same islands as a brute-force merge, numbered in the order of their first contact,
    each keeping its contacts in increasing order."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        nb = int(rng.integers(4, 12))
        c = int(rng.integers(0, 20))
        inv_mass = np.where(np.arange(nb) < 3, 0.0, 1.0)
        body1 = rng.integers(3, nb, c)
        body0 = (body1 + rng.integers(1, nb, c)) % nb  # no contact of a body with itself
        body0, body1 = body0.astype(np.int32), body1.astype(np.int32)  # the engine's dtype: one compiled kernel
        island_contacts = np.zeros(c, np.int64)
        island_start = np.zeros(c + 1, np.int64)
        count = contact_islands(
            body0, body1, c, inv_mass, np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros(c, np.int64),
            island_contacts, island_start,
        )  # fmt: skip
        islands = [island_contacts[island_start[i] : island_start[i + 1]].tolist() for i in range(count)]
        assert all(island == sorted(island) and island for island in islands)
        assert [island[0] for island in islands] == sorted(island[0] for island in islands)
        assert sorted(islands) == _brute_force_islands(body0, body1, inv_mass)
