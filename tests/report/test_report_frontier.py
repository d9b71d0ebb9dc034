"""The report's frontier: per adapter, accuracy against cost and latency per question, the
Pareto-optimal adapters and each one's LAFS score and gain, on hand-computed values; an
unknown cost stays unknown."""

from __future__ import annotations

import math

import pytest

from lens.report.figures.frontier import frontier_of, frontier_table

LN10, LN200 = math.log(10), math.log(200)


def _arm(acc: float | None, cost: float | None, latency: float | None) -> dict:
    return {"accuracy": acc, "cost_usd_per_question": cost, "latency_s_per_question": latency}


def test_frontier_by_hand() -> None:
    data = frontier_of({
        "best": _arm(0.80, 0.01, 20.0),
        "cheap": _arm(0.78, 0.001, 2.0),
        "dominated": _arm(0.70, 0.05, 50.0),
    })
    arms = data["arms"]
    assert {n for n, a in arms.items() if a["latency"]["pareto"]} == {"best", "cheap"}
    assert {n for n, a in arms.items() if a["cost"]["pareto"]} == {"best", "cheap"}
    # Latency window 1–200 s: the cheap arm holds 0.78 from 2 s on, the best one adds 0.02
    # from 20 s on; the dominated arm adds nothing.
    assert arms["cheap"]["latency"]["gain"] == pytest.approx(0.78 * LN10 / LN200)
    assert arms["best"]["latency"]["gain"] == pytest.approx(0.02 * LN10 / LN200)
    assert arms["dominated"]["latency"]["gain"] == pytest.approx(0.0, abs=1e-12)
    assert arms["best"]["latency"]["lafs"] == pytest.approx(0.8 * LN10 / LN200)
    # Cost window $0.0001–$1: ln(1/0.0001) = ln(10^4); cheap from $0.001, best from $0.01.
    ln_window = math.log(1e4)
    assert arms["cheap"]["cost"]["gain"] == pytest.approx(0.78 * math.log(10) / ln_window)
    assert arms["best"]["cost"]["gain"] == pytest.approx(0.02 * math.log(100) / ln_window)
    assert data["windows"] == {"latency": [1.0, 200.0], "cost": [1e-4, 1.0]}


def test_unknown_cost_stays_unknown_never_zero() -> None:
    data = frontier_of({"priced": _arm(0.6, 0.002, 3.0), "unpriced": _arm(0.9, None, 3.0)})
    unpriced = data["arms"]["unpriced"]
    assert unpriced["cost"] == {"pareto": None, "lafs": None, "gain": None}
    # Its latency is known: it stays on the latency frontier.
    assert unpriced["latency"]["pareto"] is True
    assert data["arms"]["priced"]["cost"]["pareto"] is True
    row = next(r for r in frontier_table(data)["rows"] if r[0] == "unpriced")
    assert row[2] == "unknown" and row[4] == "unknown" and row[6] == "unknown"
    assert "0.000000" not in row[2]


def test_unknown_accuracy_is_off_every_frontier() -> None:
    data = frontier_of({"unscored": _arm(None, 0.001, 1.0), "scored": _arm(0.5, 0.001, 1.0)})
    assert data["arms"]["unscored"]["latency"] == {"pareto": None, "lafs": None, "gain": None}
    assert data["arms"]["scored"]["latency"]["gain"] == pytest.approx(0.5)
