"""``python -m contact_lab solve-fclib``: FCLIB's Boxes Stack solved from the command line, the written solution
read back and judged again (reference: the core's merit of the written impulses, W r + q for the velocities), and
every bad input refused with exit code 2 and its reason."""

import json
from pathlib import Path

import numpy as np
import pytest
from contact_lab.__main__ import main
from contact_lab.core.contact_solvers import fclib

BOX_STACK = Path(__file__).resolve().parents[1] / "data" / "fclib" / "local_problem_test.hdf5"


def test_the_box_stack_is_solved_and_its_solution_written(tmp_path, capsys):
    out = tmp_path / "solution.hdf5"
    argv = ["solve-fclib", str(BOX_STACK), "--solver", "prox-local", "--max-iterations", "20000", "-o", str(out)]
    assert main(argv) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(line) == {"solver", "merit", "iterations", "seconds", "converged", "contacts"}
    assert line["solver"] == "prox-local" and line["contacts"] == 48 and line["converged"] is False
    problem = fclib.read_local(BOX_STACK)
    solution, _ = fclib.read_solution(out)
    assert line["merit"] == fclib.local_merit(problem, solution.r) < 1e-5
    np.testing.assert_allclose(solution.u, problem.W @ solution.r + problem.q, rtol=0.0, atol=1e-15)


def test_solver_help_lists_every_solver(capsys):
    from contact_lab.core.contact_solvers.local_solvers import SOLVERS

    assert main(["solve-fclib", str(BOX_STACK), "--solver", "help"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.strip().splitlines()]
    assert listed == list(SOLVERS)


def _two_d(path):
    problem = fclib.LocalProblem(np.eye(3), np.zeros(3), np.ones(1))
    problem.spacedim = 2
    fclib.write_local(path, problem)


@pytest.mark.parametrize(
    ("make", "options", "words"),
    [
        (lambda p: p.write_text("text"), [], "is not an HDF5 file"),
        (lambda p: None, [], "no such file"),
        (_two_d, [], "only 3D contact problems"),
        (lambda p: fclib.write_local(p, fclib.LocalProblem(np.eye(3), np.zeros(3), -np.ones(1))), [], "not negative"),
        (lambda p: p.write_text("text"), ["--solver", "lemke"], "unknown solver 'lemke'"),
        (lambda p: p.write_text("text"), ["-o", "/nonexistent/folder/s.hdf5"], "does not exist"),
    ],
)
def test_bad_input_exits_2_with_the_reason(tmp_path, capsys, make, options, words):
    path = tmp_path / "problem.hdf5"
    make(path)
    argv = ["solve-fclib", str(path), "--solver", "prox-global", "-o", str(tmp_path / "s.hdf5"), *options]
    assert main(argv) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "s.hdf5").exists()
