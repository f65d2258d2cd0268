"""Soft-body bakes through real Blender, compared with the core soft simulation run directly.

The references below build the soft world themselves (lattice of the mesh, embedding, pins, colliders) from
the same inputs, without :mod:`contact_lab.addon.soft.gather`, run ``iter_simulate_soft`` and apply the
embedding with numpy. Scenes are small (lattice resolution 2–3, a few frames): this tier runs on three Blenders.
"""

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

import mesh_readback  # noqa: E402
from contact_lab.addon.output import deform as deform_output  # noqa: E402
from contact_lab.addon.output.caches import cache_file_name  # noqa: E402
from contact_lab.addon.soft import gather as soft_export  # noqa: E402
from contact_lab.core import DivergenceError  # noqa: E402
from contact_lab.core.enums import ShapeType  # noqa: E402
from contact_lab.core.fem.lattice import tetrahedralize_lattice  # noqa: E402
from contact_lab.core.fem.world import ColliderKind, SoftWorldBuilder  # noqa: E402
from contact_lab.core.formats import pc2  # noqa: E402
from contact_lab.core.soft import frame_loop as simulate_soft  # noqa: E402
from contact_lab.core.soft.contact_samples import embed_in_lattice, face_sample_points  # noqa: E402
from mesh_readback import evaluated_world, mesh_arrays  # noqa: E402

pytestmark = pytest.mark.blender

TOL = 1e-5
"""Positions [m]: the float32 storage of shape keys / PC2 files."""

FRAMES = 7
RESOLUTION = 3


# scene building ----------------------------------------------------------------------------------------


def add_soft_cube(name="Jelly", location=(0.0, 0.0, 1.0), size=1.0, *, preset="GEL", resolution=RESOLUTION):
    bpy.ops.mesh.primitive_cube_add(size=size, location=location)
    obj = bpy.context.object
    obj.name = name
    s = obj.contact_lab
    s.role = "SOFT"
    s.soft_preset = preset
    s.lattice_resolution = resolution
    return obj


