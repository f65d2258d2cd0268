"""Bake through real Blender and compare the keyframes with the core's own trajectory."""

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from contact_lab.addon import units  # noqa: E402
from contact_lab.addon.rigid import gather as scene_export  # noqa: E402
from contact_lab.addon.rigid import job as addon_bake  # noqa: E402
from contact_lab.core import DivergenceError, simulate  # noqa: E402

pytestmark = pytest.mark.blender

TOL = 1e-5


def reference(scene):
    """Export the scene and simulate it with the core directly: (export, trajectory)."""
    export = scene_export.export_scene(scene)
    return export, simulate(export.model, **export.simulate_kwargs())


@pytest.mark.parametrize("solver", ["PROX", "PGS", "NEWTON"])
def test_bake_matches_core_trajectory(lab, solver):
    """Bake two active bodies over a static plane and a kinematic box; keys equal the core trajectory."""
    scene, objs = lab.build_drop_scene()
    scene.contact_lab.solver = solver
    export, traj = reference(scene)
    assert export.kinematic_track is not None
    assert np.ptp(export.kinematic_track.pos[:, :, 0]) > 1.0  # the pusher really moves
    before_frame = scene.frame_current

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    assert scene.frame_current == before_frame
    frames = np.arange(scene.frame_start, scene.frame_end + 1, dtype=np.float64)
    for body in export.active_bodies:
        obj = objs[body.object_name]
        assert obj.rotation_mode == "QUATERNION"
        assert obj.contact_lab.baked_action == obj.animation_data.action
        key_frames, loc, quat = lab.keyed_transform(obj)
        np.testing.assert_array_equal(key_frames, frames)
        com = traj.body_pos[:, body.body_index]
        q = traj.body_quat[:, body.body_index]
        expected = units.body_to_object_location(com, q, body.centre_local, body.scale)
        np.testing.assert_allclose(loc, expected, atol=TOL)
        np.testing.assert_allclose(quat, q, atol=TOL)
        # independent of the conversion: Blender's evaluated pose puts the bbox centre on the body's com
        centre = np.append(body.centre_local, 1.0)
        for row in (0, len(frames) // 2, len(frames) - 1):
            scene.frame_set(int(frames[row]))
            world = np.array(obj.matrix_world)
            np.testing.assert_allclose((world @ centre)[:3], com[row], atol=TOL)
            np.testing.assert_allclose(
                units.matrix_to_quat(world[:3, :3] / np.linalg.norm(world[:3, :3], axis=0)),
                q[row] * np.sign(q[row][0] or 1.0),
                atol=TOL,
            )
    box = export.bodies[[b.object_name for b in export.bodies].index("Box")].body_index
    assert traj.body_pos[0, box, 2] - traj.body_pos[-1, box, 2] > 0.3  # it fell
    assert abs(traj.body_pos[-1, box, 2] - 0.5) < 0.05  # and rests on the plane
    report = json.loads(scene.contact_lab.last_report)
    assert report["status"] == "FINISHED"
    assert report["frames"] == {"start": 1, "end": 24, "count": 24, "simulated": 24}
    assert report["stats"]["max_contacts"] > 0
    assert sorted(report["bodies"]["active"]) == ["Ball", "Box"]


def test_invoke_in_background_runs_blocking_bake(lab):
    """INVOKE_DEFAULT without a window falls through to the blocking execute."""
    scene, objs = lab.build_drop_scene(frame_end=6)
    assert bpy.ops.contact_lab.bake("INVOKE_DEFAULT") == {"FINISHED"}
    assert lab.keyed_transform(objs["Box"])[0].shape == (6,)


def test_clear_restores_previous_action(lab):
    """Clear removes the baked actions and gives back the action and rotation mode an object had."""
    scene, objs = lab.build_drop_scene(frame_end=8)
    box, ball = objs["Box"], objs["Ball"]
    box.keyframe_insert("location", frame=1)
    previous = box.animation_data.action
    previous_keys = [(fc.data_path, len(fc.keyframe_points)) for fc in lab_fcurves(box)]
    assert ball.animation_data is None

    bpy.ops.contact_lab.bake()
    baked_box = box.animation_data.action
    baked_name = baked_box.name
    assert baked_box != previous and previous.name in bpy.data.actions
    bpy.ops.contact_lab.bake()  # a re-bake keeps the original previous action
    assert box.contact_lab.previous_action == previous
    assert box.animation_data.action.name == baked_name  # the new bake reuses the freed name
    assert (
        len([a for a in bpy.data.actions if a.name.startswith("Box")]) == 2
    )  # previous + new bake: the replaced bake was removed

    assert bpy.ops.contact_lab.clear_bake() == {"FINISHED"}
    assert box.animation_data.action == previous
    assert [(fc.data_path, len(fc.keyframe_points)) for fc in lab_fcurves(box)] == previous_keys
    assert box.rotation_mode == "XYZ"
    assert ball.animation_data is None or ball.animation_data.action is None
    assert not any(a.name.endswith(addon_bake.ACTION_SUFFIX) for a in bpy.data.actions)
    assert box.contact_lab.baked_action is None and not box.contact_lab.has_previous


def lab_fcurves(obj):
    from contact_lab.addon.output import keyframes

    return keyframes.fcurves_of(obj)


def _zero_mass(objs):
    objs["Box"].contact_lab.mass = 0.0


def _negative_mass(objs):
    objs["Ball"].contact_lab.mass = -1.0


def _no_active(objs):
    objs["Box"].contact_lab.role = "PASSIVE"
    objs["Ball"].contact_lab.role = "NONE"


def _nonuniform_sphere(objs):
    objs["Ball"].scale = (1.0, 1.0, 2.0)


def _negative_scale_box(objs):
    objs["Box"].scale = (1.0, -1.0, 1.0)


def _active_plane(objs):
    objs["Box"].contact_lab.shape = "PLANE"


@pytest.mark.parametrize(
    ("breaker", "message"),
    [
        (_zero_mass, "mass must be positive"),
        (_negative_mass, "mass must be positive"),
        (_no_active, "no active bodies"),
        (_nonuniform_sphere, "uniform scale"),
        (_negative_scale_box, "negative scale"),
        (_active_plane, "only be passive"),
    ],
)
def test_invalid_input_changes_nothing(lab, breaker, message):
    """Invalid input raises from bpy.ops with a clear message and leaves animation and poses untouched."""
    scene, objs = lab.build_drop_scene(frame_end=8)
    bpy.ops.contact_lab.bake()  # an existing bake must survive the failed one
    scene.frame_set(3)
    breaker(objs)
    bpy.context.view_layer.update()
    before = lab.snapshot(scene)
    report_before = scene.contact_lab.last_report
    with pytest.raises(RuntimeError) as info:
        bpy.ops.contact_lab.bake()
    assert message.lower() in str(info.value).lower()
    assert lab.snapshot(scene) == before
    assert scene.contact_lab.last_report == report_before


def test_divergence_changes_nothing_and_names_frame(lab, monkeypatch):
    """A core divergence mid-bake leaves the previous animation; the error names the frame and object."""
    scene, objs = lab.build_drop_scene(frame_end=10)
    real = addon_bake.iter_simulate

    def diverging(model, **kwargs):
        for frame, traj in real(model, **kwargs):
            if frame == 4:
                raise DivergenceError(4, [2], ["Ball"])
            yield frame, traj

    monkeypatch.setattr(addon_bake, "iter_simulate", diverging)
    before = lab.snapshot(scene)
    with pytest.raises(RuntimeError) as info:
        bpy.ops.contact_lab.bake()
    assert "frame 5" in str(info.value) and "Ball" in str(info.value)  # trajectory row 4 = scene frame 5
    assert lab.snapshot(scene) == before
    assert json.loads(scene.contact_lab.last_report)["status"] == "FAILED"


def test_unit_scale_gives_same_motion_in_metres(lab):
    """A scene modelled in centimetres (scale_length 0.01) moves exactly like the same scene in metres."""
    scene, objs = lab.build_drop_scene(unit=1.0, frame_end=16)
    bpy.ops.contact_lab.bake()
    metres = {name: lab.keyed_transform(objs[name]) for name in ("Box", "Ball")}

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene, objs = lab.build_drop_scene(unit=100.0, frame_end=16)
    bpy.ops.contact_lab.bake()
    for name in ("Box", "Ball"):
        frames, loc, quat = lab.keyed_transform(objs[name])
        np.testing.assert_array_equal(frames, metres[name][0])
        np.testing.assert_allclose(loc * scene.unit_settings.scale_length, metres[name][1], atol=TOL)
        np.testing.assert_allclose(quat, metres[name][2], atol=TOL)
    assert metres["Box"][1][0, 2] - metres["Box"][1][-1, 2] > 0.3


def test_scene_frame_range_follows_scene_until_set(factory_scene):
    """scene.contact_lab.frame_start/end read the scene's range until the user sets them."""
    scene = factory_scene
    scene.frame_start, scene.frame_end = 5, 40
    settings = scene.contact_lab
    assert (settings.frame_start, settings.frame_end) == (5, 40)
    settings.frame_end = 30
    scene.frame_start, scene.frame_end = 1, 100
    assert (settings.frame_start, settings.frame_end) == (5, 30)
    settings.use_scene_frame_range = True
    assert (settings.frame_start, settings.frame_end) == (1, 100)


def test_shock_propagation_reaches_the_core_and_holds_a_tall_stack(factory_scene, lab):
    """Ten 1 m cubes stacked on a passive slab, 60 fps, one substep, PGS at 5 iterations. With Shock Propagation the
    bake's keys keep the top cube within 1 mm of where it was built for 2 s; the same export without it moves the
    top cube more (reference: the core run of the same export, and the stack as built)."""
    scene = factory_scene
    scene.render.fps, scene.frame_start, scene.frame_end = 60, 1, 121
    slab = lab.add_cube("Slab", (0.0, 0.0, -0.5), role="PASSIVE")
    slab.scale = (10.0, 10.0, 1.0)
    cubes = [lab.add_cube(f"Cube{i}", (0.0, 0.0, 0.5 + i)) for i in range(10)]
    s = scene.contact_lab
    s.solver, s.substeps, s.iterations, s.shock_propagation = "PGS", 1, 5, True
    export = scene_export.export_scene(scene)
    assert export.rigid_settings().solver_options == {"shock_propagation": True}
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    _, loc, _ = lab.keyed_transform(cubes[-1])
    held = np.abs(loc - loc[0]).max()
    assert held < 1e-3 and abs(loc[0, 2] - 9.5) < 1e-6
    assert json.loads(s.last_report)["settings"]["shock_propagation"] is True
    s.shock_propagation = False
    plain = scene_export.export_scene(scene)
    assert plain.rigid_settings().solver_options == {}
    top = [b.body_index for b in plain.bodies if b.object_name == "Cube9"][0]
    pos = simulate(plain.model, **plain.simulate_kwargs()).body_pos[:, top]
    assert np.abs(pos - pos[0]).max() > held


def test_convergence_history_reaches_the_report_and_changes_nothing_else(factory_scene, lab, monkeypatch):
    """With Convergence History the per-frame report lists FCLIB's merit after each sweep of the frame's last
    solve, ending at the frame's ``solver_merit`` (reference: that merit, computed independently of the history);
    without it the report's keys are as they were, and the keys baked are the same either way."""
    from contact_lab.addon.bake import driver

    scene = factory_scene
    scene.render.fps, scene.frame_start, scene.frame_end = 24, 1, 6
    slab = lab.add_cube("Slab", (0.0, 0.0, -0.5), role="PASSIVE")
    slab.scale = (5.0, 5.0, 1.0)
    cube = lab.add_cube("Cube", (0.0, 0.0, 0.5))  # resting: every step has contacts
    jobs = []
    start_bake = driver.start_bake
    monkeypatch.setattr(driver, "start_bake", lambda *a, **k: jobs.append(start_bake(*a, **k)) or jobs[-1])
    s = scene.contact_lab
    runs = {}
    for recorded in (True, False):
        s.merit_history = recorded
        assert scene_export.export_scene(scene).rigid_settings().merit_history is recorded
        driver.bake_scene(scene)
        runs[recorded] = (jobs[-1].per_frame_stats(), lab.keyed_transform(cube)[1])
    (with_history, moved), (plain, moved_plain) = runs[True], runs[False]
    assert set(with_history) - set(plain) == {"solver_merit_history"}
    np.testing.assert_array_equal(moved, moved_plain)
    history = with_history["solver_merit_history"]
    assert len(history) == len(with_history["frame"]) == 6 and history[0] == []
    for merits, merit, sweeps in zip(
        history[1:], with_history["solver_merit"][1:], with_history["solver_iterations"][1:], strict=True
    ):
        assert 1 <= len(merits) <= sweeps and merits[-1] == pytest.approx(merit, rel=1e-9)


def test_a_bake_runs_on_blenders_threads_setting_and_reports_them(lab, monkeypatch):
    """Render Properties ▸ Performance ▸ Threads fixed at 1: the simulation's kernels run on one numba thread (read
    inside a frame of the bake), the report says 1, and the main thread keeps its own count; automatic: numba's
    limit, whatever the machine."""
    import numba
    from contact_lab.addon.bake.job import BakeJob

    seen = []
    step = BakeJob.step

    def spy(self, *args, **kwargs):
        seen.append(numba.get_num_threads())
        return step(self, *args, **kwargs)

    monkeypatch.setattr(BakeJob, "step", spy)
    scene, _ = lab.build_drop_scene(frame_end=4)
    before = numba.get_num_threads()
    scene.render.threads_mode = "FIXED"
    scene.render.threads = 1
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert seen and set(seen) == {1}
    assert json.loads(scene.contact_lab.last_report)["threads"] == 1
    assert numba.get_num_threads() == before
    scene.render.threads_mode = "AUTO"
    seen.clear()
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    limit = numba.config.NUMBA_NUM_THREADS
    assert set(seen) == {min(scene.render.threads, limit)}
    assert json.loads(scene.contact_lab.last_report)["threads"] == min(scene.render.threads, limit)
