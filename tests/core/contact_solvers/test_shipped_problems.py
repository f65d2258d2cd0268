"""FCLIB problems exported from the Rigid engine's own scenes (stacks, a wall, a heavy box on light ones, granular
bins of spheres, capsules, hulls and a mix, a domino chain, a chain of spheres, boxes on a slope), written by
tests/data/fclib/make_problems.py with every dense method's outcome recorded in outcomes.json.

Each method must still do what the record says (the golden file: converged or not, FCLIB's merit within a factor
of 10), and each file's stored solution must be one (merit below 1e-8), made by another method than the one the
bake used: so a change to any solver shows up here as a changed outcome."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from contact_lab.core.contact_solvers import fclib
from contact_lab.core.contact_solvers.local_solvers import SOLVERS, solve_local

DATA = Path(__file__).resolve().parents[2] / "data" / "fclib"
OUTCOMES = json.loads((DATA / "outcomes.json").read_text())
TOLERANCE, MAX_ITERATIONS = 1e-8, 1000
"""As make_problems.py records them."""
LONG = {("wall_16_bricks", "pivoting-box"), ("wall_16_bricks", "pivoting-cone")}
"""Outcomes too long for ``make test`` (16 s each: 1 000 pivots, each a least-squares solve on 432 rows);
``make solver-study`` checks them, with every other outcome, against the record."""


def test_at_least_ten_problems_ship_and_every_method_has_an_outcome_on_each():
    assert len(OUTCOMES) >= 10
    for name, outcomes in OUTCOMES.items():
        assert (DATA / f"{name}.hdf5").is_file(), name
        assert set(outcomes) == set(SOLVERS), name
    assert all(method in OUTCOMES.get(name, {}) for name, method in LONG)  # the pairs left to the study exist


@pytest.mark.skipif(
    os.environ.get("OPENBLAS_NUM_THREADS") != "1",
    reason="outcomes.json holds one OpenBLAS thread's outcomes: run with OPENBLAS_NUM_THREADS=1, as make test does",
)
@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_every_method_does_what_the_record_says(name):
    path = DATA / f"{name}.hdf5"
    problem = fclib.read_local(path)
    solution, guesses = fclib.read_solution(path)
    recorded = OUTCOMES[name]
    if any(outcome["converged"] for outcome in recorded.values()):
        assert solution is not None and fclib.local_merit(problem, solution.r) <= TOLERANCE
        np.testing.assert_allclose(problem.W @ solution.r + problem.q, solution.u, atol=1e-12)
    else:
        assert solution is None  # nothing solved it: the file stores no solution
    bake = guesses[0].r  # the impulses of the scene's own PROX, 100 sweeps
    assert np.all(np.isfinite(bake)) and fclib.local_merit(problem, bake) < 1e-2
    for method in (m for m in SOLVERS if (name, m) not in LONG):
        with np.errstate(all="ignore"):
            result = solve_local(problem, method, TOLERANCE, MAX_ITERATIONS)
        expected = recorded[method]
        assert result.converged == expected["converged"], (method, result.merit, expected)
        if result.converged:
            continue
        assert np.isfinite(result.merit) and np.all(np.isfinite(result.r)), method
        ratio = result.merit / expected["merit"]
        assert 0.1 <= ratio <= 10.0, (method, result.merit, expected)