def build_soft_drop(lab, output="SHAPE_KEYS", frame_end=FRAMES):
    """A soft gel cube starting 3 cm above a passive ground plane, over frames 1..frame_end."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frame_end
    scene.contact_lab.engine = "SOFT"
    scene.contact_lab.soft_output = output
    lab.add_ground(size=10.0)
    cube = add_soft_cube(location=(0.2, -0.1, 0.53))
    scene.frame_set(1)
    return scene, cube


def reference(scene, soft, *, pinned_render=None, frame_count=None):
    """Simulate ``soft`` (un-rotated, unit scale) on the scene's ground plane with the core directly.

    Returns:
        ``(render world positions (F, V, 3) [m], lattice)``.
    """
    frame_count = frame_count or scene.frame_end - scene.frame_start + 1
    local, tris = mesh_arrays(soft)
    lattice = tetrahedralize_lattice(local, tris, resolution=soft.contact_lab.lattice_resolution)
    origin = np.array(soft.matrix_world)[:3, 3]
    s = soft.contact_lab
    pinned = np.zeros(lattice.tet_vertices.shape[0], dtype=bool)
    if pinned_render is not None:
        pinned[lattice.tet_indices[lattice.embed_tet[pinned_render]].ravel()] = True
    # the mesh's vertices collide, and samples on its edges and faces at most a lattice cell apart
    sample_tet, sample_weights = embed_in_lattice(lattice, face_sample_points(local, tris, lattice.cell_size))
    b = SoftWorldBuilder(gravity=tuple(scene.gravity))
    body = b.add_soft_body(
        lattice.tet_vertices + origin,
        lattice.tet_indices,
        density=s.density,
        youngs_modulus=s.youngs_modulus,
        poisson_ratio=s.poisson_ratio,
        damping=s.damping,
        friction=s.friction,
        pinned=pinned,
        contact_points=(
            np.concatenate([lattice.embed_tet, sample_tet]),
            np.concatenate([lattice.embed_weights, sample_weights]),
        ),
        contact_triangles=tris,
        tet_volume_fraction=lattice.tet_volume_fraction,  # the body weighs its mesh, not its lattice
    )
    ground = bpy.data.objects.get("Ground")
    if ground is not None:
        b.add_collider(ShapeType.PLANE, kind=ColliderKind.STATIC, friction=ground.contact_lab.friction)
    world = b.finalize()
    settings = simulate_soft.SoftSettings(
        substeps=scene.contact_lab.soft_substeps,
        formulation=scene.contact_lab.soft_contact,
        dual_solver="PGS" if scene.contact_lab.solver == "PGS" else "PROX",
        integrator=scene.contact_lab.soft_integrator if scene.contact_lab.soft_contact == "IMPLICIT" else "BE",
        friction_velocity=scene.contact_lab.soft_friction_velocity,  # [m/s], not a length
        friction_anchor=True,  # the add-on's friction: a sticking contact is held where it stuck
    )
    track = None
    if pinned.any():
        frames = range(scene.frame_start, scene.frame_start + frame_count)
        track = {body: np.stack([_world_matrix_at(scene, soft, f) for f in frames])}
    out = []
    for _, state in simulate_soft.iter_simulate_soft(
        world, frame_count=frame_count, fps=scene.render.fps, settings=settings, pin_tracks=track
    ):
        x = world.body_positions(state, body)
        out.append(np.einsum("vj,vjk->vk", lattice.embed_weights, x[lattice.tet_indices[lattice.embed_tet]]))
    return np.array(out), lattice


def _world_matrix_at(scene, obj, frame):
    scene.frame_set(frame)
    return np.array(obj.matrix_world)


def scene_state(scene):
    """Everything a failed soft bake must not change: shape keys (with their coordinates), modifiers, mesh,
    actions."""
    return mesh_readback.scene_state(scene, key_blocks=True)


# tests --------------------------------------------------------------------------------------------------------


def test_dual_contact_bake_matches_core(lab):
    """Soft Contact 'Dual' with the PGS solver: the baked shape keys equal the core's DUAL run, and the
    hard contact leaves the cube on the plane (no contact layer)."""
    scene, cube = build_soft_drop(lab)
    scene.contact_lab.soft_contact = "DUAL"
    scene.contact_lab.solver = "PGS"
    expected, _ = reference(scene, cube)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    np.testing.assert_allclose(evaluated_world(cube, FRAMES), expected[-1], atol=TOL, rtol=0)
    assert abs(expected[-1][:, 2].min()) < 1e-4


def test_bdf2_bake_matches_core(lab):
    """Integrator 'BDF2': the baked shape keys equal the core's BDF2 run (which differs from BE's)."""
    scene, cube = build_soft_drop(lab)
    expected_be, _ = reference(scene, cube)
    scene.contact_lab.soft_integrator = "BDF2"
    expected, _ = reference(scene, cube)
    assert np.abs(expected[-1] - expected_be[-1]).max() > 1e-4
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    np.testing.assert_allclose(evaluated_world(cube, FRAMES), expected[-1], atol=TOL, rtol=0)


def test_shape_key_bake_matches_core_and_clear_removes_it(lab):
    """SHAPE_KEYS: the evaluated mesh equals the directly simulated, embedded positions; clear removes the keys."""
    scene, cube = build_soft_drop(lab)
    expected, lattice = reference(scene, cube)
    matrix_before = np.array(cube.matrix_world)

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    assert scene.frame_current == 1
    np.testing.assert_array_equal(np.array(cube.matrix_world), matrix_before)  # the transform is not touched
    assert cube.animation_data is None
    key = cube.data.shape_keys
    assert [b.name for b in key.key_blocks] == ["Basis"] + [f"contact_lab_{f:05d}" for f in range(1, FRAMES + 1)]
    for frame in (1, 3, 5, FRAMES):
        got = evaluated_world(cube, frame)
        np.testing.assert_allclose(got, expected[frame - 1], atol=TOL, rtol=0, err_msg=f"frame {frame}")
    # the reference really fell onto the plane and rests on it (its corners are the contact points)
    lowest = expected[:, :, 2].min(axis=1)
    assert lowest[0] - lowest[-1] > 0.02 and 0.0 < lowest[-1] < 0.01  # resting in the contact layer
    report = json.loads(scene.contact_lab.last_report)
    assert report["status"] == "FINISHED" and report["engine"] == "SOFT"
    assert report["bodies"] == {"soft": ["Jelly"], "active": [], "passive": ["Ground"]}
    # the automatic contact layer is reported as used: 0.5 % of the lattice extent
    extent = float(np.ptp(lattice.tet_vertices, axis=0).max())
    assert report["settings"]["contact_thickness"] == pytest.approx(0.005 * extent, rel=1e-9)
    assert report["settings"]["contact_thickness_automatic"] and report["settings"]["integrator"] == "BE"
    stats = report["stats"]
    assert stats["tets"] == lattice.tet_count and stats["vertices"] == lattice.tet_vertices.shape[0]
    assert stats["render_vertices"] == 8 and stats["max_newton_iterations"] >= 1
    assert stats["mean_newton_iterations"] > 0 and stats["seconds_per_frame"] > 0 and stats["max_contacts"] > 0

    # the panels draw the soft settings and this report in real Blender
    from contact_lab.panels import physics

    bpy.context.view_layer.objects.active = cube
    layout = lab.FakeLayout()
    physics.CONTACT_LAB_PT_scene.draw(types.SimpleNamespace(layout=layout), bpy.context)
    assert {"engine", "soft_output", "soft_substeps", "soft_contact_thickness"} <= set(layout.props())
    assert f"Tets: {lattice.tet_count}, lattice vertices: {stats['vertices']}, mesh vertices: 8" in layout.labels()
    cube.contact_lab.pin_group = "Missing"
    layout = lab.FakeLayout()
    physics.CONTACT_LAB_PT_object.draw(types.SimpleNamespace(layout=layout), bpy.context)
    assert {"soft_preset", "youngs_modulus", "pin_group", "lattice_resolution"} <= set(layout.props())
    assert "No vertex group 'Missing'" in layout.labels() and "Baked into shape keys" in layout.labels()
    cube.contact_lab.pin_group = ""

    assert bpy.ops.contact_lab.clear_bake() == {"FINISHED"}
    assert cube.data.shape_keys is None and len(bpy.data.shape_keys) == 0
    np.testing.assert_allclose(evaluated_world(cube, FRAMES), expected[0], atol=TOL)  # back to the rest shape


def test_pc2_bake_matches_core_and_clear_removes_the_modifier(lab, tmp_path):
    """PC2: the file read back and the Mesh Cache modifier's evaluated mesh equal the core's positions."""
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))  # '//' needs a saved file
    scene, cube = build_soft_drop(lab, output="PC2")
    expected, _ = reference(scene, cube)

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    path = tmp_path / "contact_lab_cache" / cache_file_name(str(tmp_path / "shot.blend"), "Scene", "Jelly")
    assert path.is_file()
    positions, start, rate = pc2.read_pc2(path)
    assert (positions.shape, start, rate) == ((FRAMES, 8, 3), 1.0, 1.0)
    origin = np.array(cube.matrix_world)[:3, 3]
    np.testing.assert_allclose(positions + origin, expected, atol=TOL)
    modifier = cube.modifiers[deform_output.CACHE_MODIFIER_NAME]
    assert modifier.type == "MESH_CACHE" and modifier.filepath.startswith("//")
    assert cube.data.shape_keys is None
    for frame in (1, 4, FRAMES):
        np.testing.assert_allclose(evaluated_world(cube, frame), expected[frame - 1], atol=TOL, err_msg=f"{frame}")
    report = json.loads(scene.contact_lab.last_report)
    assert report["files"] == [str(path)]

    # re-baking as shape keys replaces the cache modifier instead of stacking both outputs
    scene.contact_lab.soft_output = "SHAPE_KEYS"
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert deform_output.CACHE_MODIFIER_NAME not in cube.modifiers and cube.data.shape_keys is not None
    np.testing.assert_allclose(evaluated_world(cube, FRAMES), expected[-1], atol=TOL)

    scene.contact_lab.soft_output = "PC2"
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert cube.data.shape_keys is None
    assert bpy.ops.contact_lab.clear_bake() == {"FINISHED"}
    assert not len(cube.modifiers) and path.is_file()  # the file stays on disk
    np.testing.assert_allclose(evaluated_world(cube, FRAMES), expected[0], atol=TOL)


def test_pc2_into_a_relative_folder_of_an_unsaved_file_is_refused(lab):
    """An unsaved .blend has no '//' folder: the bake refuses before simulating and changes nothing."""
    scene, cube = build_soft_drop(lab, output="PC2")
    before = scene_state(scene)
    with pytest.raises(RuntimeError, match="not saved yet"):
        bpy.ops.contact_lab.bake()
    assert scene_state(scene) == before
    assert json.loads(scene.contact_lab.last_report or "{}").get("status") != "FINISHED"


@pytest.mark.parametrize("animated", [False, True], ids=["still", "animated"])
def test_pinned_vertices_follow_the_object(lab, animated):
    """Pin-group vertices stay put (1e-6) on a still object and follow an animated one; the rest sags."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 6
    scene.contact_lab.engine = "SOFT"
    cube = add_soft_cube(location=(0.0, 0.0, 2.0), size=1.0, resolution=2)
    local, _ = mesh_arrays(cube)
    top = np.flatnonzero(local[:, 2] > 0.0)
    group = cube.vertex_groups.new(name="Pins")
    group.add(top.tolist(), 1.0, "REPLACE")
    group.add(np.flatnonzero(local[:, 2] < 0.0)[:1].tolist(), 0.5, "REPLACE")  # 0.5 does not count
    cube.contact_lab.pin_group = "Pins"
    if animated:
        cube.keyframe_insert("location", frame=1)
        cube.location = (0.6, 0.0, 2.0)
        cube.keyframe_insert("location", frame=6)
    scene.frame_set(1)
    pinned = np.zeros(len(local), dtype=bool)
    pinned[top] = True
    expected, _ = reference(scene, cube, pinned_render=pinned)

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    report = json.loads(scene.contact_lab.last_report)
    assert report["stats"]["soft_bodies"][0]["pinned_vertices"] >= 4
    for frame in range(1, 7):
        got = evaluated_world(cube, frame)
        np.testing.assert_allclose(got, expected[frame - 1], atol=TOL, err_msg=f"frame {frame}")
        matrix = np.array(cube.matrix_world)
        target = local[top] @ matrix[:3, :3].T + matrix[:3, 3]
        np.testing.assert_allclose(got[top], target, atol=1e-6, rtol=0, err_msg=f"pinned, frame {frame}")
    free = np.flatnonzero(~pinned)
    final_matrix = np.array(cube.matrix_world)
    sag = (local[free] @ final_matrix[:3, :3].T + final_matrix[:3, 3])[:, 2] - evaluated_world(cube, 6)[free, 2]
    assert sag.max() > 1e-3  # the unpinned part really moved: the check above can fail
    if animated:
        assert np.ptp(evaluated_world(cube, 6)[top, 0] - evaluated_world(cube, 1)[top, 0]) < 1e-6
        assert evaluated_world(cube, 6)[top, 0].mean() - local[top, 0].mean() == pytest.approx(0.6, abs=1e-5)


