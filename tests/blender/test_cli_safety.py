"""``python -m contact_lab bake`` on untrusted files and bad arguments: refused before anything is written.

A .blend whose PC2 Cache Folder leads outside its folder ('..', an absolute path, a symlink) is refused without
``--allow-outside-paths``, and the file system outside is the same before and after (no folder, no file); a bad
output folder, an unwritable report, a reversed frame range and a directory as input are usage errors found
before baking; any unexpected exception is a FAILED report with its traceback, not a raw traceback.

References: the file system itself (every path and its bytes under the test folder, before and after).
"""

import json
import os
import subprocess
import sys

import pytest
from cli_tools import file_tree

bpy = pytest.importorskip("bpy")

from contact_lab import __main__ as cli  # noqa: E402
from contact_lab.addon.bake import driver as bake  # noqa: E402
from contact_lab.addon.output.caches import cache_file_name  # noqa: E402
from contact_lab.core.formats import pc2  # noqa: E402

pytestmark = pytest.mark.blender


def save_soft_shot(tmp_path, cache_dir, *, frames=2):
    """``tmp/shots/shot.blend``: one soft cube (lattice 2) above a ground plane, PC2 output into ``cache_dir``."""
    shots = tmp_path / "shots"
    shots.mkdir(exist_ok=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    settings = scene.contact_lab
    settings.engine, settings.soft_output, settings.soft_cache_dir = "SOFT", "PC2", cache_dir
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    bpy.context.object.contact_lab.role, bpy.context.object.contact_lab.shape = "PASSIVE", "PLANE"
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(0.0, 0.0, 0.25))
    cube = bpy.context.object
    cube.name = "Jelly"
    cube.contact_lab.role, cube.contact_lab.lattice_resolution = "SOFT", 2
    blend = shots / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    return blend


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "contact_lab", "bake", *map(str, args)], capture_output=True, text=True, timeout=600
    )


ESCAPES = {
    "dotdot": lambda tmp: "//../elsewhere/cache/",
    "absolute": lambda tmp: str(tmp / "elsewhere" / "abs") + os.sep,
    "symlink": lambda tmp: "//link/cache/",
}


