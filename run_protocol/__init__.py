"""How compared configurations are measured, the one definition the harness (which plans the runs) and the analysis
(which judges them) share: the interleaved order of their repeats and the rule that says when to stop
(docs/compare.md, "The measurement protocol"). Standard library only, below both (docs/architecture.md, "Layers").

- **Warm-ups**: after every provisioning and every placement switch, one unmeasured application runs before any
  measured run (the first JVM start-ups, YARN's localisation of the jars, HDFS's cold metadata are paid there).
- **Interleaved order**: configurations compared run in rounds, each round every configuration once, the order of
  each round the reverse of the one before (A B, B A, A B, ...): a drift of the host over the bench falls on both
  sides alike over every two rounds, and the two runs of the same configuration around a round's edge need no
  switch between them.
- **Stopping rule**: fixed in advance, never decided on the times seen (a rule that stops when the times look good
  biases the result): the planned rounds, no more, no fewer; a resume (RESUME=) runs what of them is left. Whether
  the runs then tell the configurations apart is the statistics' answer (analysis/statistics.py), and whether they
  are as steady as the protocol asks is `steady`.
"""
from __future__ import annotations

# The default bench's storage probe: this many measured runs on each side (one of them the suite's own run on the
# inventory's placement), the least at which a spread of one configuration's warm runs is worth stating (issue 42).
PROBE_ROUNDS = 3
# The most rounds a plan may ask for: the plan's own size limit (spillway/bench/plan.py) bounds the rest.
MAX_ROUNDS = 100
# Repeated warm runs of one configuration whose slowest is more than this much above the fastest are not steady:
# the host drifted or was disturbed, and a verdict on them says so (the "Done when": at most 5 %).
STEADY_SPREAD_PCT = 5.0
STOPPING_RULE = (f"a fixed number of rounds, planned before the first run and never changed by the times seen; "
                 "each round runs every compared configuration once, in the reverse order of the round before; a "
                 "resume runs what is left of them. Runs are steady when, on each side, the slowest warm run is at "
                 f"most {STEADY_SPREAD_PCT:g} % above the fastest")


class ProtocolError(ValueError):
    """A protocol input out of its range, the field named."""


def check_rounds(rounds, field: str = "rounds") -> int:
    """`rounds`, when a whole number from 1 to MAX_ROUNDS; ProtocolError naming `field` otherwise."""
    if not isinstance(rounds, int) or isinstance(rounds, bool) or not 1 <= rounds <= MAX_ROUNDS:
        raise ProtocolError(f"{field} must be a whole number from 1 to {MAX_ROUNDS}, got {str(rounds)[:40]!r}")
    return rounds


def round_order(configurations: list, round_number: int) -> list:
    """The configurations in the order round `round_number` (1, 2, ...) runs them: as given in odd rounds, reversed
    in even ones."""
    return list(configurations) if round_number % 2 else list(reversed(configurations))


def interleaved(configurations: list, rounds: int) -> list[tuple[int, object]]:
    """(round, configuration) for every run of `rounds` rounds, in run order: A B, B A, A B, ..."""
    check_rounds(rounds)
    return [(n, c) for n in range(1, rounds + 1) for c in round_order(configurations, n)]


def spread_pct(times) -> float | None:
    """The slowest of `times` (seconds) over the fastest, minus 1, in %; None with fewer than 2 positive times."""
    values = [t for t in times if isinstance(t, (int, float)) and t > 0 and t == t]
    if len(values) < 2:
        return None
    return (max(values) / min(values) - 1) * 100


def steady(times) -> bool:
    """Whether repeated warm runs of one configuration are as steady as the protocol asks (STEADY_SPREAD_PCT)."""
    spread = spread_pct(times)
    return spread is not None and spread <= STEADY_SPREAD_PCT
