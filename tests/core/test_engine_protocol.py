"""The three engines follow one protocol, and each result records exactly what its frame loop computed.

Every engine package exposes a settings record, a builder that finalizes an immutable model, ``iter_simulate`` (a
generator yielding ``(frame, result)`` after every frame), ``simulate`` (runs it out) and a result with the same
per-frame statistics (``solver_iterations``, ``contact_count``, ``converged``) that saves to and loads from an
``.npz`` file. A tiny scene per engine checks what it yields against free fall; the soft and IPC results are
checked against their frame loops' own states and steps, bit for bit.
"""

import numpy as np
import pytest
from contact_lab.core import ipc, rigid, soft
from contact_lab.core.enums import BodyKind, ShapeType
from contact_lab.core.errors import DivergenceError, SoftWorldError
from contact_lab.core.fem.primitives import box_tet_mesh
from contact_lab.core.fem.world import ColliderKind
from contact_lab.core.ipc.ipc_solver import IpcSolver
from contact_lab.core.soft.frame_loop import check_finite
from contact_lab.core.soft.world_solver import SoftWorldSolver

G = 9.81
FPS = 24.0
COMMON_STATISTICS = {"solver_iterations": np.int64, "contact_count": np.int64, "converged": np.bool_}
"""The per-frame statistics every engine's result has: name -> dtype (each of shape (frame_count,))."""


def _dropped_cube(gap):
    b = soft.SoftWorldBuilder()
    V, T = box_tet_mesh((2, 2, 2), np.array([-0.05, -0.05, gap]), np.array([0.05, 0.05, 0.1 + gap]))
    b.add_soft_body(V, T, youngs_modulus=1e5, density=800)
    b.add_collider(ShapeType.PLANE, friction=0.5)
    return b.finalize()


@pytest.mark.parametrize(
    ("engine", "builder", "result"),
    [
        (rigid, rigid.ModelBuilder, rigid.Trajectory),
        (soft, soft.SoftWorldBuilder, soft.SoftTrajectory),
        (ipc, ipc.IpcWorldBuilder, ipc.IpcTrajectory),
    ],
)
def test_every_engine_has_the_same_outside_shape(engine, builder, result):
    """Builder with finalize, iter_simulate and simulate, and a result that counts its frames."""
    assert callable(builder.finalize)
    assert callable(engine.iter_simulate) and callable(engine.simulate)
    record = result(3, 2)
    assert record.frame_count == 3 and record.frames_done == 0


def test_soft_trajectory_records_the_frame_loop_bit_for_bit():
    """soft.iter_simulate's trajectory equals the states and step statistics of iter_simulate_soft."""
    world = _dropped_cube(gap=0.004)
    settings = soft.SoftSettings(substeps=2)
    expected = [
        (state.x.copy(), state.stats)
        for _, state in soft.iter_simulate_soft(world, frame_count=7, fps=30, settings=settings)
    ]
    seen = []
    for frame, traj in soft.iter_simulate(world, frame_count=7, fps=30, settings=settings):
        assert traj.frames_done == frame + 1
        seen.append(frame)
    assert seen == list(range(7))
    for f, (x, stats) in enumerate(expected):
        assert np.array_equal(traj.node_pos[f], x)
        if f > 0:
            assert traj.newton_iterations[f] == stats.newton_iterations
            assert traj.pcg_iterations[f] == stats.pcg_iterations
            assert traj.contact_count[f] == stats.contact_count
            assert traj.max_penetration[f] == stats.max_penetration
            assert traj.converged[f] == stats.converged
    assert traj.contact_count[-1] > 0  # the cube landed: the statistics are not trivially zero
    assert np.array_equal(soft.simulate(world, frame_count=7, fps=30, settings=settings).node_pos, traj.node_pos)


def test_ipc_trajectory_records_the_frame_loop_bit_for_bit():
    """ipc.iter_simulate's trajectory equals the states, statistics and checker counts of iter_simulate_ipc."""
    world = ipc.IpcWorld(_dropped_cube(gap=0.002))
    settings = ipc.IpcSettings(check_intersections=True)
    expected = [
        (s.x.copy(), s.stats) for _, s in ipc.iter_simulate_ipc(world, frame_count=6, fps=30, settings=settings)
    ]
    traj = ipc.simulate(world, frame_count=6, fps=30, settings=settings)
    assert traj.frames_done == 6
    for f, (x, stats) in enumerate(expected):
        assert np.array_equal(traj.node_pos[f], x)
        assert traj.intersections[f] == stats.intersections and traj.inverted[f] == stats.inverted
        if f > 0:
            assert traj.newton_iterations[f] == stats.newton_iterations
            assert traj.contact_count[f] == stats.contact_count
            assert traj.friction_count[f] == stats.friction_count
            assert traj.min_distance[f] == stats.min_distance
            assert traj.kappa[f] == stats.kappa
    assert np.isfinite(traj.min_distance[1:]).any()  # the cube came within dhat of the plane


