"""Entry point of the warm-up process (run as a script by :mod:`.warmup`; not imported by the add-on).

``blender -b --factory-startup --python child.py -- --package P --repo-dir D --path S`` or
``python child.py --package P ...`` (the ``bpy`` module). Imports the extension as package ``P`` from the
repository folder ``D`` (the name the add-on uses, so the kernel cache entries are shared) with numba from the
site folder ``S``, then bakes the warm-up scenes (:func:`.scenes.run`). Exit code 0 when every scene baked.
"""

import argparse
import importlib
import os
import sys
import types


def _parse(argv):
    if "--" in argv:  # Blender passes its own arguments first
        argv = argv[argv.index("--") + 1 :]
    parser = argparse.ArgumentParser(prog="child.py")
    parser.add_argument("--package", required=True, help="the extension's package name, e.g. bl_ext.user_default.x")
    parser.add_argument("--repo-dir", required=True, help="the folder holding the extension's folder")
    parser.add_argument("--path", action="append", default=[], help="a folder to put first on sys.path (numba)")
    return parser.parse_args(argv)


def _import_package(name: str, repo_dir: str):
    """Import the extension as ``name`` from ``repo_dir``; for ``bl_ext.<repo>.<id>`` the ``bl_ext.<repo>`` namespace
    is made to point at ``repo_dir`` when this Blender does not know the repository (a custom folder, or
    ``--factory-startup``)."""
    parent = name.rpartition(".")[0]
    if not parent:  # a plain package (a development checkout): its folder's parent goes on sys.path
        sys.path.insert(0, repo_dir)
        return importlib.import_module(name)
    try:
        importlib.import_module(parent)
    except ImportError:
        pass
    known = [os.path.realpath(p) for p in getattr(sys.modules.get(parent), "__path__", None) or []]
    if os.path.realpath(repo_dir) not in known:
        namespace = types.ModuleType(parent)
        namespace.__path__ = [repo_dir]
        sys.modules[parent] = namespace
    return importlib.import_module(name)


def main(argv) -> int:
    args = _parse(argv)
    for path in reversed(args.path):
        sys.path.insert(0, path)
    import bpy  # noqa: F401  (Blender, or the bpy module: before the package, which needs it)

    package = _import_package(args.package, args.repo_dir)
    scenes = importlib.import_module(package.__name__ + ".addon.warmup.scenes")
    return scenes.run(package)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    if "bpy" in sys.modules and tuple(sys.modules["bpy"].app.version) < (4, 3, 0):
        os._exit(code)  # bpy 4.2 (module) crashes at interpreter teardown after registering panels
    sys.exit(code)
