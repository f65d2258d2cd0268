"""Contact islands: a body's mass changes nothing in bodies it never touches, with every solver the add-on offers.

References: the analytic rest height of a box on the ground, the same box simulated alone (bit for bit with PROX,
whose islands are solved as if alone) and a brute-force connected-components search for the island kernel.
"""

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder, RFactorStrategy, simulate
from contact_lab.core.contact_solvers.islands import contact_islands, contact_joint_islands
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


def _brute_force_components(nb, edges, inv_mass):
    """Component label (smallest member) of every finite-mass body, by repeated relaxation over the edges."""
    comp = list(range(nb))
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            if a >= 0 and b >= 0 and inv_mass[a] > 0.0 and inv_mass[b] > 0.0 and comp[a] != comp[b]:
                comp[a] = comp[b] = min(comp[a], comp[b])
                changed = True
    return comp


def test_joints_unite_islands_and_each_island_lists_its_joints():
    """Random contact and joint graphs (bodies 0-2 of infinite mass, -1 the world): the islands are the components
    of contacts and joints together that hold a contact (brute force), each joint is listed once, in its island,
    or after the last island when no contact reaches its bodies; without joints the contacts' islands are those
    of :func:`contact_islands`."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        nb = int(rng.integers(4, 14))
        c = int(rng.integers(0, 12))
        nj = int(rng.integers(0, 10))
        inv_mass = np.where(np.arange(nb) < 3, 0.0, 1.0)
        body1 = rng.integers(3, nb, c)
        body0 = (body1 + rng.integers(1, nb, c)) % nb
        joint_body = np.stack([rng.integers(-1, nb, nj), rng.integers(3, nb, nj)], axis=1).astype(np.int64)
        out = [np.zeros(c, np.int64), np.zeros(c + 1, np.int64), np.zeros(nj, np.int64), np.zeros(c + 2, np.int64)]
        count = contact_joint_islands(
            body0, body1, c, inv_mass, joint_body, np.zeros(nb, np.int64), np.zeros(nb, np.int64),
            np.zeros(c, np.int64), out[0], out[1], np.zeros(nj, np.int64), out[2], out[3],
        )  # fmt: skip
        island_contacts, island_start, island_joints, joint_start = out
        edges = list(zip(body0, body1, strict=True)) + [tuple(e) for e in joint_body]
        comp = _brute_force_components(nb, edges, inv_mass)

        def finite(pair, inv_mass=inv_mass):
            return [b for b in pair if b >= 0 and inv_mass[b] > 0.0]

        for i in range(count):
            contacts = island_contacts[island_start[i] : island_start[i + 1]].tolist()
            members = {comp[b] for k in contacts for b in finite((body0[k], body1[k]))}
            assert len(members) == 1 and contacts == sorted(contacts)
            joints = island_joints[joint_start[i] : joint_start[i + 1]].tolist()
            assert joints == sorted(joints)
            expected = [j for j in range(nj) if {comp[b] for b in finite(joint_body[j])} == members]
            assert joints == expected
        free = island_joints[joint_start[count] : joint_start[count + 1]].tolist()
        reached = {comp[b] for k in range(c) for b in finite((body0[k], body1[k]))}
        assert free == [j for j in range(nj) if not {comp[b] for b in finite(joint_body[j])} & reached]
        assert sorted(island_joints.tolist()) == list(range(nj))
        if nj == 0:
            plain = [np.zeros(c, np.int64), np.zeros(c + 1, np.int64)]
            assert count == contact_islands(
                body0, body1, c, inv_mass, np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros(c, np.int64),
                plain[0], plain[1],
            )  # fmt: skip
            assert plain[0].tolist() == island_contacts.tolist()
