"""The measurement protocol (run_protocol/): the interleaved order of rounds, the bound on their number and what
counts as steady."""
import pytest

import run_protocol


def test_each_round_reverses_the_order_of_the_one_before():
    assert [c for _, c in run_protocol.interleaved(["A", "B"], 3)] == ["A", "B", "B", "A", "A", "B"]
    assert run_protocol.interleaved(["A", "B", "C"], 2) == [(1, "A"), (1, "B"), (1, "C"), (2, "C"), (2, "B"),
                                                            (2, "A")]
    assert run_protocol.round_order(["A"], 2) == ["A"]


@pytest.mark.parametrize("rounds", [0, -1, 101, 1.5, "3", True, None, 10**20])
def test_rounds_out_of_their_range_are_refused_naming_the_field(rounds):
    with pytest.raises(run_protocol.ProtocolError, match="REPEAT must be a whole number from 1 to 100"):
        run_protocol.check_rounds(rounds, "REPEAT")


def test_rounds_within_their_range_pass():
    assert run_protocol.check_rounds(1) == 1 and run_protocol.check_rounds(run_protocol.MAX_ROUNDS) == 100


def test_warm_runs_are_steady_within_five_percent():
    assert run_protocol.spread_pct([20.0, 21.0, 20.5]) == pytest.approx(5.0)
    assert run_protocol.steady([20.0, 20.8, 20.5]) and not run_protocol.steady([21.5, 32.4])
    # one run, or none that is a time, has no spread: not steady, nothing to state
    assert run_protocol.spread_pct([21.5]) is None and not run_protocol.steady([21.5])
    assert run_protocol.spread_pct([0.0, float("nan"), -1.0]) is None
