"""The fingerprint of the core's sources that names the kernel cache directory (a leaf: no bpy, no numba, so the
command line's batch side and the Dask workers' check read it too)."""

import hashlib
from pathlib import Path

CORE_DIR = Path(__file__).resolve().parents[2] / "core"
"""Sources of the kernels whose cache this module places."""


def core_source_fingerprint(core_dir: Path = CORE_DIR) -> str:
    """Hash (16 hex digits) of every ``core/**/*.py`` source, naming the kernel cache directory.

    numba invalidates a cached kernel only when *its own* file changes: a kernel calling a function of
    another file keeps a stale compiled copy after that file changes (seen here: a cached dense PROX kept
    an old r-factor rule), and an upgrade can keep file timestamps. One cache directory per source
    fingerprint makes every change of the core start from a clean cache. Read as bytes, no import.
    """
    digest = hashlib.sha256()
    for path in sorted(core_dir.rglob("*.py")):
        digest.update(path.relative_to(core_dir).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
