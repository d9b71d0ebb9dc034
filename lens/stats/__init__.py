"""Honest statistics: every estimate lens prints comes with the uncertainty it deserves, with
questions of one scope treated as correlated (they share a memory).

- intervals: effective n, the ICC, cluster-robust intervals (Wilson shape for rates);
- resample: content-seeded, vectorised scope-clustered bootstrap and p-value Monte Carlo error;
- paired: McNemar, the paired bootstrap, Holm;
- friedman: many arms across scopes (Friedman's test, Kendall's W);
- repeats: per-question reducers over repeats and the flip rate;
- agreement: raw agreement and Cohen's kappa between two raters (judges);
- planning: sample sizes in questions and scopes; comparability: which conditions must match;
- sequential: anytime-valid confidence sequences over scope blocks, for verdicts read as a run
  goes (imported from ``lens.stats.sequential``).
"""

from lens.stats.agreement import Agreement, agreement, cohen_kappa
from lens.stats.comparability import TREATMENT_FIELDS, condition_differences
from lens.stats.friedman import Friedman, friedman
from lens.stats.intervals import (
    DEFAULT_Z,
    MIN_BOOTSTRAP_N,
    Clustered,
    Estimate,
    bootstrap_mean,
    clustered_estimate,
    effective_n,
    estimate,
    icc_of,
    is_binary,
    small_cluster_inflation,
    t_for,
    unknown,
    wilson,
    wilson_bounds,
    wilson_half_width,
    z_for,
)
from lens.stats.paired import (
    McNemar,
    PairedResult,
    binom_cdf,
    delta_from_replicates,
    holm,
    holm_by_family,
    holm_mc_error,
    mcnemar_exact,
    pair_seed,
    paired_bootstrap,
    paired_compare,
)
from lens.stats.planning import (
    clustered_size,
    design_effect,
    margin_table,
    planning_table,
    sample_size_two_proportions,
)
from lens.stats.repeats import REDUCERS, check_reducer, reduce, reduce_repeats
from lens.stats.resample import (
    DEFAULT_RESAMPLES,
    TEST_RESAMPLES,
    BootTest,
    bootstrap_p,
    cluster_bootstrap_means,
    cluster_bootstrap_weights,
    content_seed,
    digest_of,
    inflate,
    percentile_interval,
    replicate,
    rng_for,
    rng_from,
    symmetric_seed,
    weighted_means,
)

__all__ = [
    "DEFAULT_RESAMPLES", "DEFAULT_Z", "MIN_BOOTSTRAP_N", "REDUCERS", "TEST_RESAMPLES",
    "TREATMENT_FIELDS", "Agreement", "BootTest", "Clustered", "Estimate", "Friedman", "McNemar",
    "PairedResult", "agreement", "binom_cdf", "bootstrap_mean", "bootstrap_p", "check_reducer",
    "cluster_bootstrap_means", "cluster_bootstrap_weights", "clustered_estimate",
    "clustered_size", "cohen_kappa", "condition_differences", "content_seed",
    "delta_from_replicates",
    "design_effect", "digest_of", "effective_n", "estimate", "friedman", "holm", "holm_by_family",
    "holm_mc_error", "icc_of", "inflate", "is_binary", "margin_table", "mcnemar_exact",
    "pair_seed", "paired_bootstrap", "paired_compare", "percentile_interval", "planning_table",
    "reduce", "reduce_repeats", "replicate", "rng_for", "rng_from", "sample_size_two_proportions",
    "small_cluster_inflation", "symmetric_seed", "t_for", "unknown", "weighted_means", "wilson",
    "wilson_bounds", "wilson_half_width", "z_for",
]
