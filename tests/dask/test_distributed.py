"""``sf.jit`` on Dask arrays on a ``distributed.LocalCluster`` of 2 worker processes (1 thread
each): results identical to the single-machine result, and kernels built once — the
workers share the disk cache (a fresh one here), so a kernel is built by one worker and
loaded from disk by the other, and a second run builds and loads nothing.
"""

import sys
from pathlib import Path

import dask.array as da
import numpy as np
import pytest

import sparsefold as sf
from sparsefold.compiler.run.build import stats  # run on the workers: importable there

distributed = pytest.importorskip("distributed")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import ROW_CHUNKS, assert_same, run_both, scipy_matrix  # noqa: E402

pytestmark = pytest.mark.cython

A = scipy_matrix(seed=0)
B = scipy_matrix(seed=1)
HALF = scipy_matrix((7, 15), seed=3)
X = np.arange(15, dtype=np.float64) - 7
EVEN_ROWS = (4, 4, 4, 4, 4, 4)                      # 24 rows: a[::2] starts every block at 0

# the three programs, and a reduction whose tree spans workers
PROGRAMS = [
    ("spmv", lambda a, x: a @ x, (A, X),
     lambda: (da.from_array(A, chunks=(ROW_CHUNKS, (15,))), X)),
    ("vstack_spmv", lambda a, b, x: sf.concat([a, b]) @ x, (A, B, X),
     lambda: (da.from_array(A, chunks=(ROW_CHUNKS, (15,))),
              da.from_array(B, chunks=((5, 8), (15,))), X)),
    ("slice_times", lambda a, h: a[::2] * h, (A, HALF),
     lambda: (da.from_array(A, chunks=(ROW_CHUNKS, (15,))),
              da.from_array(HALF, chunks=((4, 3), (15,))))),
    ("sum_axis0_tree", lambda a: a.sum(axis=0), (A,),
     lambda: (da.from_array(A, chunks=(ROW_CHUNKS, (15,))),)),
]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    cache = tmp_path_factory.mktemp("worker-kernel-cache")
    cache.chmod(0o700)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None,
                                  env={"SPARSEFOLD_CACHE_DIR": str(cache)}) as cluster, \
            distributed.Client(cluster) as c:
        c.cache_dir = cache
        yield c


@pytest.mark.parametrize("name,fn,whole,make", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_results_identical_on_worker_processes(client, name, fn, whole, make):
    want, got, _ = run_both(fn, whole, make(), scheduler=client.get)
    assert_same(want, got)


def test_kernels_built_once_across_workers_never_per_task(client):
    a = scipy_matrix((24, 15), seed=7)
    h = scipy_matrix((12, 15), seed=8)
    fn = sf.jit(lambda a, h: a[::2] * h)
    y = fn(da.from_array(a, chunks=(EVEN_ROWS, (15,))), da.from_array(h, chunks=(12, 15)))
    assert y.numblocks == (6, 1)                       # 6 tasks of one block program
    want = fn(a, h)
    before = client.run(stats)
    for _ in range(3):                                 # 18 tasks
        assert_same(want, y.compute(scheduler=client.get))
    after = client.run(stats)
    built = sum(after[w]["builds"] - before[w]["builds"] for w in after)
    loaded = sum(after[w]["disk_hits"] - before[w]["disk_hits"] for w in after)
    assert built <= 1                                  # 0 if an earlier test built it
    assert built + loaded <= len(after)                # at most once per worker process
    # every kernel the workers built went into the shared cache once: no duplicate builds
    entries = [p for p in client.cache_dir.iterdir() if p.name.startswith("sfk_")]
    total_built = sum(s["builds"] for s in after.values())
    assert total_built == len(entries) and total_built >= 1
