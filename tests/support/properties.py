"""How hard the property tests try, as hypothesis profiles chosen by one environment switch.

A developer's run uses the quick ``dev`` profile (a tenth of the examples), so the suite stays
within minutes; ``.ci/run`` sets ``HYPOTHESIS_PROFILE=ci`` and every property test runs its full
count. Tests ask for ``examples(full)`` rather than a fixed number, so both profiles keep each
test's weight relative to the others.
"""

from __future__ import annotations

import os

from hypothesis import settings

CI_EXAMPLES = 100  # hypothesis' own default: examples(n) == n under the ci profile
DEV_EXAMPLES = 10

settings.register_profile("ci", max_examples=CI_EXAMPLES)
settings.register_profile("dev", max_examples=DEV_EXAMPLES)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def examples(full: int) -> int:
    """The example count for a test that runs `full` examples under the ci profile."""
    return max(5, full * settings.default.max_examples // CI_EXAMPLES)
