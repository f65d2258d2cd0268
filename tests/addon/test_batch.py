"""Batch bakes without Blender: the command line's rules, child processes that crash, hang or fail, the progress
board and the summary. Children here are small stand-in scripts (``child_command`` patched); the real bakes are
in ``tests/blender/test_batch.py``.
"""

import ast
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from contact_lab.__main__ import build_parser, main
from contact_lab.cli import batch, children
from contact_lab.cli.progress import ProgressBoard, bar, clock, fit

posix_only = pytest.mark.skipif(os.name != "posix", reason="signals and process groups are POSIX")

# A stand-in for `python -m contact_lab bake`: behaves as its input file's name says.
FAKE_CHILD = textwrap.dedent(
    """
    import json, os, signal, subprocess, sys, time
    source, report = sys.argv[1], sys.argv[2]
    kind = os.path.basename(source).split(".")[0].rstrip("0123456789")
    def write(data):
        with open(report, "w") as fh:
            json.dump(data, fh)
    if kind == "ok":
        for f in range(1, 4):
            print(f"[contact_lab] frame {f}/3", flush=True)
        write({"status": "FINISHED", "error": None, "input": source, "frames": {"count": 3}})
    elif kind == "fail":
        write({"status": "FAILED", "error": "'Marker' is not a mesh: set its role to None", "input": source})
        sys.exit(1)
    elif kind == "segfault":
        print("[contact_lab] frame 1/4", flush=True)
        print("Error: EXCEPTION_ACCESS_VIOLATION in the solver", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    elif kind == "hang":
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open(source + ".pids", "w") as fh:
            fh.write(f"{os.getpid()} {grandchild.pid}")
        print("[contact_lab] frame 1/50", flush=True)
        time.sleep(120)
    elif kind == "silent":
        sys.exit(3)
    """
)


def fake_command(task, report_path):
    return [sys.executable, "-c", FAKE_CHILD, task.input, report_path]


def touch(folder, *names):
    paths = []
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"BLENDER-v500")
        paths.append(str(path))
    return paths


def parse(*argv):
    return build_parser().parse_args(["bake", *map(str, argv)])


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for a parent that never reaps it counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def gone(*pids: int, within: float = 2.0) -> bool:
    """True once none of ``pids`` runs (a SIGKILL lands a moment after it was sent)."""
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# ---- the command line --------------------------------------------------------------------------------------------
def test_batch_mode_and_output_rules(tmp_path, monkeypatch):
    """Several inputs, --jobs or --scheduler make a batch; -o is then a folder, the default writes in place."""
    a, b = touch(tmp_path, "shots/a.blend", "shots/b.blend")
    assert not batch.is_batch(parse(a))
    assert batch.is_batch(parse(a, b)) and batch.is_batch(parse(a, "--jobs", 1))
    assert batch.is_batch(parse(a, "--scheduler", "tcp://127.0.0.1:8786"))
    for address in ("tcp://10.0.0.5:8786", "farm07.studio.lan:8786", "tls://[::1]:8786", "ucx://node-3:1234"):
        assert batch.plan(parse(a, "--scheduler", address))[0].input == a

    in_place = batch.plan(parse(a, b))
    assert [(t.input, t.output) for t in in_place] == [(a, a), (b, b)]
    out = tmp_path / "out"
    tasks = batch.plan(parse(a, b, "-o", out, "--frames", "2-9", "--scene", "Shot", "--allow-outside-paths"))
    assert [t.output for t in tasks] == [str(out / "a.blend"), str(out / "b.blend")]
    assert not out.exists()  # planning creates nothing
    assert children.child_command(tasks[1], "/r.json") == [
        sys.executable, "-m", "contact_lab", "bake", b, "-o", str(out / "b.blend"), "--report", "/r.json",
        "--frames", "2-9", "--scene", "Shot", "--allow-outside-paths",
    ]  # fmt: skip


