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

# The probe leaves by ``os._exit``: Blender 4.2 as a module can crash in its own exit handlers after an add-on
# registered (return code -11 with the right answer already printed), which is not what this test is about.
PROBE = """
import os
import sys
import bpy
import contact_lab
contact_lab.register()
print(sorted(m for m in sys.modules if m.startswith("contact_lab.core")), flush=True)
contact_lab.unregister()
sys.stdout.flush()
os._exit(0)
"""


def test_enabling_the_add_on_imports_no_core_module():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-3000:]
