"""The built Linux extension zip, installed into a real Blender as an artist would, enabled, and baking.

A fresh Blender process (this tier's bpy module) with a temporary ``BLENDER_USER_RESOURCES`` installs the zip through
Blender's own extension installer (``extensions.package_install_files``, enable on install), so the wheels it bundles
are unpacked into that user folder. numba and llvmlite are then imported *only* from those bundled wheels (the test
environment has its own copies, hidden from the child), the Numba cache lands in the extension's user folder, and a
box dropped on a plane is baked through the operator. Reference: it rests at half its size above the plane.

The headless CLI run from the installed extension's folder (``PYTHONPATH=<repo> python -m contact_lab bake``) then
bakes the saved file as the add-on does: under the add-on's package name, from the add-on's kernel cache, so it
compiles nothing (reference: the report's numba compile count is 0, where the first bake compiled hundreds).

With ``CONTACT_LAB_COLD_WARMUP=1`` the installed extension's own warm-up then runs (a background process, as after
enabling it in the UI) and a fresh process bakes the default scene of every engine, which must compile nothing.

The zip is built the way ``make build`` builds it (Blender's ``blender_ext.py build --split-platforms``) from a copy of
the repository whose manifest lists the Linux wheels, which are downloaded once into ``wheels/`` (as ``make wheels``).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINUX_WHEEL_TAG = "manylinux_2_28_x86_64"
PYTHONS = ("3.11", "3.13")

ALL_TIERS = os.environ.get("CONTACT_LAB_INSTALL_TEST_ALL_TIERS") == "1"
"""The install compiles its first bake's kernels inside the fresh extension (a minute or more of CPU): ``make test``
runs it on the Blender 5.0 tier; set this variable to run it on 4.2 and 5.2 as well (the CI budget is 15 minutes)."""


def _tier_runs_it() -> bool:
    try:
        import bpy
    except ImportError:  # no Blender module: conftest skips the tier's tests anyway
        return False
    return ALL_TIERS or tuple(bpy.app.version[:2]) == (5, 0)


pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="builds and installs the Linux zip"),
    pytest.mark.skipif(not _tier_runs_it(), reason="runs on the 5.0 tier (CONTACT_LAB_INSTALL_TEST_ALL_TIERS=1: all)"),
]


def _makefile_var(name: str) -> str:
    return re.search(rf"^{name}\s*:?=\s*(\S+)", (REPO / "Makefile").read_text(), re.M).group(1)


def _bpy_scripts() -> Path:
    """Blender's bundled scripts folder (``bpy/<version>/scripts``), where its extension CLI lives."""
    import importlib.util

    package = Path(importlib.util.find_spec("bpy").submodule_search_locations[0])
    return sorted(package.glob("[0-9]*/scripts"))[-1]


def _linux_wheels() -> list[str]:
    """Download (once) the Linux numba and llvmlite wheels the manifest lists; return their manifest paths."""
    text = (REPO / "blender_manifest.toml").read_text(encoding="utf-8")
    listed = [w for w in re.findall(r'"(\./wheels/[^"]+\.whl)"', text) if LINUX_WHEEL_TAG in w]
    missing = [w for w in listed if not (REPO / w).is_file()]
    if missing:
        pins = [f"numba=={_makefile_var('NUMBA_VERSION')}", f"llvmlite=={_makefile_var('LLVMLITE_VERSION')}"]
        for python in PYTHONS:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--dest",
                 str(REPO / "wheels"), "--only-binary=:all:", "--no-deps", "--python-version", python,
                 "--platform", LINUX_WHEEL_TAG, *pins],
                check=True, timeout=600,
            )  # fmt: skip
    assert all((REPO / w).is_file() for w in listed), listed
    return listed


