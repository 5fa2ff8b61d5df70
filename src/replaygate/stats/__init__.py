"""replaygate.stats: honest statistics for agent regression tests (pure functions, no I/O).

- Per scenario: ``wilson_interval``, ``pass_hat_k`` / ``pass_at_k``, ``scenario_verdict`` (must-pass
  scenarios use pass^k; others compare the Wilson interval with their threshold);
  ``min_repeats_to_pass`` / ``min_repeats_to_fail`` (the fewest attempts at which a threshold can be
  confirmed either way: 0.8 needs 16 at 95%) and ``threshold_note`` (that, said in words).
- Per scenario, baseline against candidate: ``fisher_worse_p`` (one-sided Fisher exact test, to be
  Benjamini-Hochberg-adjusted across the suite: ``SCENARIO_TEST``) and ``scenario_detectable_drop``
  (how far one scenario must fall for that test to flag it).
- Baseline against candidate: ``paired_permutation_test`` (case-stratified: labels shuffled within each
  scenario; exact when the permutation distribution is small enough, Monte Carlo otherwise) with a
  within-scenario bootstrap interval, ``paired_permutation_test_values`` for graded scores,
  ``fisher_exact_per_scenario``, ``holm_adjust``, ``bh_adjust``.
- Suite: ``noise_floor`` (two runs of the baseline), ``minimum_detectable_drop`` (and
  ``minimum_detectable_drops``: several tolerances from one simulation).
- Live measures: ``two_proportion_diff`` (Newcombe interval, z-test), ``mann_whitney``.
- Judges: ``cohen_kappa``.
"""

from replaygate.stats._intervals import (
    Verdict,
    min_repeats_to_fail,
    min_repeats_to_pass,
    pass_at_k,
    pass_hat_k,
    scenario_verdict,
    threshold_note,
    wilson_interval,
    z_value,
)
from replaygate.stats._permutation import (
    Counts,
    PermutationResult,
    paired_permutation_test,
    paired_permutation_test_values,
)
from replaygate.stats._scenario_drop import SCENARIO_TEST, fisher_worse_p, scenario_detectable_drop
from replaygate.stats._suite import (
    NoiseFloor,
    cohen_kappa,
    minimum_detectable_drop,
    minimum_detectable_drops,
    noise_floor,
)
from replaygate.stats._tests2x2 import (
    ProportionDiff,
    RankTest,
    bh_adjust,
    fisher_exact_per_scenario,
    holm_adjust,
    mann_whitney,
    two_proportion_diff,
)

__all__ = [
    "SCENARIO_TEST",
    "Counts",
    "NoiseFloor",
    "PermutationResult",
    "ProportionDiff",
    "RankTest",
    "Verdict",
    "bh_adjust",
    "cohen_kappa",
    "fisher_exact_per_scenario",
    "fisher_worse_p",
    "holm_adjust",
    "mann_whitney",
    "min_repeats_to_fail",
    "min_repeats_to_pass",
    "minimum_detectable_drop",
    "minimum_detectable_drops",
    "noise_floor",
    "paired_permutation_test",
    "paired_permutation_test_values",
    "pass_at_k",
    "pass_hat_k",
    "scenario_detectable_drop",
    "scenario_verdict",
    "threshold_note",
    "two_proportion_diff",
    "wilson_interval",
    "z_value",
]