def test_active_box_is_keyed_from_the_soft_world(lab):
    """An active box in a soft scene becomes a dynamic collider; its keys equal the core's box pose."""
    scene, cube = build_soft_drop(lab, frame_end=6)
    cube.contact_lab.lattice_resolution = 2
    box = lab.add_cube("Crate", (2.0, 0.0, 0.6), size=0.4, mass=3.0)
    box.rotation_euler = (0.0, 0.0, 0.4)
    scene.frame_set(1)
    # the box enters the world as the object's box: size, centre, orientation, mass
    export = soft_export.export_soft_scene(scene)
    world = export.world
    (crate,) = export.dynamic_colliders
    c = crate.collider_index
    assert world.collider_kind[c] == ColliderKind.DYNAMIC and world.collider_names[c] == "Crate"
    np.testing.assert_allclose(world.collider_params[c], (0.2, 0.2, 0.2), atol=1e-7)
    np.testing.assert_allclose(world.collider_position[c], (2.0, 0.0, 0.6), atol=1e-7)
    np.testing.assert_allclose(world.collider_orientation[c], (np.cos(0.2), 0.0, 0.0, np.sin(0.2)), atol=1e-7)
    # the reference runs the exported world directly: the dynamic-box solve is sensitive to round-off of its
    # inputs (1e-8 in the size moves it by 1e-5 within a frame), so it gets bit-identical ones
    settings = simulate_soft.SoftSettings(substeps=export.substeps)
    pos, quat = [], []
    for _, state in simulate_soft.iter_simulate_soft(world, frame_count=6, fps=24.0, settings=settings):
        p, q = world.collider_pose(state, c)
        pos.append(p)
        quat.append(q)
    pos, quat = np.array(pos), np.array(quat)

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    frames, location, quaternion = lab.keyed_transform(box)
    np.testing.assert_array_equal(frames, np.arange(1, 7))
    np.testing.assert_allclose(location, pos, atol=TOL)  # the box's origin is its centre
    np.testing.assert_allclose(quaternion * np.sign(quaternion[:, :1]), quat * np.sign(quat[:, :1]), atol=TOL)
    assert pos[0, 2] - pos[-1, 2] > 0.1  # it fell
    for frame in (1, 6):  # and Blender shows it where the core has it
        scene.frame_set(frame)
        np.testing.assert_allclose(np.array(box.matrix_world)[:3, 3], pos[frame - 1], atol=TOL)
    assert json.loads(scene.contact_lab.last_report)["bodies"]["active"] == ["Crate"]

    assert bpy.ops.contact_lab.clear_bake() == {"FINISHED"}
    assert box.animation_data is None or box.animation_data.action is None
    assert tuple(box.location) == pytest.approx((2.0, 0.0, 0.6))


