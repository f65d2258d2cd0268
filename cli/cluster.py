"""Batch bakes on a Dask cluster (``--scheduler tcp://host:port``): one task per .blend file.

Each task runs on a worker what ``--jobs`` runs locally: the single-file bake in a child process of the worker
(:func:`.children.run_child`), so a crash or a hang (``--timeout``) costs that file only and the worker lives on. The
task returns the result dict; progress travels as Dask events (``Worker.log_event`` → ``Client.subscribe_topic``)
to the bars of the submitting machine; Ctrl-C there sets a Dask ``Event`` that the tasks poll.

What the workers need (the README's "Batch bakes and farms" says how to start them):
- the same paths: inputs, ``-o`` and the frames' PC2 folders on a filesystem every worker mounts at the same place;
- a Python with ``bpy``, numba and this package (the child is ``<worker's python> -m contact_lab bake ...``);
- ``distributed`` of the same version as the submitting machine.
Every connected worker is asked first (:func:`worker_check`, sent by value): a worker that cannot import a task's
function dies on it, and the batch would wait for the lost task forever.

``distributed`` is an optional dependency: imported only here, only with ``--scheduler``.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import threading
import time
import uuid
from typing import cast

from . import children
from .progress import FRAME_LINE, ProgressBoard

CONNECT_TIMEOUT = 30.0
"""Seconds to reach the scheduler before giving up (exit code 2: nothing was baked)."""

CANCEL_POLL = 2.0
"""Seconds between a task's checks of the batch's cancel event (a scheduler round trip each)."""


def import_distributed():
    """The ``distributed`` module, or a :class:`.children.UsageError` saying how to install it into this Python."""
    try:
        import distributed
    except ImportError as exc:
        raise children.UsageError(
            f"--scheduler needs the Dask package 'distributed' in the Python that runs contact_lab "
            f"({sys.executable}); install it there (and the same version on the workers):\n"
            f'    "{sys.executable}" -m pip install "distributed"\n({exc})'
        ) from None
    return distributed


def worker_check(package: str, fingerprint: str):
    """A function for ``Client.run`` telling what a worker lacks to bake (None: nothing), shipped by value.

    A worker that cannot import a task's function dies on it and the batch would wait forever, so every worker is
    asked first. Nested, with only builtins and its arguments inside, cloudpickle sends the function's code itself:
    it runs on a worker without contact_lab too.

    Args:
        package: the package the children run (``contact_lab``).
        fingerprint: this machine's ``jitcache.core_source_fingerprint()``: the physics every worker must have.
    """

    def check() -> str | None:
        import importlib
        import importlib.util
        import socket
        import sys

        where = f"{socket.gethostname()}, {sys.executable}"
        try:
            found = importlib.util.find_spec(f"{package}.cli.cluster") is not None
        except ImportError:
            found = False
        if not found:
            return f"{where}: no {package} with batch bakes in this Python; install the version of this machine"
        missing = [name for name in ("bpy", "numba") if importlib.util.find_spec(name) is None]
        if missing:
            return f"{where}: {' and '.join(missing)} missing; pip install them into this Python"
        theirs = importlib.import_module(f"{package}.addon.warmup.jitcache").core_source_fingerprint()
        if theirs != fingerprint:
            return (
                f"{where}: another version of {package} (core {theirs}, here {fingerprint}); "
                "install this machine's version there and restart the worker"
            )
        return None

    return check


def check_workers(client) -> int:
    """Ask every worker :func:`worker_check`; the number of workers. Raises :class:`.children.UsageError` on
    problems."""
    from ..addon.warmup.fingerprint import core_source_fingerprint

    answers = client.run(worker_check(children.ROOT_PACKAGE, core_source_fingerprint()), on_error="return")
    problems = [
        f"  {address}: {answer}" if isinstance(answer, str) else f"  {address}: {type(answer).__name__}: {answer}"
        for address, answer in sorted(answers.items())
        if answer is not None
    ]
    if problems:
        raise children.UsageError(
            "some Dask workers cannot bake (each needs bpy, numba and this contact_lab in the Python it runs):\n"
            + "\n".join(problems)
        )
    return len(answers)


def worker_problem(task: children.FileTask) -> str | None:
    """Why this worker cannot bake ``task`` (paths it does not see), or None."""
    host = socket.gethostname()
    if not os.path.isfile(task.input):
        return (
            f"{task.input} does not exist on worker host {host}: the workers must see the inputs at the same paths "
            "as the submitting machine (a shared filesystem mounted at the same place)"
        )
    folder = os.path.dirname(task.output)
    if not os.path.isdir(folder):
        return f"the output folder {folder} does not exist on worker host {host} (the workers need the same paths)"
    return None


def bake_task(task: children.FileTask, topic: str, cancel_name: str) -> dict:
    """Dask task (runs on a worker): bake ``task`` in a child process and return its result (``children.run_child``).

    Args:
        task: the file; its paths must exist on the worker.
        topic: event topic for progress (``{"index", "event": "started"|"progress", ...}`` messages).
        cancel_name: name of the batch's Dask ``Event``; once set the child is stopped (status CANCELLED).
    """
    from distributed import Event, get_worker

    worker = get_worker()
    worker_name = str(worker.name if worker.name is not None else worker.address)

    def send(message: dict) -> None:
        try:
            worker.log_event(topic, message)
        except Exception:  # progress is best effort: the result comes back with the task
            pass

    problem = worker_problem(task)
    if problem is not None:
        result = children.cancelled_result(task) | {
            "status": children.FAILED,
            "error": problem,
            "host": socket.gethostname(),
        }
        return result | {"worker": worker_name}

    cancel = Event(cancel_name)
    if _is_set(cancel):  # Ctrl-C on the submitting machine before this file started
        return children.cancelled_result(task) | {"worker": worker_name}
    # "where", not "worker": the scheduler adds a "worker" key (the address) to every event message
    send({"index": task.index, "event": "started", "where": f"{worker_name} ({socket.gethostname()})"})
    last_sent = [0.0]

    def on_line(line: str) -> None:
        m = FRAME_LINE.search(line)
        if m and (time.monotonic() - last_sent[0] > 0.25 or m.group(1) == m.group(2)):
            last_sent[0] = time.monotonic()
            send({"index": task.index, "event": "progress", "done": int(m.group(1)), "total": int(m.group(2))})

    next_check = [time.monotonic() + CANCEL_POLL]

    def should_stop() -> bool:
        now = time.monotonic()
        if now < next_check[0]:
            return False
        next_check[0] = now + CANCEL_POLL
        return _is_set(cancel)

    if not os.environ.get("NUMBA_NUM_THREADS"):  # this worker runs nthreads bakes at once: share its cores
        threads = max(1, (os.cpu_count() or 1) // max(1, worker.state.nthreads))
        task = dataclasses.replace(task, env=(*task.env, ("NUMBA_NUM_THREADS", str(threads))))
    result = children.run_child(task, on_line=on_line, should_stop=should_stop)
    return result | {"worker": worker_name}


def _is_set(event) -> bool:
    try:
        return bool(event.is_set())
    except Exception:  # a lost scheduler must not stop a running bake
        return False


def run_on_cluster(
    tasks: list[children.FileTask], address: str, board: ProgressBoard, stop: threading.Event
) -> list[dict]:
    """Submit one :func:`bake_task` per file to the scheduler at ``address``; results in task order.

    Raises:
        children.UsageError: ``distributed`` is missing, the scheduler cannot be reached, or a worker lacks
            contact_lab, bpy or numba or has another core (:func:`check_workers`); nothing was baked.
        children.BatchInterruptedError: Ctrl-C; running bakes were asked to stop, queued ones come back CANCELLED.
    """
    distributed = import_distributed()
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise children.UsageError(
            f"cannot reach the Dask scheduler at {address} ({exc}): start one with `dask scheduler` and workers "
            f"with `dask worker {address}`, or check the address"
        ) from None
    try:
        if check_workers(client) == 0:
            print(f"[contact_lab] no Dask workers yet: the files wait for `dask worker {address}`", flush=True)
    except BaseException:
        client.close()
        raise
    token = uuid.uuid4().hex[:8]
    topic, cancel_name = f"contact_lab-batch-{token}", f"contact_lab-cancel-{token}"

    def on_event(event) -> None:
        message = event[1]
        if message.get("event") == "started":
            board.started(message["index"], message.get("where"))
        elif message.get("event") == "progress":
            board.progress(message["index"], message["done"], message["total"])

    results: list[dict | None] = [None] * len(tasks)
    interrupted = False
    with client:
        client.subscribe_topic(topic, on_event)
        pending = {}
        for task in tasks:
            key = f"contact_lab-{task.index}-{task.name}-{token}"  # named in the dashboard
            pending[client.submit(bake_task, task, topic, cancel_name, key=key, pure=False)] = task
        while pending:
            try:
                for future in [f for f in pending if f.done()]:
                    task = pending[future]
                    results[task.index] = _future_result(future, task)
                    del pending[future]
                    board.finished(task.index, results[task.index])
                board.refresh()
                time.sleep(0.1)
            except KeyboardInterrupt:  # running bakes stop within CANCEL_POLL, queued ones return at once
                if interrupted:  # a second Ctrl-C: leave without waiting
                    raise
                interrupted = True
                stop.set()
                distributed.Event(cancel_name, client=client).set()
        try:
            client.unsubscribe_topic(topic)
        except Exception:  # the results are in: a closing connection does not matter
            pass
    if interrupted:
        raise children.BatchInterruptedError(results)
    return cast("list[dict]", results)  # no None left: the loop ran until every task's future was done


def _future_result(future, task: children.FileTask) -> dict:
    if future.cancelled():
        return children.cancelled_result(task)
    try:
        return future.result()
    except Exception as exc:  # e.g. KilledWorker: the worker itself died, not just the child
        result = children.cancelled_result(task)
        return result | {"status": children.CRASHED, "error": f"the Dask task failed: {type(exc).__name__}: {exc}"}
