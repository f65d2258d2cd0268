"""Batch bakes of real .blend files: ``--jobs 2`` and a Dask cluster of separate processes, against in-process bakes.

Eight tiny files (2-4 boxes on a plane, 3-5 frames), one broken (an Empty set to Active). The reference for every
file is the same bake run in this process (``bake.bake_scene``): each baked output must hold bit-identical keyframes
and the broken file the same error, whichever way the batch ran.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_tools import run_cli

bpy = pytest.importorskip("bpy")

pytestmark = pytest.mark.blender

FILE_COUNT = 8
BROKEN = 5
"""Index of the file with an Empty set to Active (the bake refuses it)."""

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2].parent)
"""Folder holding this copy of contact_lab: put first on the scheduler's and workers' PYTHONPATH."""


def build_file(path: Path, index: int) -> None:
    """A ground plane and 2-4 active boxes dropping (3-5 frames); file ``BROKEN`` also has an active Empty."""
    import contact_lab

    bpy.ops.wm.read_factory_settings(use_empty=True)
    contact_lab.register()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3 + index % 3
    bpy.ops.mesh.primitive_plane_add(size=20.0)
    ground = bpy.context.object
    ground.name = "Ground"
    ground.contact_lab.role, ground.contact_lab.shape = "PASSIVE", "PLANE"
    for k in range(2 + index % 3):
        bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0.8 * k, 0.1 * index, 0.3 + 0.05 * index + 0.4 * k))
        box = bpy.context.object
        box.name = f"Box{k}"
        box.rotation_euler = (0.0, 0.1 * index, 0.2 * k)
        box.contact_lab.role, box.contact_lab.shape = "ACTIVE", "BOX"
    if index == BROKEN:
        bpy.ops.object.empty_add(location=(0.0, 0.0, 2.0))
        bpy.context.object.name = "Marker"
        bpy.context.object.contact_lab.role = "ACTIVE"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


def baked_curves() -> dict:
    """``{(object, data path, index): (K, 2) float32 keyframe points}`` of every object in the open file."""
    from contact_lab.addon.output import keyframes

    curves = {}
    for obj in bpy.data.objects:
        for fc in keyframes.fcurves_of(obj):
            co = np.empty(2 * len(fc.keyframe_points), np.float32)
            fc.keyframe_points.foreach_get("co", co)
            curves[(obj.name, fc.data_path, fc.array_index)] = co.reshape(-1, 2)
    return curves


@pytest.fixture(scope="module")
def batch_files(tmp_path_factory):
    """The eight source files and their in-process bakes: ``(paths, [curves or error, ...], [frame count, ...])``."""
    import contact_lab
    from contact_lab.addon.bake import driver as bake

    folder = tmp_path_factory.mktemp("batch_sources")
    paths = [folder / f"shot{i:02d}.blend" for i in range(FILE_COUNT)]
    for i, path in enumerate(paths):
        build_file(path, i)
    references, frames = [], []
    for path in paths:
        bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
        scene = bpy.context.scene
        frames.append(scene.frame_end - scene.frame_start + 1)
        try:
            bake.bake_scene(scene)
        except bake.BakeError as exc:
            references.append(str(exc))
        else:
            references.append(baked_curves())
    contact_lab.unregister()
    assert [isinstance(r, str) for r in references] == [i == BROKEN for i in range(FILE_COUNT)]
    assert "Marker" in references[BROKEN]
    return paths, references, frames


def run_batch(*args, timeout=300):
    return run_cli(*args, timeout=timeout)


def digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def check_batch(summary: dict, outputs: list, batch_files) -> None:
    """Statuses, errors and frame counts of ``summary`` and the keyframes of ``outputs`` equal the references."""
    paths, references, frames = batch_files
    rows = summary["files"]
    assert [Path(r["file"]).name for r in rows] == [p.name for p in paths]
    assert [r["status"] for r in rows] == ["FAILED" if i == BROKEN else "FINISHED" for i in range(FILE_COUNT)]
    assert rows[BROKEN]["error"] == references[BROKEN]
    assert [r["frames"] for i, r in enumerate(rows) if i != BROKEN] == [f for i, f in enumerate(frames) if i != BROKEN]
    assert summary["counts"] == {"FINISHED": FILE_COUNT - 1, "FAILED": 1}
    for i, output in enumerate(outputs):
        if i == BROKEN:
            continue
        bpy.ops.wm.open_mainfile(filepath=str(output), load_ui=False)
        curves = baked_curves()
        assert curves.keys() == references[i].keys(), output
        assert len(curves) == 7 * (2 + i % 3)  # location and quaternion of every box
        for key, co in curves.items():
            assert co.shape == (frames[i], 2)
            assert np.array_equal(co, references[i][key]), (output, key)  # bit for bit


def test_jobs_bake_each_file_in_its_own_process(batch_files, tmp_path):
    """``--jobs 2 -o DIR``: 7 files bake exactly as in-process, the broken one fails alone; rc 1; 2 at a time."""
    paths = batch_files[0]
    sources = {p: digest(p) for p in paths}
    out, reports = tmp_path / "baked", tmp_path / "reports"
    t0 = time.monotonic()
    run = run_batch(*paths, "--jobs", 2, "-o", out, "--report-dir", reports)
    elapsed = time.monotonic() - t0
    assert run.returncode == 1, run.stdout + run.stderr

    summary = json.loads((reports / "summary.json").read_text())
    check_batch(summary, [out / p.name for p in paths], batch_files)
    assert {p: digest(p) for p in paths} == sources  # -o DIR: the inputs stay as they were
    assert not (out / paths[BROKEN].name).exists()
    broken = json.loads((reports / f"shot{BROKEN:02d}.report.json").read_text())
    assert broken["status"] == "FAILED" and broken["error"] == batch_files[1][BROKEN]
    assert json.loads((reports / "shot00.report.json").read_text())["frames"]["count"] == batch_files[2][0]
    assert "[contact_lab] frame 3/3" in (reports / "shot00.log").read_text()

    # never more than two children at once, and two at once for a while: --jobs 2
    events = sorted([(r["started"], 1) for r in summary["files"]] + [(r["ended"], -1) for r in summary["files"]])
    running = np.cumsum([step for _, step in events])
    assert running.max() == 2 and running.min() == 0
    # stdout is not a terminal: plain progress lines, then the table and the totals
    assert f"[contact_lab] {paths[0]}: frame 3/3" in run.stdout and "\x1b[" not in run.stdout
    assert "[contact_lab] 7 of 8 files baked, 1 FAILED in " in run.stdout
    print(f"--jobs 2, 8 files: {elapsed:.1f} s")


@pytest.fixture
def dask_cluster(tmp_path):
    """A Dask scheduler and two single-thread workers, each its own process on this machine; their address."""
    distributed = pytest.importorskip("distributed")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [PACKAGE_PARENT, os.environ.get("PYTHONPATH")])))
    scheduler_file = tmp_path / "scheduler.json"
    common = ["--no-dashboard"]
    procs = []
    try:
        scheduler = ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0"]
        procs.append(_start([*scheduler, "--scheduler-file", scheduler_file, *common], env, tmp_path / "scheduler.log"))
        deadline = time.monotonic() + 60
        while _address(scheduler_file) is None:
            assert time.monotonic() < deadline and procs[0].poll() is None, (tmp_path / "scheduler.log").read_text()
            time.sleep(0.1)
        for name in ("w1", "w2"):
            worker = ["distributed.cli.dask_worker", "--scheduler-file", scheduler_file, "--name", name]
            procs.append(_start([*worker, "--nthreads", "1", "--no-nanny", *common], env, tmp_path / f"{name}.log"))
        address = _address(scheduler_file)
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:  # workers first: a worker whose scheduler is gone keeps trying to reach it before it exits
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _start(args, env, log_path):
    with open(log_path, "w") as log:  # the process writes through its own copy of the descriptor
        return subprocess.Popen([sys.executable, "-m", *map(str, args)], env=env, stdout=log, stderr=subprocess.STDOUT)


def _address(scheduler_file: Path) -> str | None:
    """The address in the scheduler's file, None until it is written completely."""
    try:
        return json.loads(scheduler_file.read_text())["address"]
    except (OSError, ValueError, KeyError):
        return None


