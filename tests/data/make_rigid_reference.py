"""Write rigid_reference.npz: inertia and free-flight trajectories of undamped primitive-shape bodies, recorded
before damping and the new shape types existed, so tests/core/rigid/test_damping.py can prove that zero damping and the
extended inertia code change no bit of them.

    .venv/bin/python tests/data/make_rigid_reference.py

The bodies touch nothing (no contact solver runs), so only the derived inertia and the free-motion integration
(gravity, gyroscopic term, damping) decide the result. Re-record only on purpose; the test compares bit for bit,
like the demo hashes, so it is a same-machine check.
"""

from pathlib import Path

import numpy as np
from contact_lab.core import ModelBuilder, simulate

OUT = Path(__file__).with_name("rigid_reference.npz")


def tumbling_bodies():
    """A box + sphere + capsule compound and a lone capsule, both spinning about non-principal axes in flight."""
    b = ModelBuilder()
    body = b.add_body(pos=(0, 0, 1.0), vel=(0.5, 0, 3.0), omega=(3.0, -2.0, 5.0), mass=2.0, label="compound")
    b.add_shape_box(body, (0.3, 0.2, 0.1), pos=(0.1, 0.0, 0.0), quat=(0.9, 0.1, 0.3, 0.2))
    b.add_shape_sphere(body, 0.15, pos=(-0.2, 0.1, 0.05))
    b.add_shape_capsule(body, 0.08, 0.2, pos=(0.0, -0.15, 0.1), quat=(0.8, 0.0, 0.6, 0.0))
    lone = b.add_body(pos=(5.0, 0, 0.4), quat=(0.7, 0.7, 0.1, 0.0), omega=(1.0, 0.5, 4.0), mass=1.0, label="capsule")
    b.add_shape_capsule(lone, 0.1, 0.3)
    return b.finalize()


def scenes() -> dict[str, np.ndarray]:
    """Every recorded array: the bodies' inertia and their trajectory over two seconds."""
    model = tumbling_bodies()
    out = {"inertia": model.body_inertia_local}
    traj = simulate(model, frame_count=60, fps=30, substeps=4)
    for name in ("body_pos", "body_quat", "body_vel", "body_omega"):
        out[name] = getattr(traj, name)
    return out


if __name__ == "__main__":
    np.savez_compressed(OUT, **scenes())
    print(f"wrote {OUT}")
