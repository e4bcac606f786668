"""Test-suite configuration: Hypothesis profiles, shared paths, untiered calls.

Profiles: ``ci`` (default) is derandomized with no example database, so CI runs are
reproducible; ``large`` runs many more examples. Select with
``SPARSEFOLD_HYPOTHESIS_PROFILE=large pytest``.
"""

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

# a plan that visits a product of extents while its inputs and output are sparse is a planner
# bug (compiler/plan/cost.py): refused at any size here; a test that means to run one says so
# with allow_dense_work=True
os.environ.setdefault("SPARSEFOLD_DENSE_WORK", "error")
# The suite tests compiled kernels: every call waits for its kernel (no tiered fallback
# answers, docs/tiering.md). The tests of tiering turn it on for themselves (wait=False).
os.environ.setdefault("SPARSEFOLD_TIERED", "0")

settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "large", deadline=None, max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("SPARSEFOLD_HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parent.parent
MATRICES = ROOT.parent / "shared" / "matrices"
