"""No namespace function whose result is sparse densifies a sparse input: every function of
``huge_sparse.py`` on a 10^6 x 10^6 array with 10^6 stored entries, in a child process
limited to 6 GiB of address space and to a wall-clock budget.

Held densely the array is 8 TB: a function that densified it, or built any intermediate of
its dense size, fails with ``MemoryError``; one that visited its 10^12 coordinates would
run out of time. Sparse results must come back as sparse containers with no more stored
entries than the function can produce, small results (sums, norms, ``unique_values``,
``nonzero``) with their values; both are checked against scipy.sparse on the same array.
The cases are split over three children so that test workers run them side by side (most
of the time is building their ~35 kernels).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("huge_sparse.py")
PARTS = 3


@pytest.mark.cython
@pytest.mark.parametrize("part", range(PARTS))
def test_sparse_results_of_a_huge_array_are_never_densified(part):
    done = subprocess.run([sys.executable, str(SCRIPT), str(part), str(PARTS)],
                          capture_output=True, text=True, timeout=900)
    lines = done.stdout.strip().splitlines()
    failed = [line for line in lines if line.startswith("FAILED")]
    assert done.returncode == 0 and not failed, "\n".join(failed) + done.stderr[-3000:]
    assert len([line for line in lines if line.startswith("ok ")]) >= 10, done.stdout
