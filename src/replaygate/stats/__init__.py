"""replaygate.stats: honest statistics for agent regression tests (pure functions, no I/O).

- Per scenario: ``wilson_interval``, ``pass_hat_k`` / ``pass_at_k``, ``scenario_verdict`` (must-pass
  scenarios use pass^k; others compare the Wilson interval with their threshold).
- Baseline against candidate: ``paired_permutation_test`` (case-stratified: labels shuffled within each
  scenario; exact when the permutation distribution is small enough, Monte Carlo otherwise) with a
  within-scenario bootstrap interval, ``paired_permutation_test_values`` for graded scores,
  ``fisher_exact_per_scenario``, ``holm_adjust``.
- Suite: ``noise_floor`` (two runs of the baseline), ``minimum_detectable_drop``.
- Live measures: ``two_proportion_diff`` (Newcombe interval, z-test), ``mann_whitney``.
- Judges: ``cohen_kappa``.
"""

from replaygate.stats._intervals import (
    Verdict,
    pass_at_k,
    pass_hat_k,
    scenario_verdict,
    wilson_interval,
    z_value,
)
from replaygate.stats._permutation import (
    Counts,
    PermutationResult,
    paired_permutation_test,
    paired_permutation_test_values,
)
from replaygate.stats._suite import NoiseFloor, cohen_kappa, minimum_detectable_drop, noise_floor
from replaygate.stats._tests2x2 import (
    ProportionDiff,
    RankTest,
    fisher_exact_per_scenario,
    holm_adjust,
    mann_whitney,
    two_proportion_diff,
)

__all__ = [
    "Counts",
    "NoiseFloor",
    "PermutationResult",
    "ProportionDiff",
    "RankTest",
    "Verdict",
    "cohen_kappa",
    "fisher_exact_per_scenario",
    "holm_adjust",
    "mann_whitney",
    "minimum_detectable_drop",
    "noise_floor",
    "paired_permutation_test",
    "paired_permutation_test_values",
    "pass_at_k",
    "pass_hat_k",
    "scenario_verdict",
    "two_proportion_diff",
    "wilson_interval",
    "z_value",
]
