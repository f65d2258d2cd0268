"""Packaging checks: the manifest passes Blender's own validator and the built zip holds the right files.

Blender's extension CLI (``blender_ext.py``) ships inside the ``bpy`` wheel and runs with plain Python, so
these tests need the bpy package on disk but never import it (``make test`` runs them in the core tier).
The wheels are not downloaded here (``make build`` does that, ~300 MB): the build test uses a copy of the
manifest without ``wheels``.
"""

import argparse
import ast
import hashlib
import importlib.machinery
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "blender_manifest.toml"
PLATFORM_WHEEL_TAGS = {
    "linux-x64": "manylinux_2_28_x86_64",
    "windows-x64": "win_amd64",
    "macos-arm64": "macosx_12_0_arm64",
}
PYTHON_TAGS = ("cp311", "cp313")  # Blender 4.2-5.0 and 5.1+
WHEEL_RE = re.compile(r"^(?P<name>[A-Za-z0-9_]+)-(?P<version>[^-]+)-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")


def _bpy_scripts_dir() -> Path | None:
    # PathFinder looks on sys.path only: the mocked-bpy tests may have put a stand-in into sys.modules.
    spec = importlib.machinery.PathFinder.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        return None
    candidates = sorted(Path(spec.submodule_search_locations[0]).glob("[0-9]*/scripts"))
    return candidates[-1] if candidates else None


SCRIPTS = _bpy_scripts_dir()
needs_blender_ext = pytest.mark.skipif(SCRIPTS is None, reason="bpy (which ships blender_ext.py) is not installed")


