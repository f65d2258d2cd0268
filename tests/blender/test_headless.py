"""``python -m contact_lab bake``: exit codes, saved keyframes and the JSON report."""

import json

import pytest
from cli_tools import run_cli

bpy = pytest.importorskip("bpy")

pytestmark = pytest.mark.blender


def test_headless_bake_saves_keyframes_and_report(lab, tmp_path):
    """A valid file bakes with exit code 0; the output holds the keyframes, the report the statistics."""
    scene, _ = lab.build_drop_scene(frame_end=12)
    src, out, report_path = tmp_path / "in.blend", tmp_path / "out.blend", tmp_path / "report.json"
    bpy.ops.wm.save_as_mainfile(filepath=str(src))

    result = run_cli(src, "-o", out, "--report", report_path, "--frames", "1-10")
    assert result.returncode == 0, result.stderr + result.stdout
    assert "[contact_lab] frame 10/10" in result.stdout
    report = json.loads(report_path.read_text())
    assert report["status"] == "FINISHED" and report["error"] is None
    assert report["frames"]["count"] == 10
    assert sorted(report["bodies"]["active"]) == ["Ball", "Box"]
    assert report["stats"]["max_contacts"] > 0
    assert len(report["per_frame"]["contact_count"]) == 10
    # the statistics every engine records alike, per frame
    assert all(len(report["per_frame"][k]) == 10 for k in ("solver_iterations", "contact_count", "converged"))
    assert {"load", "bake", "save", "total"} <= set(report["timings"])

    bpy.ops.wm.open_mainfile(filepath=str(out))
    box = bpy.data.objects["Box"]
    assert box.animation_data.action is not None
    frames, loc, quat = lab.keyed_transform(box)
    assert list(frames) == list(range(1, 11))
    assert loc[0, 2] - loc[-1, 2] > 0.1


def test_headless_bake_without_active_bodies_fails(lab, tmp_path):
    """A file with no active bodies exits non-zero, saves nothing and explains why in the report."""
    lab.add_ground()
    lab.add_cube("Crate", (0.0, 0.0, 1.0), role="PASSIVE")
    src, out, report_path = tmp_path / "in.blend", tmp_path / "out.blend", tmp_path / "report.json"
    bpy.ops.wm.save_as_mainfile(filepath=str(src))

    result = run_cli(src, "-o", out, "--report", report_path)
    assert result.returncode == 1
    report = json.loads(report_path.read_text())
    assert report["status"] == "FAILED"
    assert "no active bodies" in report["error"].lower()
    assert not out.exists()


def test_headless_usage_errors_exit_2(tmp_path):
    """A missing input file or a malformed frame range is a usage error (exit code 2)."""
    assert run_cli(tmp_path / "missing.blend").returncode == 2
    assert run_cli(tmp_path / "missing.blend", "--frames", "x").returncode == 2