@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_a_cache_folder_leading_outside_is_refused_and_nothing_is_written(lab, tmp_path, capsys, escape):
    """'..' out of the .blend's folder, an absolute folder elsewhere, a symlink out: exit code 1 before simulating,
    the report names the setting and the flag, and not a byte changes anywhere under the test folder."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keep.txt").write_text("untouched")
    if escape == "symlink":
        (tmp_path / "shots").mkdir()
        os.symlink(tmp_path / "elsewhere", tmp_path / "shots" / "link")
    blend = save_soft_shot(tmp_path, ESCAPES[escape](tmp_path))
    report = tmp_path / "report.json"
    before = file_tree(tmp_path)

    code = cli.main(["bake", str(blend), "-o", str(tmp_path / "shots" / "out.blend"), "--report", str(report)])

    assert code == cli.EXIT_BAKE_ERROR
    assert file_tree(tmp_path, skip={"report.json"}) == before  # no folder, no file, no output .blend
    result = json.loads(report.read_text())
    assert result["status"] == "FAILED" and "--allow-outside-paths" in result["error"]
    assert "PC2 Cache Folder of scene 'Scene'" in result["error"]
    assert os.path.realpath(tmp_path / "elsewhere") in result["error"]
    assert "frames" not in result  # refused before the export and the simulation
    assert "--allow-outside-paths" in capsys.readouterr().err


def test_a_cache_folder_that_cannot_be_created_is_refused_before_simulating(lab, tmp_path):
    """A PC2 folder under a regular file is refused up front (it used to fail only after the whole simulation)."""
    blend = save_soft_shot(tmp_path, "//notes.txt/cache/")
    (tmp_path / "shots" / "notes.txt").write_text("a file, not a folder")
    report = tmp_path / "report.json"
    assert cli.main(["bake", str(blend), "--report", str(report)]) == cli.EXIT_BAKE_ERROR
    result = json.loads(report.read_text())
    assert "cannot be created" in result["error"] and "notes.txt' is a file, not a folder" in result["error"]
    assert "frames" not in result and "per_frame" not in result  # nothing was simulated


def test_the_refusal_end_to_end_and_the_flag_that_allows_it(lab, tmp_path):
    """The real command line: refused with exit code 1 (nothing outside changes); with --allow-outside-paths the
    cache is written outside and the bake succeeds."""
    (tmp_path / "elsewhere").mkdir()
    blend = save_soft_shot(tmp_path, "//../elsewhere/cache/")
    outside = tmp_path / "elsewhere"
    before = file_tree(outside)

    refused = run_cli(blend, "--report", tmp_path / "report.json")
    assert refused.returncode == 1, refused.stderr + refused.stdout
    assert file_tree(outside) == before and "--allow-outside-paths" in refused.stderr
    assert "Traceback" not in refused.stderr

    allowed = run_cli(blend, "--allow-outside-paths", "--report", tmp_path / "report.json")
    assert allowed.returncode == 0, allowed.stderr + allowed.stdout
    data, _, _ = pc2.read_pc2(outside / "cache" / cache_file_name(str(blend), "Scene", "Jelly"))
    assert data.shape == (2, 8, 3)


def test_the_chosen_output_folder_is_trusted(lab, tmp_path):
    """A cache folder under the -o output's folder (outside the input's) is allowed without the flag."""
    (tmp_path / "out").mkdir()
    blend = save_soft_shot(tmp_path, "//../out/cache/")
    code = cli.main(["bake", str(blend), "-o", str(tmp_path / "out" / "shot.blend")])
    assert code == cli.EXIT_OK
    owner = str(tmp_path / "out" / "shot.blend")  # the saved file owns the cache
    assert (tmp_path / "out" / "cache" / cache_file_name(owner, "Scene", "Jelly")).is_file()


def test_bad_arguments_are_usage_errors_found_before_baking(lab, tmp_path, capsys):
    """A missing output folder, an unwritable report, a reversed frame range, a directory as input: exit code 2,
    a message naming the problem, and nothing written (no output, no report where none can go)."""
    lab.build_drop_scene(frame_end=3)
    blend = tmp_path / "in.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    report = tmp_path / "report.json"
    before = file_tree(tmp_path)

    assert cli.main(["bake", str(blend), "-o", str(tmp_path / "missing" / "x.blend"), "--report", str(report)]) == 2
    result = json.loads(report.read_text())
    assert result["status"] == "FAILED" and "output folder" in result["error"] and "does not exist" in result["error"]
    assert "load" not in result.get("timings", {})  # refused before loading anything
    report.unlink()

    assert cli.main(["bake", str(blend), "--report", str(tmp_path / "nowhere" / "r.json")]) == 2
    assert "cannot write the report" in capsys.readouterr().err
    assert cli.main(["bake", str(blend), "--report", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err

    assert cli.main(["bake", str(blend), "--frames", "10-1"]) == 2
    assert "ends before it starts" in capsys.readouterr().err

    assert cli.main(["bake", str(tmp_path), "--report", str(report)]) == 2
    assert "is a directory, not a .blend file" in json.loads(report.read_text())["error"]
    report.unlink()
    assert file_tree(tmp_path) == before


def test_an_unexpected_exception_is_a_failed_report_with_its_traceback(lab, tmp_path, monkeypatch, capsys):
    """Any exception type inside the bake (here a KeyError from a broken component): exit code 1, a FAILED report
    naming its type with the traceback kept, a one-line hint on stderr, no raw traceback, nothing saved."""
    lab.build_drop_scene(frame_end=3)
    blend = tmp_path / "in.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    report, out = tmp_path / "report.json", tmp_path / "out.blend"

    def broken(scene, **kwargs):
        raise KeyError("solver_settings")

    monkeypatch.setattr(bake, "start_bake", broken)
    assert cli.main(["bake", str(blend), "-o", str(out), "--report", str(report)]) == cli.EXIT_BAKE_ERROR
    result = json.loads(report.read_text())
    assert result["status"] == "FAILED" and result["error"] == "unexpected error: KeyError: 'solver_settings'"
    assert "Traceback (most recent call last)" in result["traceback"] and "broken" in result["traceback"]
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"its traceback is in {report}" in err
    assert not out.exists()
