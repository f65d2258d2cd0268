"""The architecture picture (docs/architecture.md) is current, and the layering it shows holds in the code."""

import ast
import functools
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "architecture.py"
ENGINES = ("rigid", "soft", "ipc")
SHARED_PIECES = ("fem", "friction", "contact_solvers", "math", "linalg", "formats")  # core/ folders of no engine
UI_NAMES = {("operators",), ("panels",), ("registration",), ("__main__",), ()}  # () is the package root
CORE_ONLY = "core imports only core/ (never addon/, operators/, panels/)"
NO_BPY = "core never imports bpy, mathutils or bmesh"
SHARED = "the shared core pieces import no engine"
SIBLINGS = "engines import no other engine"
ADDON = "addon/ imports neither operators/ nor panels/"
CLI = "cli/ (the command line) imports neither operators/ nor panels/"


@functools.cache
def architecture():
    """docs/architecture.py imported as a module from its path."""
    spec = importlib.util.spec_from_file_location("contact_lab_docs_architecture", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def drawing() -> str:
    """What docs/architecture.py draws from the tree now."""
    return architecture().render(ROOT)


def core_piece(parts: tuple[str, ...]) -> str | None:
    """The piece of core/ a module belongs to (``rigid``, ``friction``, ``jit``, ``__init__``), else None."""
    if parts[:1] != ("core",):
        return None
    return parts[1] if len(parts) > 1 else "__init__"  # ("core",) is the package facade, core/__init__.py


@functools.cache
def violations(root: Path) -> dict[str, list[str]]:
    """Every import of the tree at ``root`` that breaks a layering rule, by rule (found with ``ast``)."""
    found = {rule: [] for rule in (CORE_ONLY, NO_BPY, SHARED, SIBLINGS, ADDON, CLI)}
    for source, target in architecture().imports(root):
        edge = f"{'/'.join(source)} -> {'/'.join(target) or '(package root)'}"
        src, tgt = core_piece(source), core_piece(target)
        if src and tgt is None:
            found[CORE_ONLY].append(edge)
        if src and src not in (*ENGINES, "__init__") and tgt in (*ENGINES, "__init__"):  # the facade imports rigid
            found[SHARED].append(edge)
        if src in ENGINES and tgt in (*ENGINES, "__init__") and tgt != src:
            found[SIBLINGS].append(edge)
        if source[:1] == ("addon",) and target[:1] in UI_NAMES:
            found[ADDON].append(edge)
        if source[:1] == ("cli",) and target[:1] in (("operators",), ("panels",)):
            found[CLI].append(edge)
    for path in sorted((root / "core").rglob("*.py")):
        for node in ast.walk(architecture().parse(path)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            bad = [n for n in names if n.split(".")[0] in ("bpy", "mathutils", "bmesh")]
            found[NO_BPY] += [f"{path.relative_to(root).as_posix()} -> {n}" for n in bad]
    return found


def test_committed_svg_is_what_the_tree_gives():
    """docs/architecture.svg equals what docs/architecture.py draws from the tree now (else re-run the script)."""
    committed = (ROOT / "docs" / "architecture.svg").read_text(encoding="utf-8")
    assert committed == drawing(), "stale: run .venv/bin/python docs/architecture.py"


def test_check_flag_fails_on_a_stale_svg(tmp_path, monkeypatch):
    """``docs/architecture.py --check`` exits 1 when the SVG differs from the tree and 0 when it matches."""
    module = architecture()
    monkeypatch.setattr(module, "SVG_PATH", tmp_path / "architecture.svg")
    monkeypatch.setattr(module, "render", lambda root: drawing())  # the tree's drawing, computed once
    module.SVG_PATH.write_text(drawing().replace("core/soft/", "core/fem/"), encoding="utf-8")
    assert module.main(["--check"]) == 1
    assert module.main([]) == 0 and module.main(["--check"]) == 0


def test_picture_shows_every_engine_and_package_folder():
    """Every engine (with its builder, model and result) and every package folder of core/ and addon/ is drawn."""
    svg = drawing()
    engines = architecture().engines(ROOT)
    assert set(ENGINES) <= set(engines)
    assert all(name in svg for shape in engines.values() for name in shape)
    folders = [
        p.parent.relative_to(ROOT).as_posix() for top in ("core", "addon") for p in (ROOT / top).rglob("__init__.py")
    ]
    assert all(f"{Path(f).name}/" in svg for f in folders if f not in ("core", "addon"))


def test_engine_builders_are_found_where_they_live():
    """Each engine's builder is read from its class with ``finalize()``, also when the engine imports it from a
    shared piece (the soft engine's ``SoftWorldBuilder`` lives in core/fem/), and not mistaken for another class's
    (the IPC builder derives from the soft one, whose ``finalize()`` gives a SoftWorld)."""
    assert architecture().engines(ROOT) == {
        "rigid": ("ModelBuilder", "Model", "Trajectory"),
        "soft": ("SoftWorldBuilder", "SoftWorld", "SoftTrajectory"),
        "ipc": ("IpcWorldBuilder", "IpcWorld", "IpcTrajectory"),
    }


def test_import_graph_sees_the_imports_it_checks():
    """The ast import graph finds known imports, so an empty list of violations is not vacuous."""
    edges = architecture().imports(ROOT)
    tops = {(source[:2], target[:2]) for source, target in edges}
    assert (("core", "ipc"), ("core", "fem")) in tops and (("core", "soft"), ("core", "fem")) in tops
    assert any(s[:1] == ("addon",) and t[:1] == ("core",) for s, t in tops)
    assert any(s[:1] == ("operators",) and t[:1] == ("addon",) for s, t in tops)
    assert len(edges) > 100


def test_core_imports_nothing_outside_core():
    """core/ never imports from addon/, operators/, panels/ or the package root."""
    assert violations(ROOT)[CORE_ONLY] == []


def test_core_never_imports_bpy():
    """No module under core/ imports bpy, mathutils or bmesh."""
    assert violations(ROOT)[NO_BPY] == []


def test_shared_core_pieces_import_no_engine():
    """fem, friction, contact_solvers, math, linalg, formats, jit, config, enums, errors import no engine."""
    assert violations(ROOT)[SHARED] == []


def test_shared_pieces_are_what_the_tree_has():
    """The shared folders the rules speak of are the core/ folders that are not engines (fem among them)."""
    folders = {p.parent.name for p in (ROOT / "core").glob("*/__init__.py")}
    assert folders == set(ENGINES) | set(SHARED_PIECES)


def test_engines_import_no_sibling_engine():
    """rigid, soft and ipc import no other engine: soft and ipc share what they both need through core/fem/."""
    assert violations(ROOT)[SIBLINGS] == []


def test_addon_imports_neither_operators_nor_panels():
    """addon/ (the bridge) never imports the UI: operators/, panels/, registration.py, the package root."""
    assert violations(ROOT)[ADDON] == []


def test_layering_rules_catch_violations(tmp_path, write_tree):
    """On a small tree that breaks every rule once, each rule reports exactly that import."""
    files = {
        "core/__init__.py": "from .rigid import a\n",
        "core/jit.py": "from .soft import world\n",
        "core/rigid/__init__.py": "",
        "core/rigid/a.py": "import bpy\nfrom ..soft import world\nfrom ...addon import units\n",
        "core/soft/__init__.py": "",
        "core/soft/world.py": "from ..ipc import b\nfrom .. import jit\n",
        "core/ipc/__init__.py": "",
        "core/ipc/b.py": "from ..soft.world import World\nfrom ..fem import mesh\n",
        "core/fem/__init__.py": "",
        "core/fem/mesh.py": "from ..ipc import b\nfrom ..math import quat\n",
        "core/math/__init__.py": "",
        "core/math/quat.py": "",
        "addon/__init__.py": "",
        "addon/units.py": "from ..operators import bake\nfrom ..core.soft import world\n",
        "operators/__init__.py": "",
        "operators/bake.py": "from ..addon import units\n",
        "panels/__init__.py": "",
        "cli/__init__.py": "",
        "cli/single.py": "from ..panels import draw\nfrom .. import register\n",
    }
    write_tree(files)
    assert violations(tmp_path) == {
        CORE_ONLY: ["core/rigid/a -> addon/units"],
        NO_BPY: ["core/rigid/a.py -> bpy"],
        SHARED: ["core/fem/mesh -> core/ipc/b", "core/jit -> core/soft/world"],
        SIBLINGS: ["core/ipc/b -> core/soft/world", "core/rigid/a -> core/soft/world", "core/soft/world -> core/ipc/b"],
        ADDON: ["addon/units -> operators/bake"],
        CLI: ["cli/single -> panels"],
    }


def test_cli_imports_neither_operators_nor_panels():
    """cli/ (the command line beside the bridge) never imports the UI's operators/ or panels/."""
    assert violations(ROOT)[CLI] == []


def import_circles(root: Path) -> list[list[str]]:
    """Every circle of imports in the tree at ``root`` (imports inside functions count), each as its sorted modules:
    the strongly connected components of the ``ast`` import graph with more than one module, or a module importing
    itself. A package is its ``__init__``."""

    def node(parts: tuple[str, ...]) -> tuple[str, ...]:
        return (*parts, "__init__") if (root.joinpath(*parts) / "__init__.py").is_file() else parts

    graph: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for source, target in architecture().imports(root):
        graph.setdefault(node(source), set()).add(node(target))
    index: dict[tuple[str, ...], int] = {}
    low: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []
    circles = []

    def visit(v):  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1 or v in graph.get(v, ()):
                circles.append(sorted("/".join(p) for p in component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return sorted(circles)


def test_no_import_circles():
    """No module imports itself back through others, not even from inside a function (the shared types live in leaf
    modules: addon/bake/threads.py, addon/checks/findings.py, cli/children.py)."""
    assert import_circles(ROOT) == []


def test_import_circles_are_found(tmp_path, write_tree):
    """On a small tree: a circle hidden by a function-level import, a package importing its own module back, and a
    chain without a circle; only the circles are reported."""
    files = {
        "addon/__init__.py": "",
        "addon/bake.py": "from .worker import CompileWatch\n",
        "addon/worker.py": "def start():\n    from . import bake\n",
        "addon/checks/__init__.py": "from .validate import run\n",
        "addon/checks/validate.py": "from . import run_all\n",
        "addon/units.py": "",
        "addon/scene.py": "from . import units\n",
        "operators/__init__.py": "",
        "operators/bake.py": "from ..addon import scene\n",
    }
    write_tree(files)
    assert import_circles(tmp_path) == [
        ["addon/bake", "addon/worker"],
        ["addon/checks/__init__", "addon/checks/validate"],
    ]
