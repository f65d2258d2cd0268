"""``python -m contact_lab export-fclib``: a cube resting on the ground, saved as a .blend, written as FCLIB's
local problem of one step and read back. References: the closed forms (each corner's normal entry of W is 4/m,
the four normal impulses carry the weight over one step) and the stored solution's merit; refusals exit 1 or 2
with the reason."""

import json
import subprocess
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")
h5py = pytest.importorskip("h5py")

from conftest import add_cube, add_ground  # noqa: E402
from contact_lab.core.contact_solvers import fclib  # noqa: E402

pytestmark = pytest.mark.blender

MASS, SIZE = 2.0, 0.5


def _export(*args):
    return subprocess.run([sys.executable, "-m", "contact_lab", "export-fclib", *map(str, args)],
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip


@pytest.fixture
def resting_cube(tmp_path):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    s = scene.contact_lab
    s.engine, s.use_scene_frame_range, s.substeps = "RIGID", True, 4
    add_ground()
    add_cube("Cube", (0.0, 0.0, SIZE / 2), SIZE, mass=MASS)
    path = tmp_path / "cube.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


def test_a_resting_cube_is_written_as_its_closed_form_problem(resting_cube, tmp_path):
    out = tmp_path / "cube_6.hdf5"
    done = _export(resting_cube, "--frame", 6, "-o", out)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"contacts": 4, "frame": 6, "output": str(out)}
    problem = fclib.read_local(out)
    solution, _ = fclib.read_solution(out)
    h = 1.0 / (24.0 * 4)
    np.testing.assert_allclose(np.diag(problem.W)[0::3], 4.0 / MASS, rtol=1e-9)  # 1/m + |r x n|^2 / I at a corner
    # the weight over one step, to within the add-on's default solver tolerance
    assert solution.r[0::3].sum() == pytest.approx(MASS * 9.81 * h, rel=2e-3)
    assert fclib.local_merit(problem, solution.r) < 1e-6
    assert "frame 6" in problem.info.title and "4 contacts" in problem.info.description


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("--frame", 40), 2, "outside scene"),
        (("--frame", 6, "--scene", "Nope"), 2, "no scene named 'Nope'"),
        (("--frame", 6, "--substep", 9), 2, "substep 9"),
    ],
)
def test_bad_requests_exit_with_the_reason(resting_cube, tmp_path, args, code, words):
    done = _export(resting_cube, *args, "-o", tmp_path / "x.hdf5")
    assert done.returncode == code and words in done.stderr, done.stderr[-3000:]
    assert not (tmp_path / "x.hdf5").exists()


def test_a_soft_scene_and_a_missing_file_are_refused(resting_cube, tmp_path):
    missing = _export(tmp_path / "none.blend", "--frame", 1, "-o", tmp_path / "x.hdf5")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    bpy.context.scene.contact_lab.engine = "SOFT"
    bpy.ops.wm.save_as_mainfile(filepath=str(resting_cube))
    soft = _export(resting_cube, "--frame", 2, "-o", tmp_path / "x.hdf5")
    assert soft.returncode == 2 and "reads Rigid scenes" in soft.stderr
