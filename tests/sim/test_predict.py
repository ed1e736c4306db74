"""The agreement figures of ``petacomm simulate --predict`` against hand-worked values."""

from __future__ import annotations

import math

import pytest

from petacomm.sim.predict import agreement, format_agreement, spearman


def test_spearman_by_hand():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    # Ties share their mean rank: a -> 1.5, 1.5, 3 against 1, 2, 3: cov 1.5, var 1.5 and 2.
    assert spearman([5, 5, 9], [1, 2, 3]) == pytest.approx(1.5 / math.sqrt(3.0))
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_times_within_half_a_percent_are_ties():
    # 1.004 is within 0.5 % of 1.0: ranks (1.5, 1.5, 3) against (1, 2, 3), as in the case above.
    assert spearman([1.0, 1.004, 2.0], [1, 2, 3]) == pytest.approx(1.5 / math.sqrt(3.0))
    assert spearman([1.0, 1.004, 2.0], [1, 2, 3], tolerance=0.0) == pytest.approx(1.0)
    # A group is measured from its first value: 1.008 is 0.8 % above 1.0, so not tied to it.
    assert spearman([1.0, 1.004, 1.008], [1, 2, 3]) == pytest.approx(1.5 / math.sqrt(3.0))


def test_spearman_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    a = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    b = [2.7, 1.8, 2.8, 1.8, 2.8, 4.5, 9.0, 4.0]
    assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic)


def test_agreement_by_hand():
    def rec(mapping, simulated, predicted, ranks=8, variant="v"):
        return {
            "ranks": ranks,
            "variant": variant,
            "mapping": mapping,
            "simulated_time_s": simulated,
            "predicted_time_s": predicted,
        }

    records = [
        rec("A", 2.0, 1.0),
        rec("B", 1.0, 1.5),  # simulated best; the model prefers A (2.0 / 1.0 - 1 = 100 % gap)
        rec("C", 4.0, 3.0),
        rec("A", 1.0, 1.0, ranks=16),  # a group of one mapping: no figures
    ]
    (group,) = agreement(records)
    assert (group["ranks"], group["mappings"]) == (8, 3)
    assert (group["predicted_best"], group["simulated_best"]) == ("A", "B")
    assert group["top_choice_gap"] == pytest.approx(1.0)
    assert group["spearman"] == pytest.approx(0.5)  # ranks (1,2,3) vs (2,1,3): 1 - 6*2/24
    assert group["predicted_over_simulated"] == pytest.approx([0.5, 1.5])


def test_equal_predictions_have_no_correlation():
    records = [
        {"ranks": 4, "variant": "v", "mapping": m, "simulated_time_s": t, "predicted_time_s": 1.0}
        for m, t in (("A", 1.0), ("B", 2.0))
    ]
    (group,) = agreement(records)
    assert group["spearman"] is None  # JSON null, not NaN
    assert "undefined" in format_agreement([group])