@pytest.fixture(scope="module")
def linux_zip(tmp_path_factory) -> Path:
    wheels = _linux_wheels()
    src = tmp_path_factory.mktemp("src") / "contact_lab"
    shutil.copytree(
        REPO, src,
        ignore=shutil.ignore_patterns(".venv*", ".git", "out", "dist", "build", "*.egg-info", "__pycache__", "*.nb?"),
    )  # fmt: skip
    manifest = (src / "blender_manifest.toml").read_text(encoding="utf-8")
    listing = "wheels = [\n" + "".join(f'  "{w}",\n' for w in wheels) + "]\n"
    manifest = re.sub(r"(?ms)^wheels = \[.*?^\]\n", listing, manifest)
    manifest = re.sub(r"(?m)^platforms = \[.*\]$", 'platforms = ["linux-x64"]', manifest)
    (src / "blender_manifest.toml").write_text(manifest, encoding="utf-8")
    out = tmp_path_factory.mktemp("dist")
    scripts = _bpy_scripts()
    result = subprocess.run(
        [sys.executable, str(scripts / "addons_core/bl_pkg/cli/blender_ext.py"), "build",
         f"--valid-tags={scripts / 'modules/_bpy_internal/extensions/tags.py'}", "--split-platforms",
         "--source-dir", str(src), "--output-dir", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = out.glob("contact_lab-*-linux_x64.zip")
    return built


CHILD = textwrap.dedent(
    """
    import importlib.abc, importlib.machinery, json, sys

    class BundledOnly(importlib.abc.MetaPathFinder):
        # numba and llvmlite only from the wheels Blender unpacked for the extension
        def find_spec(self, name, path=None, target=None):
            if name not in ("numba", "llvmlite"):
                return None
            bundled = [p for p in sys.path if "/extensions/.local/" in p]
            spec = importlib.machinery.PathFinder.find_spec(name, bundled)
            if spec is None:
                raise ImportError(f"{name} is not among the extension's bundled wheels ({bundled})")
            return spec

    sys.meta_path.insert(0, BundledOnly())
    import bpy

    out = {"install": sorted(bpy.ops.extensions.package_install_files(
        filepath=sys.argv[1], repo="user_default", enable_on_install=True))}
    module = sys.modules.get("bl_ext.user_default.contact_lab")
    out["module_file"] = getattr(module, "__file__", None)
    import llvmlite, numba
    out["numba_file"], out["llvmlite_file"] = numba.__file__, llvmlite.__file__
    out["numba_cache"] = numba.config.CACHE_DIR
    scene = bpy.context.scene
    for obj in list(scene.objects):
        bpy.data.objects.remove(obj)
    bpy.ops.mesh.primitive_cube_add(size=0.2, location=(0.0, 0.0, 0.3))
    box = bpy.context.active_object
    box.contact_lab.role = "ACTIVE"
    bpy.ops.mesh.primitive_plane_add(size=4.0)
    ground = bpy.context.active_object
    ground.contact_lab.role, ground.contact_lab.shape = "PASSIVE", "PLANE"
    scene.frame_start, scene.frame_end = 1, 24
    out["bake"] = sorted(bpy.ops.contact_lab.bake())
    scene.frame_set(24)
    out["box_z"] = box.matrix_world.translation.z
    report = json.loads(scene.contact_lab.last_report)
    out["report"], out["compiled_kernels"] = report["status"], report["compiled_kernels"]
    bpy.ops.wm.save_as_mainfile(filepath=sys.argv[2])
    if sys.argv[3] == "warm-up":  # the extension's own warm-up, started as the UI starts it
        warmup = sys.modules["bl_ext.user_default.contact_lab.addon.warmup.warmup"]
        out["warm_up_started"] = warmup.start()
        state = warmup.wait(3600)
        out["warm_up"] = {"state": state.state, "compiled": state.compiled, "errors": state.errors}
    print("RESULT " + json.dumps(out), flush=True)
    """
)

COLD_WARMUP = os.environ.get("CONTACT_LAB_COLD_WARMUP") == "1"


def test_built_zip_installs_enables_and_bakes(linux_zip, tmp_path):
    user = tmp_path / "blender_user"
    user.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env["BLENDER_USER_RESOURCES"] = str(user)
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    saved = tmp_path / "box.blend"
    done = subprocess.run(
        [sys.executable, str(script), str(linux_zip), str(saved), "warm-up" if COLD_WARMUP else "-"], env=env,
        cwd=tmp_path, capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stdout[-3000:] + done.stderr[-3000:]
    out = json.loads(lines[-1].removeprefix("RESULT "))
    installed = user / "extensions"
    assert out["install"] == ["FINISHED"]
    assert Path(out["module_file"]).is_relative_to(installed / "user_default" / "contact_lab")
    for key in ("numba_file", "llvmlite_file"):
        assert Path(out[key]).is_relative_to(installed / ".local"), out[key]
    assert Path(out["numba_cache"]).is_relative_to(user)
    assert out["bake"] == ["FINISHED"] and out["report"] == "FINISHED"
    assert out["box_z"] == pytest.approx(0.1, abs=1e-3)  # resting on the plane at half its size
    assert out["compiled_kernels"] > 50  # the first bake in a fresh extension compiled (its cache was empty)

    # the CLI from the extension's folder: the add-on's package name and kernel cache
    cli_report = tmp_path / "cli.json"
    cli_env = dict(env, PYTHONPATH=str(installed / "user_default"))
    done = subprocess.run(
        [sys.executable, "-m", "contact_lab", "bake", str(saved), "-o", str(tmp_path / "cli.blend"),
         "--report", str(cli_report)],
        env=cli_env, cwd=tmp_path, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cli = json.loads(cli_report.read_text())
    assert cli["status"] == "FINISHED" and cli["package"] == "bl_ext.user_default.contact_lab"
    assert cli["compiled_kernels"] == 0, cli

    if COLD_WARMUP:
        assert out["warm_up_started"] and out["warm_up"]["state"] == "done", out["warm_up"]
        first = tmp_path / "first.json"
        done = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("first_bakes_probe.py")), str(first),
             "bl_ext.user_default.contact_lab"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1800, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        results = json.loads(first.read_text())
        print(f"\ninstalled warm-up: {out['warm_up']}; first bakes: {results}")
        assert all(r["compiled_kernels"] == 0 and r["report_status"] == "FINISHED" for r in results.values()), results