def test_dask_cluster_gives_the_same_results(batch_files, dask_cluster, tmp_path):
    """``--scheduler``: the same eight files, in place, through a real scheduler and two workers: same results."""
    folder = tmp_path / "farm"
    folder.mkdir()
    copies = [Path(shutil.copy(p, folder / p.name)) for p in batch_files[0]]
    reports = tmp_path / "reports"
    t0 = time.monotonic()
    run = run_batch(*copies, "--scheduler", dask_cluster, "--report-dir", reports)
    elapsed = time.monotonic() - t0
    assert run.returncode == 1, run.stdout + run.stderr

    summary = json.loads((reports / "summary.json").read_text())
    check_batch(summary, copies, batch_files)  # in place: the copies themselves were baked
    assert {r["worker"] for r in summary["files"]} == {"w1", "w2"}
    assert summary["scheduler"] == dask_cluster and summary["jobs"] is None
    assert f"on the Dask cluster at {dask_cluster}" in run.stdout
    print(f"Dask, two workers, 8 files: {elapsed:.1f} s")


BLENDER_B_EXPR = (
    "import bpy; bpy.ops.preferences.addon_enable(module='bl_ext.user_default.contact_lab'); "
    "bpy.ops.contact_lab.bake(); bpy.ops.wm.save_mainfile()"
)
"""The ``--python-expr`` of ``blender -b FILE --python-exit-code 1 --python-expr ...`` in docs/cli.md."""
CLI_PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
"""The user page that shows the ``blender -b`` command."""


