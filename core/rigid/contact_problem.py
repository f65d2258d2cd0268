"""A rigid scene's contact problem at one step, as FCLIB's local formulation (set-up code, no kernels).

:func:`local_problem_at` simulates a scene up to an output frame and returns the contact problem of the step that
starts there: ``u = W r + q`` over that step's contacts (:meth:`.solvers.base.SolverBase.local_problem`), the
problem the scene's solver then solved. The trajectory up to that frame is the bake's own (same loop, same
settings), so the problem is the one a bake meets.
"""

from __future__ import annotations

import numpy as np

from .frame_loop import iter_simulate
from .model import Model


class NoContactsError(ValueError):
    """The chosen step has no contacts: there is no contact problem to write."""


def local_problem_at(model: Model, frame: int, *, substep: int = 0, **simulate_kwargs):
    """``(W (3m, 3m), q (3m,), mu (m,), r (3m,))`` of the step from output frame ``frame`` (0: the first frame),
    its ``substep``-th, with ``r`` the impulses the scene's solver found for it.

    ``simulate_kwargs``: :func:`.frame_loop.iter_simulate`'s (``frame_count`` is set here to end right after that
    step). Raises ``ValueError`` for a frame or substep outside the run, :class:`NoContactsError` without contacts.
    """
    simulate_kwargs = dict(simulate_kwargs)
    frame_count = int(simulate_kwargs.pop("frame_count", frame + 2))
    if not 0 <= frame < frame_count - 1:
        raise ValueError(f"frame index {frame} is outside 0 to {frame_count - 2} (the last frame has no step after it)")
    captured: list = []

    def capture(at_frame: int, at_substep: int, solver, contacts) -> None:
        if at_frame == frame and at_substep == substep:
            n = contacts.contact_count
            W, q, mu = solver.local_problem(contacts)
            captured.append((W, q, mu, contacts.contact_impulse[:n].reshape(-1).copy()))

    for done, _ in iter_simulate(model, frame_count=frame + 2, on_step=capture, **simulate_kwargs):
        if captured or done > frame:
            break
    if not captured:
        raise ValueError(f"substep {substep} is outside the step's substeps")
    W, q, mu, r = captured[0]
    if not mu.shape[0]:
        raise NoContactsError(f"no contacts in the step from frame index {frame}: nothing to write")
    return W, q, np.asarray(mu, np.float64), r