def test_divergence_names_the_body_whose_node_stopped_being_finite():
    """A non-finite node of the second of two bodies names that body, in a soft and in an IPC state.

    Regression: the IPC frame loop looked up bodies by flat (node, axis) indices, so it named the wrong body
    or failed with an IndexError; both loops now share ``check_finite``.
    """
    b = soft.SoftWorldBuilder()
    for k, name in enumerate(("left", "right")):
        V, T = box_tet_mesh((2, 2, 2), np.array([0.3 * k, 0.0, 0.01]), np.array([0.3 * k + 0.1, 0.1, 0.11]))
        b.add_soft_body(V, T, name=name)
    world = b.finalize()
    for state in (world.state(), ipc.IpcWorld(world).state()):
        last = int(world.body_node_start[2]) - 1  # the right cube's last node: its flat z index is far past the nodes
        state.x[last, 2] = np.nan
        with pytest.raises(DivergenceError) as info:
            check_finite(world, state, 3)
        assert info.value.frame == 3 and info.value.body_label == ["right"] and info.value.body_index == [1]


# ---- one protocol: a tiny scene per engine --------------------------------------------------------------------
def _rigid_box(height):
    """A 0.2 m box whose centre is ``height`` above a kinematic ground plane: (model, body index)."""
    b = rigid.ModelBuilder(gravity=(0.0, 0.0, -G))
    ground = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(ground, mu=0.5)
    box = b.add_body(pos=(0.0, 0.0, height), mass=1.0)
    b.add_shape_box(box, (0.1, 0.1, 0.1), mu=0.5)
    return b.finalize(), box


def _cube(builder, gap):
    V, T = box_tet_mesh((1, 1, 1), np.array([-0.05, -0.05, gap]), np.array([0.05, 0.05, 0.1 + gap]))
    builder.add_soft_body(V, T, youngs_modulus=1e5, density=800)
    builder.add_collider(ShapeType.PLANE, friction=0.5)
    return builder.finalize()


def _rigid_heights(traj):
    return traj.body_pos[:, 1, 2]


def _node_heights(traj):
    return traj.node_pos[:, :, 2].mean(axis=1)


ENGINES = {
    # engine: (scene(gap) -> model, settings record, substeps, heights of the falling body per frame)
    "rigid": (lambda gap: _rigid_box(0.1 + gap)[0], rigid.RigidSettings(substeps=4), 4, _rigid_heights),
    "soft": (lambda gap: _cube(soft.SoftWorldBuilder(), gap), soft.SoftSettings(substeps=2), 2, _node_heights),
    "ipc": (lambda gap: _cube(ipc.IpcWorldBuilder(), gap), ipc.IpcSettings(substeps=1), 1, _node_heights),
}


def _free_fall_drop(frame: int, substeps: int) -> float:
    """How far a body at rest falls in ``frame`` frames of steps ``h = 1 / (FPS substeps)`` [m].

    All three integrators agree in free fall: the rigid engine's symplectic Euler and the soft and IPC engines'
    backward Euler both set ``v_{k+1} = v_k - g h`` and then ``x_{k+1} = x_k + h v_{k+1}``, so after ``n`` steps
    the drop is ``g h^2 n (n + 1) / 2`` exactly (a little more than the continuous ``g t^2 / 2``).
    """
    n, h = frame * substeps, 1.0 / (FPS * substeps)
    return G * h * h * n * (n + 1) / 2.0


