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
