"""How many threads a bake's kernels run on: Blender's Threads setting, within numba's limit (no Blender needed)."""

import types

import numba
from contact_lab.addon.bake.threads import bake_threads, numba_threads


def _scene(threads):
    return types.SimpleNamespace(render=types.SimpleNamespace(threads=threads))


def test_a_bake_takes_blenders_thread_count_within_numbas_limit():
    """Blender's count when numba allows it, numba's limit (NUMBA_NUM_THREADS: the command line's ``--jobs`` divides
    it) when Blender asks for more, at least one; a stand-in scene without render settings gets numba's limit."""
    limit = numba.config.NUMBA_NUM_THREADS
    assert bake_threads(_scene(1)) == 1
    assert bake_threads(_scene(limit)) == limit
    assert bake_threads(_scene(limit + 63)) == limit
    assert bake_threads(_scene(0)) == 1
    assert bake_threads(types.SimpleNamespace()) == limit
    assert bake_threads(_scene(None)) == limit


def test_the_thread_count_holds_inside_and_comes_back_after():
    """Inside ``numba_threads(1)`` numba runs one thread, and the count before comes back after, also when the
    inside raises."""
    before = numba.get_num_threads()
    with numba_threads(1):
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == before
    try:
        with numba_threads(1):
            raise RuntimeError("a frame failed")
    except RuntimeError:
        pass
    assert numba.get_num_threads() == before