@pytest.mark.parametrize("name", list(ENGINES))
def test_each_engine_yields_its_frames_in_order_with_the_common_statistics(name):
    """3 frames of a body 0.5 m above the ground: frames 0, 1, 2 in order, one result filled in place, the common
    statistics with their names, shapes and dtypes, the free-fall drop (no contact yet), and a bit-exact
    save/load round trip."""
    engine = {"rigid": rigid, "soft": soft, "ipc": ipc}[name]
    scene, settings, substeps, heights = ENGINES[name]
    model = scene(0.5)
    frames, results = [], []
    for frame, result in engine.iter_simulate(model, frame_count=3, fps=FPS, settings=settings):
        frames.append(frame)
        results.append(result)
        assert result.frames_done == frame + 1
    assert frames == [0, 1, 2] and all(r is results[0] for r in results)
    traj = results[-1]
    for stat, dtype in COMMON_STATISTICS.items():
        values = getattr(traj, stat)
        assert values.shape == (3,) and values.dtype == dtype, stat
    assert traj.contact_count.tolist() == [0, 0, 0] and traj.converged.all()
    if name != "rigid":  # a rigid step without contacts has nothing to solve (0 sweeps); Newton iterates
        assert (traj.solver_iterations[1:] >= 1).all()
    z = heights(traj)
    expected = [_free_fall_drop(f, substeps) for f in range(3)]
    # the rigid step is explicit in free fall (exact to rounding); the implicit ones stop Newton at a relative
    # residual of ~1e-6 or below, far below the 1e-7 m asked here (the drops are 8.5 mm and 34 mm)
    assert z[0] - z == pytest.approx(expected, rel=0.0, abs=1e-7)


@pytest.mark.parametrize("name", list(ENGINES))
def test_each_result_saves_and_loads_bit_for_bit(name, tmp_path):
    """save_npz then load_npz gives back every array, values and dtypes, of a run that touched the ground."""
    engine = {"rigid": rigid, "soft": soft, "ipc": ipc}[name]
    scene, settings, _, _ = ENGINES[name]
    traj = engine.simulate(scene(0.002), frame_count=4, fps=FPS, settings=settings)
    assert traj.contact_count.max() > 0  # the statistics are not trivially zero
    path = tmp_path / f"{name}.npz"
    traj.save_npz(path)
    loaded = type(traj).load_npz(path)
    assert type(loaded) is type(traj) and loaded.frame_count == 4 and loaded.frames_done == 4
    arrays = {k: v for k, v in vars(traj).items() if isinstance(v, np.ndarray)}
    assert set(COMMON_STATISTICS) <= set(arrays)
    for key, value in arrays.items():
        got = getattr(loaded, key)
        assert got.dtype == value.dtype and got.shape == value.shape, key
        assert got.tobytes() == value.tobytes(), key


def test_rigid_keywords_and_settings_record_give_the_same_trajectory():
    """The older keyword form (settings and a solver option by name) is folded into a RigidSettings: bit for bit
    the trajectory of the record form; both forms together are a TypeError naming the extra keyword."""
    model, _ = _rigid_box(0.1005)  # resting on the ground: contacts, so the solver and its option matter
    keywords = dict(substeps=3, solver="PGS", iterations=7, tolerance=1e-9, warm_start=False)
    settings = rigid.RigidSettings(
        substeps=3, solver="PGS", iterations=7, tolerance=1e-9, solver_options={"warm_start": False}
    )
    old = rigid.simulate(model, frame_count=4, fps=FPS, **keywords)
    new = rigid.simulate(model, frame_count=4, fps=FPS, settings=settings)
    default = rigid.simulate(model, frame_count=4, fps=FPS)
    assert old.contact_count[1:].min() > 0
    for key, value in vars(old).items():
        if isinstance(value, np.ndarray):
            assert value.tobytes() == getattr(new, key).tobytes(), key
    assert not np.array_equal(old.solver_iterations, default.solver_iterations)  # the keywords were not ignored
    with pytest.raises(TypeError, match="warm_start"):
        next(rigid.iter_simulate(model, frame_count=2, settings=settings, warm_start=True))


def test_rigid_settings_check_themselves():
    """RigidSettings rejects what the frame loop rejected, with the same messages."""
    with pytest.raises(ValueError, match="substeps must be at least 1"):
        rigid.RigidSettings(substeps=0)
    with pytest.raises(ValueError, match="must be positive"):
        rigid.RigidSettings(sleeping=True, sleep_time=0.0)
    rigid.RigidSettings(sleeping=False, sleep_time=0.0)  # the thresholds matter only when sleeping


