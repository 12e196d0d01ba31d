"""Statistics used by the benchmark, the aggregation and the gate.

    descriptive  medians, quartiles, Wilson intervals, the exact McNemar test
    agreement    Krippendorff's alpha and Cohen's kappa
    speedup      the speed-up over prompts with its bootstrap, Leviathan et al.'s prediction
    clustered    cluster-aware inference for ratings (the pair and the rater as units): Tango's interval, the
                 exact pair bootstrap, cluster-robust variances (CR1, and two-way CR2 with its degrees of
                 freedom), the score floor on the pair means' moments, the gate's paired difference
    betting      anytime-valid confidence sequences for a bounded mean by betting (Waudby-Smith & Ramdas 2024): a
                 lower bound and a two-sided sequence that may be looked at after every observation
    ppi          prediction-powered inference (PPI++) of the paired difference: the pre-screen on every pooled pair,
                 corrected by the raters on a random subset
    sequential   group-sequential looks: Lan-DeMets alpha spending (O'Brien-Fleming type), the boundaries by recursive
                 numerical integration, crossing probabilities under a drift, information fractions from look sizes
"""

from .agreement import cohen_kappa, cohen_kappa_binary, krippendorff_alpha_counts, krippendorff_alpha_nominal
from .betting import betting_cs, betting_lower, plugin_bets
from .clustered import (
    INTERVALS, MIN_RATERS_TWO_WAY, T_FLOOR, UNION, cluster_variance, clustered_proportions, cr2_two_way, lattice_bootstrap_interval,
    paired_difference, proportions_from_counts, score_floor, tango_interval,
)
from .descriptive import iqr, mcnemar_exact, median, t_quantile, wilson, wilson_array, z_for
from .sequential import (
    boundaries, confidence_for, crossing_probabilities, look_fractions, obf_spending, pocock_spending,
)
from .speedup import alpha_from_tokens_per_pass, expected_tokens_per_pass, speedup_over_prompts, theoretical_speedup

__all__ = [
    "INTERVALS", "MIN_RATERS_TWO_WAY", "T_FLOOR", "UNION", "alpha_from_tokens_per_pass", "betting_cs", "betting_lower",
    "boundaries", "cluster_variance", "clustered_proportions", "cohen_kappa", "cohen_kappa_binary", "confidence_for",
    "cr2_two_way", "crossing_probabilities", "expected_tokens_per_pass", "iqr", "krippendorff_alpha_counts",
    "krippendorff_alpha_nominal", "lattice_bootstrap_interval", "look_fractions", "mcnemar_exact", "median",
    "obf_spending", "paired_difference", "plugin_bets", "pocock_spending", "proportions_from_counts", "score_floor",
    "speedup_over_prompts", "t_quantile", "tango_interval", "theoretical_speedup", "wilson", "wilson_array", "z_for",
]
