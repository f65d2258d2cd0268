"""The README's core example runs and says what it prints."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_core_example_slides_the_documented_distance():
    """Run the README's library example; the box stops after v0² / (2 μ g) within 2 %."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    example = next(b for b in blocks if "from contact_lab.core import" in b)
    namespace = {"print": lambda *args: None}
    exec(compile(example, "README.md", "exec"), namespace)
    traj, box = namespace["traj"], namespace["box"]
    assert traj.body_pos[-1, box, 0] == pytest.approx(3.0**2 / (2 * 0.4 * 9.81), rel=0.02)
    assert abs(traj.body_vel[-1, box, 0]) < 1e-3


def test_readme_soft_example_rests_on_the_plane():
    """Run the README's soft-engine example; the cube's lowest node rests within 2 mm of the plane, in contact."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    example = next(b for b in blocks if "soft.simulate(" in b)
    namespace = {"print": lambda *args: None}
    exec(compile(example, "README.md", "exec"), namespace)
    traj = namespace["traj"]
    assert traj.frames_done == traj.frame_count == 25
    assert abs(traj.node_pos[-1, :, 2].min()) < 2e-3  # dropped from 1 cm: on the plane, neither above nor through
    assert traj.contact_count[-1] > 0
