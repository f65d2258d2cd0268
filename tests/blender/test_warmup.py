"""The warm-up: a background process compiles the solvers so that an artist's first bake of each engine starts at
once (``addon/warmup/warmup.py``).

The warm-up process is started the way the add-on starts it (this interpreter with the ``bpy`` module stands in for
the Blender binary), its progress lines are followed by the reader thread, and its stamp records what it did.
Then a fresh process bakes each engine's default scene through the operator (``first_bakes_probe.py``) and must
compile nothing: numba's compile count in the bake reports is 0 (reference: a cold first bake compiles hundreds).

By default the warm-up fills this tier's own kernel cache (``NUMBA_CACHE_DIR``), so it only compiles what the
tier's other tests did not; ``CONTACT_LAB_COLD_WARMUP=1`` runs it on an empty cache instead, which proves that
the warm-up alone covers the first bakes (several minutes of compiling; the test prints the time and the kernel count).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy")

from contact_lab.addon.warmup import jitcache, warmup  # noqa: E402
from contact_lab.addon.warmup.scenes import SCENES  # noqa: E402

pytestmark = pytest.mark.blender

HERE = Path(__file__).resolve().parent
COLD = os.environ.get("CONTACT_LAB_COLD_WARMUP") == "1"


@pytest.fixture
def cache(tmp_path) -> Path:
    shared = os.environ.get("NUMBA_CACHE_DIR")
    path = Path(shared) if shared and not COLD else tmp_path / "cache"
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_after_the_warm_up_the_first_bake_of_every_engine_compiles_nothing(cache, tmp_path):
    assert warmup.start(str(cache), force=True)
    assert not warmup.start(str(cache), force=True)  # never two at once
    status = warmup.wait(timeout=3600)
    assert status.state == "done", status
    assert status.done == status.total == len(SCENES) and not status.errors
    stamp = warmup.stamp(str(cache))
    assert stamp is not None and stamp["scenes"] == [label for label, _ in SCENES]
    assert stamp["package"] == jitcache.root_package() and stamp["compiled"] == status.compiled
    assert not warmup.start(str(cache))  # the stamp says it ran: not again unless forced

    out = tmp_path / "first_bakes.json"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    done = subprocess.run(
        [sys.executable, str(HERE / "first_bakes_probe.py"), str(out)],
        env=env, cwd=HERE, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and out.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    first = json.loads(out.read_text())
    print(f"\nwarm-up: {status.compiled} kernels compiled in {status.seconds:.1f} s; first bakes: {first}")
    for engine, result in first.items():
        assert result["status"] == "FINISHED" and result["report_status"] == "FINISHED", (engine, result)
        assert result["compiled_kernels"] == 0, (engine, result)


def test_the_warm_up_runs_only_for_an_installed_extension_in_the_ui(monkeypatch):
    """Development checkouts, background mode and an existing stamp schedule nothing."""
    assert jitcache.configured_dir() is None and not warmup.schedule()  # a checkout: numba's own cache
    monkeypatch.setattr(jitcache, "configured_dir", lambda: "/nonexistent/cache")
    assert bpy.app.background and not warmup.schedule()  # the bpy module is background mode