def _record_steps(monkeypatch, solver_class):
    """Wrap ``solver_class.step`` so every step's (Newton iterations, contact count) is recorded, in order."""
    seen = []
    real = solver_class.step

    def step(self, *args, **kwargs):
        stats = real(self, *args, **kwargs)
        seen.append((stats.newton_iterations, stats.contact_count))
        return stats

    monkeypatch.setattr(solver_class, "step", step)
    return seen


def test_soft_frame_statistics_are_the_maxima_over_the_frame_steps(monkeypatch):
    """solver_iterations and contact_count of a soft frame are the largest of its steps' own counts."""
    seen = _record_steps(monkeypatch, SoftWorldSolver)
    traj = soft.simulate(_dropped_cube(gap=0.004), frame_count=5, fps=30, settings=soft.SoftSettings(substeps=3))
    per_frame = np.array(seen).reshape(4, 3, 2)  # 4 frames of 3 steps each
    assert traj.solver_iterations[1:].tolist() == per_frame[:, :, 0].max(axis=1).tolist()
    assert traj.contact_count[1:].tolist() == per_frame[:, :, 1].max(axis=1).tolist()
    assert traj.contact_count.max() > 0 and traj.solver_iterations[0] == traj.contact_count[0] == 0


def test_ipc_frame_statistics_are_the_maxima_over_the_frame_steps(monkeypatch):
    """An IPC frame's solver_iterations is its most Newton iterations of one solve (newton_max) and its
    contact_count the most contacts of one step (the scene takes no halved step, so every solve is a step)."""
    seen = _record_steps(monkeypatch, IpcSolver)
    world = ipc.IpcWorldBuilder()
    traj = ipc.simulate(_cube(world, 0.002), frame_count=4, fps=30, settings=ipc.IpcSettings(substeps=2))
    assert traj.splits.sum() == 0 and len(seen) == 6
    per_frame = np.array(seen).reshape(3, 2, 2)
    assert traj.solver_iterations[1:].tolist() == per_frame[:, :, 0].max(axis=1).tolist()
    assert np.array_equal(traj.solver_iterations, traj.newton_max)
    assert traj.contact_count[1:].tolist() == per_frame[:, :, 1].max(axis=1).tolist()
    assert traj.contact_count.max() > 0


def test_ipc_builder_finalizes_the_world_the_wrapper_builds():
    """IpcWorldBuilder (bodies, an analytic and a kinematic mesh collider) gives the world IpcWorld(SoftWorld, meshes)
    gives, and one around a finalized soft world the same again; a malformed mesh is refused when added."""
    V, T = box_tet_mesh((1, 1, 1), np.zeros(3), np.full(3, 0.1))
    wall_v = np.array([[0.0, -1.0, -1.0], [0.0, 1.0, -1.0], [0.0, 0.0, 1.0]])
    wall_t = np.array([[0, 1, 2]])
    b = ipc.IpcWorldBuilder(gravity=(0.0, 0.0, -1.0))
    b.add_soft_body(V, T, name="cube")
    b.add_collider(ShapeType.PLANE, friction=0.3)
    assert b.add_mesh_collider(wall_v, wall_t, kind=ColliderKind.KINEMATIC, position=(0.5, 0, 0), name="wall") == 0
    built = b.finalize()
    s = soft.SoftWorldBuilder(gravity=(0.0, 0.0, -1.0))
    s.add_soft_body(V, T, name="cube")
    s.add_collider(ShapeType.PLANE, friction=0.3)
    soft_world = s.finalize()
    mesh = ipc.MeshCollider(wall_v, wall_t, ColliderKind.KINEMATIC, position=np.array([0.5, 0.0, 0.0]), name="wall")
    wrapped = ipc.IpcWorld(soft_world, [mesh])
    around = ipc.IpcWorldBuilder.around(soft_world)
    around.add_mesh_colliders([mesh])
    for world in (wrapped, around.finalize()):
        assert world.collider_names == built.collider_names == ["collider 0", "wall"]
        for key in ("node_mass", "surface_nodes", "surface_offset", "faces", "edges", "collider_kind"):
            assert np.array_equal(getattr(world, key), getattr(built, key)), key
        assert np.array_equal(world.initial_positions(), built.initial_positions())
    with pytest.raises(SoftWorldError, match="bad mesh"):
        b.add_mesh_collider(wall_v, np.array([[0, 1, 3]]), name="bad mesh")
    around.add_soft_body(V, T)
    with pytest.raises(SoftWorldError, match="finalized soft world"):
        around.finalize()
