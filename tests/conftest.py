"""Test-suite configuration: Hypothesis profiles and shared paths.

Profiles: ``ci`` (default) is derandomized with no example database, so CI runs are
reproducible; ``large`` runs many more examples. Select with
``SPARSEFOLD_HYPOTHESIS_PROFILE=large pytest``.
"""

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "large", deadline=None, max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("SPARSEFOLD_HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parent.parent
MATRICES = ROOT.parent / "shared" / "matrices"