def _blender_ext(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    tool = SCRIPTS / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    return subprocess.run(
        [sys.executable, str(tool), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def _valid_tags() -> str:
    return "--valid-tags=" + str(SCRIPTS / "modules" / "_bpy_internal" / "extensions" / "tags.py")


@pytest.fixture(scope="module")
def manifest() -> dict:
    with MANIFEST.open("rb") as fh:
        return tomllib.load(fh)


def _makefile_var(name: str) -> str:
    m = re.search(rf"^{name}\s*:=\s*(\S+)", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert m, f"{name} not found in the Makefile"
    return m.group(1)


@needs_blender_ext
def test_manifest_passes_blenders_validator_with_official_tags():
    result = _blender_ext("validate", _valid_tags(), str(REPO))
    assert result.returncode == 0, result.stdout + result.stderr


@needs_blender_ext
def test_validator_rejects_a_broken_manifest(tmp_path):
    """The validator run above can fail: a trailing period in the tagline is an error."""
    text = MANIFEST.read_text(encoding="utf-8")
    broken = re.sub(r'^tagline = "(.*)"$', r'tagline = "\1."', text, count=1, flags=re.MULTILINE)
    assert broken != text
    (tmp_path / "blender_manifest.toml").write_text(broken, encoding="utf-8")
    shutil.copy(REPO / "__init__.py", tmp_path)
    result = _blender_ext("validate", _valid_tags(), str(tmp_path))
    assert result.returncode != 0


def test_manifest_identity(manifest):
    assert manifest["id"] == "contact_lab"
    assert manifest["type"] == "add-on"
    assert manifest["blender_version_min"] == "4.2.0"
    assert manifest["blender_version_max"] == "5.3.0"  # exclusive: the wheels cover Python 3.11 and 3.13 only
    assert "example" not in manifest["maintainer"]  # no placeholder
    assert re.fullmatch(r"https://[^\s\"]+", manifest["website"]), manifest.get("website")
    assert len(manifest["tagline"]) <= 64
    assert manifest["tagline"][-1].isalnum()
    assert set(manifest["platforms"]) == set(PLATFORM_WHEEL_TAGS)
    assert len(manifest["permissions"]["files"]) <= 64
    assert {"PC2", ".blend", "Numba"} <= set(
        manifest["permissions"]["files"].replace(";", " ").split()
    )  # what is written


def test_license_is_the_gpl_the_manifest_declares(manifest):
    """LICENSE is the GNU GPL version 3 exactly as the FSF distributes it (gpl-3.0.txt, whose SHA-256 this is),
    matching the manifest's GPL-3.0-or-later."""
    assert manifest["license"] == ["SPDX:GPL-3.0-or-later"]
    text = (REPO / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986"


def test_manifest_wheels_cover_every_platform_and_python(manifest):
    """numba + llvmlite for cp311 and cp313 on every platform, the versions the Makefile downloads, no numpy."""
    versions = {"numba": _makefile_var("NUMBA_VERSION"), "llvmlite": _makefile_var("LLVMLITE_VERSION")}
    found = set()
    for path in manifest["wheels"]:
        assert path.startswith("./wheels/"), path
        m = WHEEL_RE.match(path.removeprefix("./wheels/"))
        assert m, f"not a wheel file name: {path}"
        assert m["name"] in versions, f"unexpected wheel (never bundle numpy): {path}"
        assert m["version"] == versions[m["name"]], path
        platform = next((p for p, tag in PLATFORM_WHEEL_TAGS.items() if tag in m["plat"].split(".")), None)
        assert platform is not None, f"wheel for no declared platform: {path}"
        found.add((m["name"], m["py"], platform))
    expected = {(n, py, p) for n in versions for py in PYTHON_TAGS for p in PLATFORM_WHEEL_TAGS}
    assert found == expected
    assert len(manifest["wheels"]) == len(expected)


def test_build_excludes_keep_the_defaults(manifest):
    """A custom ``paths_exclude_pattern`` replaces Blender's defaults; they must be re-added."""
    patterns = manifest["build"]["paths_exclude_pattern"]
    for default in ("__pycache__/", ".*", "/*.zip", "*.blend[1-9]"):
        assert default in patterns
    for dev_only in ("/tests/", "/demo/", "/Makefile", "/pyproject.toml"):
        assert dev_only in patterns


@needs_blender_ext
def test_built_zip_contains_the_package_and_no_dev_files(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(
        REPO,
        src,
        ignore=shutil.ignore_patterns(".venv*", ".typecheck", ".git", "out", "dist", "wheels", "build", "*.egg-info"),
    )
    # a stray cache and dot-file, as a developer's tree has them
    (src / "core" / "__pycache__").mkdir(exist_ok=True)
    (src / "core" / "__pycache__" / "stale.cpython-311.pyc").write_bytes(b"")
    (src / ".hidden").write_text("x")
    text = (src / "blender_manifest.toml").read_text(encoding="utf-8")
    (src / "blender_manifest.toml").write_text(re.sub(r"(?ms)^wheels = \[.*?^\]\n", "", text), encoding="utf-8")
    out = tmp_path / "contact_lab.zip"
    result = _blender_ext("build", _valid_tags(), "--source-dir", str(src), "--output-filepath", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    names = zipfile.ZipFile(out).namelist()
    assert "blender_manifest.toml" in names
    assert "__init__.py" in names
    assert "LICENSE" in names  # Blender's extension guidelines want the license text inside the zip
    assert zipfile.ZipFile(out).read("LICENSE") == (REPO / "LICENSE").read_bytes()
    assert "CHANGELOG.md" in names  # what changed, for whoever has only the installed extension
    for package in ("addon/", "cli/", "core/", "operators/", "panels/"):
        assert any(n.startswith(package) and n.endswith(".py") for n in names), package
    leaked = [
        n
        for n in names
        if n.startswith(("tests/", "demo/", "docs/", "out/", "dist/", "."))
        or "__pycache__" in n
        or n in ("Makefile", "pyproject.toml", "README.md")
        or n.endswith((".nbi", ".nbc", ".pyc"))
    ]
    assert leaked == []
    result = _blender_ext("validate", _valid_tags(), str(out))
    assert result.returncode == 0, result.stdout + result.stderr


# ---- `make demo` writes under out/ only; `make pictures` (--docs) also into docs/ ----------------------------------
# The demo scripts import bpy, so these tests read their source (no bake): the two functions of demo/common.py that
# decide where a demo writes are compiled alone, with stand-ins for what they call.

DEMO = REPO / "demo"


def _common_function(name: str, namespace: dict):
    """Compile the top-level function ``name`` of demo/common.py in ``namespace``; return it."""
    source = (DEMO / "common.py").read_text(encoding="utf-8")
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
    exec(compile(ast.Module(body=[node], type_ignores=[]), "demo/common.py", "exec"), namespace)
    return namespace[name]


def test_demo_options_write_under_out_and_into_docs_only_with_the_flag(tmp_path):
    arguments = _common_function("arguments", {"argparse": argparse, "Path": Path, "REPO": tmp_path})
    args = arguments("demo").parse_args([])
    assert args.out == tmp_path / "out"
    assert args.docs is False
    assert arguments("demo").parse_args(["--docs"]).docs is True


def test_contact_sheet_reaches_docs_only_with_the_flag(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    namespace = {"Path": Path, "shutil": shutil, "DOCS": docs}
    namespace["compose_sheet"] = lambda paths, sheet: sheet.write_bytes(b"".join(p.read_bytes() for p in paths))
    publish_sheet = _common_function("publish_sheet", namespace)
    out = tmp_path / "out"
    out.mkdir()
    (out / "frame_1.png").write_bytes(b"frame")
    sheet = out / "x_contact_sheet.png"
    publish_sheet([out / "frame_1.png"], sheet, False)
    assert sheet.read_bytes() == b"frame"
    assert list(docs.iterdir()) == []
    publish_sheet([out / "frame_1.png"], sheet, True)
    assert (docs / sheet.name).read_bytes() == b"frame"


def _docs_paths(tree: ast.AST) -> list[ast.Constant]:
    """String constants naming docs/ (``"docs"`` or ``"docs/..."``) outside docstrings and help texts."""
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skip.add(id(body[0].value))  # a docstring
        if isinstance(node, ast.keyword) and node.arg == "help":
            skip.add(id(node.value))
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip
        if n.value.strip("/") == "docs" or n.value.startswith("docs/")
    ]


def _docs_readers(tree: ast.AST) -> list[str]:
    """The function around every read of ``DOCS`` (or ``common.DOCS``); "<module>" for one outside functions."""
    readers = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if (isinstance(child, ast.Name) and child.id == "DOCS" and isinstance(child.ctx, ast.Load)) or (
                isinstance(child, ast.Attribute) and child.attr == "DOCS"
            ):
                readers.append(where)
            visit(child, child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where)

    visit(tree, "<module>")
    return readers


def test_demo_scripts_reach_docs_only_through_the_flag():
    """docs/ is named once, DOCS in demo/common.py; only publish_sheet uses it; every call passes ``args.docs``."""
    scripts = sorted(DEMO.glob("*.py"))
    assert len(scripts) >= 6
    calls = 0
    for script in scripts:
        tree = ast.parse(script.read_text(encoding="utf-8"))
        named = _docs_paths(tree)
        readers = _docs_readers(tree)
        if script.name == "common.py":
            assert len(named) == 1 and set(readers) == {"publish_sheet"}, (script.name, readers)
        else:
            assert named == [] and readers == [], (script.name, readers)
        for call in ast.walk(tree):
            if (
                isinstance(call, ast.Call)
                and getattr(call.func, "attr", getattr(call.func, "id", "")) == "publish_sheet"
            ):
                calls += 1
                assert ast.unparse(call.args[2]) == "args.docs", f"{script.name}: {ast.unparse(call)}"
    # every demo once, but the demos built on common.run_scenes (soft, IPC, joints) share its one call
    shared = [s for s in scripts if s.name != "common.py" and "common.run_scenes(" in s.read_text(encoding="utf-8")]
    assert len(shared) >= 2
    assert calls == (len(scripts) - 1 - len(shared)) + 1


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_runs_every_demo_and_only_make_pictures_passes_docs():
    def dry_run(target: str) -> str:
        result = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout

    demos = sorted(f"demo/{p.name}" for p in DEMO.glob("build_*.py"))
    demo, pictures = dry_run("demo"), dry_run("pictures")
    for script in demos:
        assert script in demo and script in pictures, script
    assert "--docs" not in demo
    assert '"$script" --docs' in pictures
    ignored = {line.strip() for line in (REPO / ".gitignore").read_text().splitlines()}
    assert ignored & {"out/", "/out/"}  # where the demos write
