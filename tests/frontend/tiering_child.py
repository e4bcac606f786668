"""A child process for the tiering race tests (``test_tiering.py``).

    python tiering_child.py MODE CONSTANT

computes ``A * CONSTANT + A.T`` on a fixed 200 x 200 matrix with a tiered ``sf.jit``
function (the constant makes the kernel's source, and so its cache key, unique to the
test). The kernel cache is ``$SPARSEFOLD_CACHE_DIR``. MODE:

* ``call-wait`` — one tiered call, wait for the background build, one more call; prints
  ``ok <fallback answers> <compiled answers> <builds> <disk hits>``;
* ``call-exit`` — one tiered call, then a normal exit while the build is in flight;
* ``hang`` — a build that announces itself (``building``) and then hangs before running
  Cython, for the parent to kill.
"""

import sys
import time

import numpy as np
import scipy.sparse as sp

import sparsefold as sf
from sparsefold import tiering
from sparsefold.compiler.run import build


def matrix() -> sp.csr_array:
    return sp.random_array((200, 200), density=0.05, format="csr",
                           rng=np.random.default_rng(11), dtype=np.float64)


def expected(a: sp.csr_array, constant: float) -> np.ndarray:
    return (a * constant + a.T).toarray()


def main(mode: str, constant: float) -> int:
    a = matrix()
    f = sf.jit(lambda x: x * constant + x.T, wait=False)
    if mode == "hang":
        real = build._compile

        def announce_and_hang(*args, **kwargs):
            print("building", flush=True)
            time.sleep(600)
            return real(*args, **kwargs)
        build._compile = announce_and_hang
        f(a)
        time.sleep(600)
        return 1
    first = f(a)
    if mode == "call-exit":
        print("answered", flush=True)
        return 0 if np.allclose(first.toarray(), expected(a, constant)) else 1
    if not f.wait(300):
        print("build did not finish", flush=True)
        return 1
    second = f(a)
    good = all(np.allclose(r.toarray(), expected(a, constant)) for r in (first, second))
    s, b = tiering.stats(), build.stats()
    print("ok" if good else "wrong", s.get("fallback", 0), s.get("compiled", 0),
          b["builds"], b["disk_hits"], flush=True)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2])))