def test_failed_bakes_leave_the_scene_untouched(lab, monkeypatch):
    """Invalid material, a rigid body the soft engine cannot move, a divergence mid-bake: nothing changes."""
    scene, cube = build_soft_drop(lab, frame_end=5)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}  # a previous bake that must survive the failures
    before = scene_state(scene)

    cube.contact_lab.poisson_ratio = 0.5
    with pytest.raises(RuntimeError, match=r"'Jelly': Poisson ratio must be in \[0, 0.5\)"):
        bpy.ops.contact_lab.bake()
    assert scene_state(scene) == before
    cube.contact_lab.poisson_ratio = 0.45

    ball = lab.add_sphere("Ball", (3.0, 0.0, 1.0))
    before_ball = scene_state(scene)
    with pytest.raises(RuntimeError, match="'Ball': the soft engine simulates active rigid bodies only as boxes"):
        bpy.ops.contact_lab.bake()
    assert scene_state(scene) == before_ball
    ball.contact_lab.role = "NONE"

    real = simulate_soft.iter_simulate_soft

    def diverging(world, **kwargs):
        for frame, state in real(world, **kwargs):
            if frame == 3:
                raise DivergenceError(frame, [0], ["Jelly"])
            yield frame, state

    monkeypatch.setattr(simulate_soft, "iter_simulate_soft", diverging)
    cube.contact_lab.youngs_modulus = 5.0e4  # a different result, were it written
    with pytest.raises(RuntimeError, match="Simulation diverged at frame 4 .*Jelly.*nothing was changed"):
        bpy.ops.contact_lab.bake()
    assert scene_state(scene) == before_ball
    report = json.loads(scene.contact_lab.last_report)
    assert report["status"] == "FAILED" and report["frames"]["simulated"] == 3


