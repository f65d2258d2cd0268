"""The code that runs off Blender's main thread or outside Blender never reaches bpy: each engine's ``build.py``
(the bake's worker thread) and the command line's batch side (a plain Python process: ``cli/`` but ``single.py``).
Read with ``ast``, nothing is imported; an import counts wherever it is written (inside a function too), except
under ``if TYPE_CHECKING:``.
"""

import ast
import functools
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_MODULES = ("bpy", "mathutils", "bmesh")
FORBIDDEN_PACKAGES = ("panels", "operators")


def build_modules(root: Path) -> list[Path]:
    """Every engine's build module: ``addon/<engine>/build.py``."""
    return sorted((root / "addon").glob("*/build.py"))


def batch_side(root: Path) -> list[Path]:
    """The command line's modules that run in a plain Python process: ``cli/`` except the single-file bake and the
    FCLIB export (which run inside Blender)."""
    return [p for p in sorted((root / "cli").glob("*.py")) if p.name not in ("single.py", "fclib_export.py")]


def _runtime_imports(tree: ast.AST):
    """Import nodes of ``tree`` that run, in ``ast.walk`` order: those under ``if TYPE_CHECKING:`` are left out."""
    found, todo = [], deque([tree])
    while todo:
        node = todo.popleft()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        skipped = node.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) else ()
        todo.extend(child for child in ast.iter_child_nodes(node) if not any(child is stmt for stmt in skipped))
    return found


def _module_path(root: Path, parts: tuple[str, ...]) -> Path | None:
    """The file of the package module ``parts`` (a module file or a package's ``__init__.py``), or None."""
    if not parts:
        return root / "__init__.py"
    file, package = root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")
    return file if file.is_file() else package if package.is_file() else None


@functools.cache
def _imports_of(root: Path, path: Path) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """``(outside modules by full name, package modules as path parts)`` that the module at ``path`` imports; a
    package module brings its parent packages' ``__init__.py`` along (importing it runs them), except the package
    root's: Blender's entry point, which imports only inside ``register()``."""
    here = path.relative_to(root).with_suffix("").parts
    package = here[:-1]  # an __init__'s package is its folder, a module's the folder it sits in
    outside, inside = [], []
    for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1] + tuple(
                (node.module or "").split(".") if node.module else ()
            )
            targets = [base + (a.name,) if _module_path(root, base + (a.name,)) else base for a in node.names]
        else:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            full = [n.split(".") for n in names]
            outside += [".".join(f) for f in full if f[0] != "contact_lab"]
            targets = [tuple(f[1:]) for f in full if f[0] == "contact_lab"]
        for target in targets:
            inside += [target[:k] for k in range(len(target) + 1)]  # the root package, its subpackages, the module
    return tuple(outside), tuple(inside)


def forbidden_reach(root: Path, start: Path) -> list[str]:
    """Every forbidden import reachable from the module ``start``, each as the chain of modules that leads to it."""
    found, seen = [], set()
    todo = [(start, [start.relative_to(root).as_posix()])]
    while todo:
        path, chain = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        outside, inside = _imports_of(root, path)
        found += [" -> ".join([*chain, n]) for n in outside if n.split(".")[0] in FORBIDDEN_MODULES]
        for parts in inside:
            target = _module_path(root, parts)
            if target is None:
                continue
            step = [*chain, target.relative_to(root).as_posix()]
            if parts[:1] and parts[0] in FORBIDDEN_PACKAGES:
                found.append(" -> ".join(step))
            elif parts and target != path:
                todo.append((target, step))
    return sorted(set(found))


def test_every_engine_has_a_build_module():
    """rigid, soft and ipc each build on any thread from a module of their own (the list below is not empty)."""
    assert {p.parent.name for p in build_modules(ROOT)} >= {"rigid", "soft", "ipc"}


def test_build_modules_never_reach_bpy_or_the_ui():
    """No engine's build.py imports bpy, mathutils, bmesh, panels/ or operators/, directly or through the modules
    it imports (the worker thread runs it)."""
    assert {p.relative_to(ROOT).as_posix(): forbidden_reach(ROOT, p) for p in build_modules(ROOT)} == {
        p.relative_to(ROOT).as_posix(): [] for p in build_modules(ROOT)
    }


def test_cli_batch_side_never_reaches_bpy_or_the_ui():
    """The command line's batch side (arguments, batches, children, Dask, progress) imports no bpy, mathutils,
    bmesh, panels/ or operators/, directly or through what it imports: a batch process only starts children."""
    assert {p.name for p in batch_side(ROOT)} >= {"batch.py", "children.py", "cluster.py", "command.py", "progress.py"}
    assert {p.relative_to(ROOT).as_posix(): forbidden_reach(ROOT, p) for p in batch_side(ROOT)} == {
        p.relative_to(ROOT).as_posix(): [] for p in batch_side(ROOT)
    }


def test_gather_modules_are_seen_reaching_bpy():
    """The check sees a real path to bpy: each engine's gather.py reaches it (through ``addon/scene.py``)."""
    for engine in ("rigid", "soft", "ipc"):
        assert forbidden_reach(ROOT, ROOT / "addon" / engine / "gather.py"), engine
    assert "cli/single.py -> bpy" in forbidden_reach(ROOT, ROOT / "cli" / "single.py")


def test_forbidden_reach_follows_every_kind_of_import(tmp_path, write_tree):
    """On a small tree: a function-level bpy import two modules away, an absolute import of the package, a
    package __init__ that imports the UI, and an import under TYPE_CHECKING (left out) are each judged."""
    files = {
        "__init__.py": "",
        "addon/__init__.py": "",
        "addon/units.py": "import numpy\n",
        "addon/scene.py": "def f():\n    import bpy.types\n",
        "addon/engine/__init__.py": "",
        "addon/engine/build.py": "from .. import units\nfrom ..scene import f\n",
        "addon/ui_user/__init__.py": "from ...panels import physics\n",
        "addon/ui_user/leaf.py": "",
        "addon/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import mathutils\n",
        "addon/absolute.py": "import contact_lab.addon.ui_user.leaf\nfrom . import typed\n",
        "panels/__init__.py": "",
        "panels/physics.py": "",
    }
    write_tree(files)
    assert forbidden_reach(tmp_path, tmp_path / "addon/engine/build.py") == [
        "addon/engine/build.py -> addon/scene.py -> bpy.types"
    ]
    assert forbidden_reach(tmp_path, tmp_path / "addon/absolute.py") == [
        "addon/absolute.py -> addon/ui_user/__init__.py -> panels/__init__.py",
        "addon/absolute.py -> addon/ui_user/__init__.py -> panels/physics.py",
    ]
    assert forbidden_reach(tmp_path, tmp_path / "addon/typed.py") == []