def test_the_cli_page_shows_the_tested_blender_b_command():
    """docs/cli.md gives the very expression the next test replays, in the order Blender needs (the file, then
    ``--python-exit-code 1``, then ``--python-expr``)."""
    text = CLI_PAGE.read_text(encoding="utf-8")
    assert f'blender -b shot.blend --python-exit-code 1 --python-expr "{BLENDER_B_EXPR}"' in text


def test_blender_b_form_enables_the_extension_by_its_module_name(batch_files, tmp_path):
    """The ``blender -b`` expression of docs/cli.md, replayed with the bpy module on an extension in ``user_default``:
    it enables ``bl_ext.user_default.contact_lab`` and runs its bake; a refused bake raises (exit code 1 under
    ``--python-exit-code 1``) naming the object, and the file is not saved."""
    import contact_lab

    resources = tmp_path / "user"
    repo = resources / "extensions" / "user_default"
    repo.mkdir(parents=True)
    (repo / "contact_lab").symlink_to(Path(contact_lab.__file__).parent)  # where Install from Disk unpacks the zip
    broken = Path(shutil.copy(batch_files[0][BROKEN], tmp_path / "broken.blend"))
    before = digest(broken)
    script = (  # what `blender -b broken.blend --python-expr EXPR` does: open the file, then run EXPR
        f"import bpy, sys\nbpy.ops.wm.open_mainfile(filepath={str(broken)!r})\ntry:\n    exec({BLENDER_B_EXPR!r})\n"
        "finally:\n    print('modules:', sorted(m for m in sys.modules if m.endswith('contact_lab')))\n"
    )
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(resources))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "modules: ['bl_ext.user_default.contact_lab']" in run.stdout  # the installed copy, by its real name
    assert f"RuntimeError: Error: {batch_files[1][BROKEN]}" in run.stderr
    assert digest(broken) == before


def test_usage_errors_exit_2_and_name_missing_inputs(batch_files, tmp_path):
    """Conflicting options and missing inputs exit 2 before anything is baked; the message names the files."""
    paths = batch_files[0]
    missing = [tmp_path / "nope.blend", tmp_path / "gone.blend"]
    run = run_batch(paths[0], *missing, paths[1], "--jobs", 2, "-o", tmp_path / "out")
    assert run.returncode == 2
    assert f"input files not found: {missing[0]}, {missing[1]}" in run.stderr
    run = run_batch(*paths[:2], "--jobs", 2, "--scheduler", "tcp://127.0.0.1:8786", "-o", tmp_path / "out")
    assert run.returncode == 2 and "--jobs and --scheduler exclude each other" in run.stderr
    run = run_batch(*paths[:2], "-o", tmp_path / "out" / "baked.blend")
    assert run.returncode == 2 and "-o names the output folder" in run.stderr
    assert not (tmp_path / "out").exists()
