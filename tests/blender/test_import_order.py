"""Enabling the add-on imports no module of the core.

Numba picks a kernel's cache folder when the kernel is declared (its module imported), and ``register()`` first
points numba at the extension's user folder (``addon/warmup/jitcache.py``). A core module imported while the
add-on registers would cache its kernels beside the sources instead, where the next process does not look: an
installed extension's second bake would compile everything again (``tests/blender/test_install_zip.py`` sees
that end to end, in a few minutes; this test sees the cause in seconds).
"""

import subprocess
import sys

import pytest

pytest.importorskip("bpy")

pytestmark = pytest.mark.blender

PROBE = """
import sys
import bpy
import contact_lab
contact_lab.register()
print(sorted(m for m in sys.modules if m.startswith("contact_lab.core")))
"""


def test_enabling_the_add_on_imports_no_core_module():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-3000:]