def test_modal_stepping_and_cancel(lab):
    """The modal path (time-budgeted steps, as the timer runs them): Esc discards, stepping to the end bakes."""
    from contact_lab.addon.bake import driver as bake

    scene, cube = build_soft_drop(lab, frame_end=5)
    before = scene_state(scene)
    job = bake.start_bake(scene)
    assert isinstance(job, bake.SoftBakeJob) and job.frames_done == 0
    assert not job.step(max_frames=2) and job.frames_done == 2
    report = job.cancel()
    assert report["status"] == "CANCELLED" and scene_state(scene) == before

    job = bake.start_bake(scene)
    while not job.step(max_frames=None, time_budget=0.01):
        assert 0.0 <= job.progress < 1.0 and job.status_text()
    report = job.finish()
    assert report["status"] == "FINISHED" and report["frames"]["simulated"] == 5
    assert len(cube.data.shape_keys.key_blocks) == 6


def test_headless_bake_of_a_soft_scene(lab, tmp_path):
    """``python -m contact_lab bake`` bakes a soft PC2 scene: exit 0, report, cache file next to the output."""
    src, out, report_path = tmp_path / "in.blend", tmp_path / "baked" / "out.blend", tmp_path / "report.json"
    out.parent.mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(src))
    build_soft_drop(lab, output="PC2", frame_end=4)
    bpy.ops.wm.save_as_mainfile(filepath=str(src))

    result = subprocess.run(
        [sys.executable, "-m", "contact_lab", "bake", str(src), "-o", str(out), "--report", str(report_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(report_path.read_text())
    assert report["status"] == "FINISHED" and report["engine"] == "SOFT"
    assert len(report["per_frame"]["newton_iterations"]) == 4
    per_frame = report["per_frame"]
    assert all(len(per_frame[k]) == 4 for k in ("solver_iterations", "contact_count", "converged"))
    assert max(per_frame["solver_iterations"]) == report["stats"]["max_newton_iterations"] >= 1  # every step counts
    cache = out.parent / "contact_lab_cache" / cache_file_name(str(out), "Scene", "Jelly")  # the output owns it
    assert report["files"] == [str(cache)] and cache.is_file()

    bpy.ops.wm.open_mainfile(filepath=str(out))
    modifier = bpy.data.objects["Jelly"].modifiers[deform_output.CACHE_MODIFIER_NAME]
    assert modifier.filepath.replace("\\", "/") == f"//contact_lab_cache/{cache.name}"  # remapped for the new location
    assert os.path.normpath(bpy.path.abspath(modifier.filepath)) == str(cache)


def test_anisotropic_ground_reaches_the_soft_engine(lab):
    """A passive ground with Anisotropic friction along its Y axis becomes an elliptic-friction
    collider in the core, without a warning; a structure source the soft engine cannot read warns."""
    scene, _ = build_soft_drop(lab)
    ground = bpy.data.objects["Ground"]
    ground.rotation_euler = (0.0, 0.0, 0.5)
    s = ground.contact_lab
    s.friction_model, s.structure_source, s.structure_axis = "ANISOTROPIC", "AXIS", "Y"
    s.friction_t, s.friction_b = 0.2, 0.7
    export = soft_export.export_soft_scene(scene)
    c = export.world.collider_names.index("Ground")
    np.testing.assert_allclose(export.world.collider_anisotropy[c], [0.2, 0.7, 1.0, 0.0, 1.0, 0.0], atol=1e-12)
    assert not any("Ground" in w for w in export.warnings)
    s.structure_source = "UV_TANGENT"
    export = soft_export.export_soft_scene(scene)
    assert export.world.collider_anisotropy[c, 2] == 0.0
    assert any("'Ground'" in w and "ignored" in w for w in export.warnings)


def test_an_active_box_is_thrown_by_its_initial_velocity(lab):
    """An active box's Initial Velocity (scene units per second) reaches the soft world in m/s: in free flight the
    box's keys move by v t along x, which gravity does not touch (Unit Scale 0.5: 2 BU/s is 1 m/s)."""
    scene, cube = build_soft_drop(lab, frame_end=3)
    cube.contact_lab.lattice_resolution = 2
    scene.unit_settings.scale_length = 0.5
    box = lab.add_cube("Crate", (4.0, 0.0, 3.0), size=0.4, mass=3.0)
    box.contact_lab.initial_velocity = (2.0, 0.0, 0.0)  # BU/s
    scene.frame_set(1)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    _, location, _ = lab.keyed_transform(box)
    np.testing.assert_allclose(location[:, 0] - 4.0, 2.0 * np.arange(3) / scene.render.fps, atol=1e-5)
    assert location[2, 2] < 3.0  # and it falls


def test_lattice_fit_reaches_both_engines_and_ipcs_mesh_surface_keeps_the_padded_lattice(lab):
    """A cube's faces lie on the lattice's cell planes: Fitted (the default) fills exactly its cells, Padded adds the
    layer beyond its faces. IPC follows Lattice Fit with its default surface (the faces split to the cells); with
    the Mesh surface it builds the padded lattice (it then collides the mesh's own corners, which a fitted lattice
    would make lattice nodes carrying the whole body)."""
    scene, cube = build_soft_drop(lab, frame_end=3)
    n = cube.contact_lab.lattice_resolution
    assert cube.contact_lab.lattice_fit == "FITTED"
    assert soft_export.export_soft_scene(scene).world.tet_count == 6 * n**3
    cube.contact_lab.lattice_fit = "PADDED"
    assert soft_export.export_soft_scene(scene).world.tet_count == 6 * (n + 2) ** 3
    cube.contact_lab.lattice_fit = "FITTED"
    scene.contact_lab.engine = "IPC"
    from contact_lab.addon.ipc import gather as ipc_export

    assert ipc_export.export_ipc_scene(scene).world.tet_count == 6 * n**3
    cube.contact_lab.ipc_surface = "MESH"
    assert ipc_export.export_ipc_scene(scene).world.tet_count == 6 * (n + 2) ** 3