def test_children_get_the_numba_cache_and_a_share_of_the_cores(tmp_path, monkeypatch):
    """--jobs N: each child gets the parent's NUMBA_CACHE_DIR and cores/N Numba threads; a cluster's workers decide."""
    a, b = touch(tmp_path, "a.blend", "b.blend")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "kernels"))
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    env = dict(batch.plan(parse(a, b, "--jobs", 2))[0].env)
    assert env == {"NUMBA_CACHE_DIR": str(tmp_path / "kernels"), "NUMBA_NUM_THREADS": "4"}
    assert children.child_env(batch.plan(parse(a, b, "--jobs", 2))[0])["NUMBA_CACHE_DIR"] == str(tmp_path / "kernels")
    assert dict(batch.plan(parse(a, b, "--jobs", 16))[0].env)["NUMBA_NUM_THREADS"] == "1"
    assert batch.plan(parse(a, b, "--scheduler", "tcp://127.0.0.1:8786"))[0].env == ()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["{a}", "{tmp}/gone.blend", "{tmp}/lost.blend"], "not found: {tmp}/gone.blend, {tmp}/lost.blend"),
        (["{a}", "{b}", "--jobs", "2", "--scheduler", "tcp://h:1"], "--jobs and --scheduler exclude each other"),
        (["{a}", "{b}", "-o", "{tmp}/out.blend"], "-o names the output folder, not a file"),
        (["{a}", "{b}", "-o", "{a}"], "-o names the output folder, not a file"),
        (["{a}", "{b}", "--report", "{tmp}/r.json"], "use --report-dir DIR"),
        (["{a}", "--report-dir", "{tmp}/reports"], "--report-dir needs a batch bake"),
        (["{a}", "--timeout", "5"], "--timeout needs a batch bake"),
        (["{a}", "{tmp}/b/a.blend", "-o", "{tmp}/out"], "{a} and {tmp}/b/a.blend have the same name"),
        (["{a}", "{tmp}/b/a.blend", "--report-dir", "{tmp}/r"], "would overwrite each other in the report folder"),
        (["{a}", "{tmp}/./a.blend"], "{tmp}/./a.blend is given twice"),
        (["{a}", "{tmp}/b", "--jobs", "2"], "{tmp}/b is a folder, not a .blend file"),
        (["{a}", "{b}", "--report-dir", "{a}"], "--report-dir {a} is a file"),
        (["{a}", "{b}", "--scheduler", "farm07"], "--scheduler farm07: expected the scheduler's address"),
        (["{a}", "{b}", "--scheduler", "http://farm07:8787/status"], "expected the scheduler's address"),
        (["{a}", "{b}", "--jobs", "0"], "--jobs: expected a number greater than 0"),
        (["{a}", "{b}", "--timeout", "-1"], "--timeout: expected a number greater than 0"),
        (["{a}", "--frames", "10-1"], "ends before it starts"),
    ],
)
def test_usage_errors_exit_2_name_the_problem_and_bake_nothing(tmp_path, capsys, argv, expected):
    """Ambiguous or impossible command lines exit 2 before anything runs, saying what to change."""
    a, b, _ = touch(tmp_path, "a.blend", "b.blend", "b/a.blend")
    fill = {"a": a, "b": b, "tmp": str(tmp_path)}
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["bake", *(x.format(**fill) for x in argv)]) == 2
    assert expected.format(**fill) in capsys.readouterr().err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_scheduler_without_distributed_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    """--scheduler without the optional package: exit 2 and the pip command for this very Python."""
    a, b = touch(tmp_path, "a.blend", "b.blend")
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    assert main(["bake", a, b, "--scheduler", "tcp://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert f'"{sys.executable}" -m pip install "distributed"' in err


WORKER = """
import importlib.abc, pickle, sys
if sys.argv[1] == "without-contact-lab":
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "contact_lab":
                raise ImportError(f"no module named {name!r} on this worker")
    sys.meta_path.insert(0, Block())
check = pickle.loads(sys.stdin.buffer.read())
print(repr(check()))
"""


def test_worker_check_travels_by_value_and_finds_what_a_worker_lacks():
    """The check every Dask worker runs first loads where contact_lab is missing and names what is wrong."""
    cloudpickle = pytest.importorskip("cloudpickle")
    import importlib.machinery

    from contact_lab.addon.warmup import jitcache
    from contact_lab.cli import cluster as batch_cluster

    def on_worker(check, setting="as-here"):
        run = subprocess.run(
            [sys.executable, "-c", WORKER, setting], input=cloudpickle.dumps(check), capture_output=True, timeout=60
        )
        assert run.returncode == 0, run.stderr.decode()
        return ast.literal_eval(run.stdout.decode())  # the repr of a str or None

    here = jitcache.core_source_fingerprint()
    bare = on_worker(batch_cluster.worker_check("contact_lab", here), "without-contact-lab")
    assert bare.endswith(": no contact_lab with batch bakes in this Python; install the version of this machine")
    other = on_worker(batch_cluster.worker_check("contact_lab", "0123456789abcdef"))
    assert other.endswith(f"another version of contact_lab (core {here}, here 0123456789abcdef); "
                          "install this machine's version there and restart the worker")  # fmt: skip
    if importlib.machinery.PathFinder.find_spec("bpy") is not None:  # a machine that can bake: nothing is missing
        assert on_worker(batch_cluster.worker_check("contact_lab", here)) is None


# ---- child processes ---------------------------------------------------------------------------------------------
@posix_only
def test_a_crash_a_hang_and_a_failure_cost_only_their_own_file(tmp_path, monkeypatch):
    """--jobs 2 over six stand-in children: each ends with its own status; the hung one and its children are killed."""
    monkeypatch.setattr(children, "child_command", fake_command)
    names = ["ok1.blend", "segfault.blend", "hang.blend", "fail.blend", "silent.blend", "ok2.blend"]
    paths = touch(tmp_path, *names)
    tasks = batch.plan(parse(*paths, "--jobs", 2, "--timeout", 3))
    board = ProgressBoard(names, io.StringIO(), live=False)
    t0 = time.monotonic()
    results = batch.run_local(tasks, 2, board, threading.Event())
    elapsed = time.monotonic() - t0

    assert [r["status"] for r in results] == ["FINISHED", "CRASHED", "TIMEOUT", "FAILED", "CRASHED", "FINISHED"]
    assert [r["file"] for r in results] == paths
    assert results[0]["frames"] == 3 and results[0]["error"] is None and results[0]["returncode"] == 0
    assert "SIGSEGV" in results[1]["error"] and "EXCEPTION_ACCESS_VIOLATION" in results[1]["error"]
    assert results[1]["frames_done"] == 1 and results[1]["returncode"] == -signal.SIGSEGV
    assert results[2]["error"].startswith("timed out after 3 s at frame 1/50")
    assert 3.0 <= results[2]["seconds"] < 6.0 and elapsed < 30.0
    child, grandchild = map(int, (tmp_path / "hang.blend.pids").read_text().split())
    assert gone(child, grandchild)  # the whole process group went
    assert results[3]["error"] == "'Marker' is not a mesh: set its role to None" and results[3]["returncode"] == 1
    assert results[4]["error"] == "the bake process exited with code 3 without a report"
    plain = board.stream.getvalue()
    assert "[contact_lab] hang.blend: TIMEOUT" in plain and "[contact_lab] ok2.blend: frame 3/3" in plain


@posix_only
def test_interrupt_stops_running_children_and_skips_queued_ones(tmp_path, monkeypatch):
    """Setting the stop event (Ctrl-C) kills the running child within a poll; files not started are CANCELLED."""
    monkeypatch.setattr(children, "child_command", fake_command)
    paths = touch(tmp_path, "hang.blend", "ok1.blend", "ok2.blend")
    tasks = batch.plan(parse(*paths, "--jobs", 1))
    stop = threading.Event()

    class InterruptAtFirstFrame(ProgressBoard):
        def progress(self, index, done, total):
            super().progress(index, done, total)
            stop.set()  # Ctrl-C once the hung child is running

    results = batch.run_local(tasks, 1, InterruptAtFirstFrame(paths, io.StringIO(), live=False), stop)
    assert [r["status"] for r in results] == ["CANCELLED", "CANCELLED", "CANCELLED"]
    assert results[0]["error"].startswith("cancelled at frame 1/50") and results[0]["seconds"] < 5.0
    assert results[1]["error"] == "not started: the batch was interrupted"
    child, grandchild = map(int, (tmp_path / "hang.blend.pids").read_text().split())
    assert gone(child, grandchild)


@posix_only
def test_batch_main_writes_reports_and_summary_without_importing_bpy(tmp_path):
    """A whole batch in a fresh Python: rc 1, a report and a log per file, summary.json, the table; no bpy."""
    paths = touch(tmp_path, "ok1.blend", "fail.blend", "ok2.blend")
    argv = [*paths, "--jobs", "2", "-o", tmp_path / "out", "--report-dir", tmp_path / "reports"]
    proc = fake_batch(tmp_path, *argv)
    stdout, stderr = proc.communicate(timeout=120)
    run = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.rstrip().endswith("bpy imported: False")  # the batch process only starts children

    reports = tmp_path / "reports"
    summary = json.loads((reports / "summary.json").read_text())
    assert [(f["file"], f["status"], f["frames"]) for f in summary["files"]] == [
        (paths[0], "FINISHED", 3),
        (paths[1], "FAILED", None),
        (paths[2], "FINISHED", 3),
    ]
    assert summary["files"][1]["error"] == "'Marker' is not a mesh: set its role to None"
    assert summary["counts"] == {"FINISHED": 2, "FAILED": 1} and summary["jobs"] == 2
    assert summary["files"][0]["output"] == str(tmp_path / "out" / "ok1.blend")
    assert json.loads((reports / "fail.report.json").read_text())["status"] == "FAILED"
    assert "[contact_lab] frame 3/3" in (reports / "ok2.log").read_text()
    table = run.stdout[run.stdout.index("file  ") :].splitlines()
    assert table[0].split() == ["file", "status", "frames", "seconds", "error"]
    assert table[2].split()[:3] == [paths[1], "FAILED", "-"] and table[2].endswith("set its role to None")
    assert run.stdout.rstrip().splitlines()[-2].startswith("[contact_lab] 2 of 3 files baked, 1 FAILED in ")


FAKE_HELPER = """
def fake_command(task, report_path):
    return [sys.executable, "-c", FAKE_CHILD, task.input, report_path]
"""


def fake_batch(tmp_path, *argv) -> subprocess.Popen:
    """``python -m contact_lab bake ARGV`` in a fresh Python whose children are the stand-ins of FAKE_CHILD."""
    script = textwrap.dedent(
        f"""
        import sys
        from contact_lab.cli import children
        from tests_fake import fake_command
        children.child_command = fake_command
        from contact_lab.__main__ import main
        rc = main(["bake", *{list(map(str, argv))!r}])
        print("bpy imported:", "bpy" in sys.modules)
        sys.exit(rc)
        """
    )
    (tmp_path / "tests_fake.py").write_text(f"import sys\nFAKE_CHILD = {FAKE_CHILD!r}\n\n" + FAKE_HELPER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    return proc


@posix_only
def test_sigterm_stops_the_batch_and_its_children(tmp_path):
    """A batch killed with SIGTERM (a farm's job manager, a closed terminal: SIGHUP) leaves no bake running: its
    children live in process groups of their own, so the batch must stop them itself; rc 130, summary written."""
    paths = touch(tmp_path, "hang.blend", "ok1.blend")
    proc = fake_batch(tmp_path, *paths, "--jobs", "1", "--report-dir", tmp_path / "reports")
    pids = tmp_path / "hang.blend.pids"
    deadline = time.monotonic() + 60
    while not pids.exists() or not pids.read_text():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.3)  # the child has printed its frame line
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stdout + stderr
    assert gone(*map(int, pids.read_text().split()))
    summary = json.loads((tmp_path / "reports" / "summary.json").read_text())
    assert [f["status"] for f in summary["files"]] == ["CANCELLED", "CANCELLED"] and summary["interrupted"]
    assert summary["files"][0]["error"].startswith("cancelled at frame 1/50")


def test_reports_of_children_that_crashed(tmp_path):
    """A crashed child's report says CRASHED: made by the batch if the child wrote none, corrected if it did."""
    tasks = [children.FileTask(index=i, label=f"{n}.blend", input=f"/s/{n}.blend", output=f"/o/{n}.blend")
             for i, n in enumerate(("x", "y"))]  # fmt: skip
    results = [
        children.cancelled_result(tasks[0]) | {"status": "CRASHED", "error": "died", "log": "last words\n"},
        # saved and reported FINISHED, then the process died on its way out (rc -11)
        children.cancelled_result(tasks[1])
        | {"status": "CRASHED", "error": "killed by SIGSEGV", "report": {"status": "FINISHED", "error": None, "n": 3}},
    ]
    batch.write_reports(str(tmp_path), tasks, results, {"jobs": 1})
    assert json.loads((tmp_path / "x.report.json").read_text()) == {
        "status": "CRASHED",
        "input": "/s/x.blend",
        "output": "/o/x.blend",
        "error": "died",
    }
    assert json.loads((tmp_path / "y.report.json").read_text()) == {
        "status": "CRASHED",
        "error": "killed by SIGSEGV",
        "n": 3,
    }
    assert (tmp_path / "x.log").read_text() == "last words\n"
    assert [f["status"] for f in json.loads((tmp_path / "summary.json").read_text())["files"]] == ["CRASHED"] * 2


# ---- progress ----------------------------------------------------------------------------------------------------
def test_bar_clock_and_fit():
    """The pieces of a progress line."""
    assert bar(0.5, 10) == "[#####-----]" and bar(0.0, 4) == "[----]" and bar(1.2, 4) == "[####]"
    assert bar(1 / 3, 3) == "[#--]" and bar(0.96, 10) == "[#########-]"  # full only when done
    assert [clock(s) for s in (0, 59.9, 61, 3600 + 62)] == ["0 s", "59 s", "1:01", "1:01:02"]
    assert fit("a.blend", 9) == "a.blend  " and fit("shots/sh010_final.blend", 12) == "...nal.blend"


def test_live_board_draws_a_bar_per_running_file_and_an_overall_bar():
    """On a terminal: one line per running file with frame n/N, then the overall line; redrawn in place."""
    out = io.StringIO()
    board = ProgressBoard(["a.blend", "b.blend", "c.blend"], out, live=True, size=(80, 24))
    board.started(0)
    board.line(0, "[contact_lab] frame 5/10\n")
    board.started(1)
    board.refresh(force=True)
    lines = board.lines()
    bar_w = 80 - 1 - len("  all files [] ") - len(" 16%  0/3 done, 2 running, 1 queued  0 s")  # widest line fits
    assert lines[0] == f"  a.blend   {bar(0.5, bar_w)}  50%  frame 5/10  0 s"
    assert lines[1] == f"  b.blend   {bar(0.0, bar_w)}   -   starting  0 s"
    assert lines[2] == f"  all files {bar(0.5 / 3, bar_w)}  16%  0/3 done, 2 running, 1 queued  0 s"
    assert out.getvalue() == "".join(f"{x}\n" for x in lines) and max(map(len, lines)) == 79

    board.finished(0, {"status": "FINISHED", "seconds": 2.0, "frames": 10})
    board.refresh(force=True)
    redraw = out.getvalue().split("\n", 3)[3]  # after the first drawing of three lines
    assert redraw.startswith("\x1b[3F\x1b[J[contact_lab] a.blend: FINISHED in 2.0 s, 10 frames (1/3 files done)\n")
    assert redraw.endswith("1/3 done, 1 running, 1 queued  0 s\n")
    board.close()
    assert out.getvalue().endswith("\x1b[2F\x1b[J")  # the bars are gone, the summary table follows


def test_plain_board_prints_a_line_per_tenth_of_the_frames():
    """Not a terminal (CI logs): start, every tenth of the frames, the end; never a cursor movement."""
    out = io.StringIO()
    board = ProgressBoard(["shot.blend"], out, live=False)
    board.started(0, "w1 (farm07)")
    for f in range(1, 21):
        board.progress(0, f, 20)
    board.finished(0, {"status": "FAILED", "seconds": 3.25, "frames": 20, "error": "diverged at frame 20"})
    board.refresh()
    assert out.getvalue().splitlines() == [
        "[contact_lab] shot.blend: started on w1 (farm07)",
        *(f"[contact_lab] shot.blend: frame {f}/20" for f in range(2, 21, 2)),
        "[contact_lab] shot.blend: FAILED in 3.2 s (1/1 files done): diverged at frame 20",
    ]
    assert "\x1b" not in out.getvalue()
