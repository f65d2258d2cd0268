"""The user guide's scripting example runs in Blender and does what the page says.

``tests/core/test_docs.py`` runs every library example of the docs; a block that needs Blender can only be compiled
there. This tier runs it: the scene the example names (an object "Cube" above an object "Ground"), the block's lines
up to its bake, then its Clear Bake line.
"""

import re
from pathlib import Path

import pytest
from conftest import add_cube, add_ground, keyed_transform

bpy = pytest.importorskip("bpy")

pytestmark = pytest.mark.blender

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "user-guide.md"
BAKE_LINE = "bpy.ops.contact_lab.bake()"


def _scripting_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
    found = [b for b in blocks if BAKE_LINE in b and "import bpy" in b]
    assert len(found) == 1, "docs/user-guide.md should show one scripting example that bakes"
    return found[0]


def test_the_user_guides_script_bakes_a_falling_cube_and_clears_it():
    """The cube (1 m, dropped from 2 m onto the plane) is keyed frame by frame and ends resting on the plane: its
    centre half its size above the ground, to 2 mm (the contact slop is 0.5 mm), and at rest. Clear Bake then
    removes the keys and gives the cube its place back."""
    block = _scripting_block()
    before_bake, _, after_bake = block.partition(BAKE_LINE)
    add_ground("Ground")
    cube = add_cube("Cube", location=(0.0, 0.0, 2.0), size=1.0, role="NONE")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 72

    namespace: dict = {}
    exec(compile(before_bake + BAKE_LINE + "\n", "docs/user-guide.md", "exec"), namespace)
    assert cube.contact_lab.role == "ACTIVE" and cube.contact_lab.mass == 2.0
    frames, loc, _ = keyed_transform(cube)
    assert frames[0] == 1 and frames[-1] == 72 and len(frames) == 72
    assert loc[0, 2] == pytest.approx(2.0, abs=1e-6)
    assert loc[-1, 2] == pytest.approx(0.5, abs=2e-3)
    assert abs(loc[-1, 2] - loc[-2, 2]) < 1e-4  # at rest: under 2.4 mm/s at 24 fps

    exec(compile(after_bake, "docs/user-guide.md", "exec"), namespace)
    assert cube.animation_data is None or cube.animation_data.action is None
    assert tuple(cube.location) == pytest.approx((0.0, 0.0, 2.0))
