"""A run warns when its machine times the original too unevenly for screening ratios to mean
much: the timings below are the original's, as two runs of the batching example recorded them."""

from __future__ import annotations

from gi.engine.timing import screening_noise

#: A CI run (2026-12-06) in which BATCH_SIZE = 2, twice as fast, screened at 1.09 of the original.
NOISY = {
    "timing:0": {"process_means": [0.003474874249983865, 0.004312895749990275], "loops": 8, "answered": ""},
    "timing:1": {"process_means": [0.008211248583393171, 0.006780460708341707], "loops": 8},
}
#: A run on the same machine at a quiet moment.
QUIET = {
    "timing:0": {"process_means": [0.003619771458337103, 0.0038576755417428408], "loops": 8, "answered": ""},
    "timing:1": {"process_means": [0.003713210916657772, 0.003623432541720225], "loops": 8},
}


def test_a_run_whose_original_took_times_far_apart_says_screening_is_noise() -> None:
    warning = screening_noise(NOISY)
    assert warning.startswith("workload: the original's screening processes took 3.47 to 8.21 ms a call")
    assert "(4 processes, 2.36x apart)" in warning and "workload.screening_processes" in warning


def test_a_run_whose_original_took_even_times_says_nothing() -> None:
    assert screening_noise(QUIET) == ""
    assert screening_noise({}) == ""


def test_a_timing_that_failed_counts_for_nothing() -> None:
    assert screening_noise({**QUIET, "timing:2": {"error": "the workload timed out"}}) == ""
    assert screening_noise({"timing:0": NOISY["timing:0"], "timing:1": {"error": "it raised"}}) == ""
