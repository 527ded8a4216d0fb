"""Is a difference of times between two configurations real? (metrics layer: takes samples, gives verdicts.)

The one place that decides whether one configuration is faster than another (docs/compare.md, "How sure"):

- every side is summarised by its median, spread (quartiles and range) and n;
- the point estimate is the **ratio of medians**, baseline / other (> 1: the other is faster);
- with at least 2 runs per side, the difference is **significant** when the 95 % confidence interval of the ratio
  excludes 1. The interval is Welch's t interval on log times (Georges, Buytaert and Eeckhout, "Statistically
  Rigorous Java Performance Evaluation", OOPSLA 2007, with logs so that it is an interval of the ratio of geometric
  means): it works from 2 runs per side, and it widens with the spread, unlike a bootstrap of the median, whose
  percentile interval at 2-5 runs per side is just the samples' range (two sets of 2 runs whose ranges do not
  overlap happen 1 time in 3 by chance alone), or a rank test, which cannot reach 5 % below 4 runs per side;
- when a **noise level** of the host is known (a calibration: the same configuration run twice, or repetitions of
  a configuration in the runs compared), the difference must also exceed it: the slower median must be more than
  `noise_pct` % above the faster one;
- with 1 run on a side, only the noise level can tell: without one the verdict is "cannot tell".

A verdict is one of VERDICTS; only FASTER and SLOWER may be ranked or called a speedup by a page or a finding.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

import run_protocol

CONFIDENCE = 0.95
MIN_RUNS = 2            # per side, for an interval
FASTER, SLOWER, SAME, CANNOT_TELL, BASELINE = "faster", "slower", "not significant", "cannot tell", "baseline"
VERDICTS = (FASTER, SLOWER, SAME, CANNOT_TELL, BASELINE)
METHOD = ("ratio of medians; significant when the 95 % Welch t interval of the ratio (log times) excludes 1 "
          "(at least 2 runs per side) and, where the host's noise level is known, the difference exceeds it")


@dataclass(frozen=True)
class Summary:
    """One side: median, quartiles, range and n of its positive, finite samples."""

    n: int
    median: float
    q1: float
    q3: float
    low: float
    high: float

    @classmethod
    def of(cls, samples) -> "Summary":
        values = _clean(samples)
        if not len(values):
            return cls(0, *(math.nan,) * 5)
        q1, median, q3 = np.percentile(values, [25, 50, 75])
        return cls(len(values), float(median), float(q1), float(q3), float(values.min()), float(values.max()))


@dataclass(frozen=True)
class Noise:
    """A host's run-to-run noise: two runs of one configuration differ by up to `pct` % (slower / faster - 1)."""

    pct: float
    source: str


@dataclass(frozen=True)
class Difference:
    """baseline against other: ratio = baseline median / other median, its interval, the verdict and why."""

    baseline: Summary
    other: Summary
    ratio: float
    low: float          # the interval of the ratio; NaN where none was computed (fewer than 2 runs on a side)
    high: float
    verdict: str
    reason: str

    @property
    def significant(self) -> bool:
        return self.verdict in (FASTER, SLOWER)

    @property
    def difference_pct(self) -> float:
        """How much slower the slower median is than the faster one, in %."""
        return (max(self.ratio, 1 / self.ratio) - 1) * 100 if self.ratio > 0 else math.nan


def _clean(samples) -> np.ndarray:
    values = np.asarray(list(samples) if not isinstance(samples, np.ndarray) else samples, dtype=np.float64)
    return values[np.isfinite(values) & (values > 0)]


def compare(baseline, other, noise: Noise | None = None, confidence: float = CONFIDENCE) -> Difference:
    """Whether `other`'s times differ from `baseline`'s (seconds, any positive unit), by the method of this module."""
    b, o = _clean(baseline), _clean(other)
    sb, so = Summary.of(b), Summary.of(o)
    if not sb.n or not so.n:
        return Difference(sb, so, math.nan, math.nan, math.nan, CANNOT_TELL, "no measured run on one side")
    ratio = sb.median / so.median
    differs_pct = (max(ratio, 1 / ratio) - 1) * 100
    direction = FASTER if ratio > 1 else SLOWER
    above_noise = noise is None or differs_pct > noise.pct
    noise_text = f"the host's noise, {noise.pct:.1f} % ({noise.source})" if noise else ""
    if sb.n < MIN_RUNS or so.n < MIN_RUNS:
        runs = f"{sb.n} vs {so.n} run{'s' if max(sb.n, so.n) > 1 else ''}"
        if noise is None:
            return Difference(sb, so, ratio, math.nan, math.nan, CANNOT_TELL,
                              f"{runs}: no noise level of this host is known to tell a difference from noise")
        verdict = direction if above_noise and ratio != 1 else SAME
        relation = "exceeds" if verdict != SAME else "does not exceed"
        return Difference(sb, so, ratio, math.nan, math.nan, verdict,
                          f"{runs}: the difference, {differs_pct:.1f} %, {relation} {noise_text}")
    low, high = log_ratio_interval(b, o, confidence)
    excludes_one = low > 1 or high < 1
    interval = f"{confidence * 100:.0f} % interval of the ratio {low:.2f}-{high:.2f} x"
    if not excludes_one:
        return Difference(sb, so, ratio, low, high, SAME, f"{interval} includes 1")
    if not above_noise:
        return Difference(sb, so, ratio, low, high, SAME,
                          f"{interval} excludes 1, but the difference, {differs_pct:.1f} %, does not exceed {noise_text}")
    # the interval is of the ratio of geometric means: its side of 1 decides, the median ratio is what is shown
    verdict = FASTER if low > 1 else SLOWER
    return Difference(sb, so, ratio, low, high, verdict, f"{interval} excludes 1" +
                      (f" and the difference, {differs_pct:.1f} %, exceeds {noise_text}" if noise else ""))


def log_ratio_interval(baseline, other, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Welch's t interval of exp(mean log baseline - mean log other): the ratio of geometric means."""
    lb, lo = np.log(_clean(baseline)), np.log(_clean(other))
    if len(lb) < MIN_RUNS or len(lo) < MIN_RUNS:
        raise ValueError(f"an interval needs at least {MIN_RUNS} samples per side")
    diff = lb.mean() - lo.mean()
    vb, vo = lb.var(ddof=1) / len(lb), lo.var(ddof=1) / len(lo)
    se = math.sqrt(vb + vo)
    if se == 0:
        return math.exp(diff), math.exp(diff)
    df = (vb + vo) ** 2 / ((vb ** 2 / (len(lb) - 1) if vb else 0) + (vo ** 2 / (len(lo) - 1) if vo else 0))
    t = student_t_quantile(1 - (1 - confidence) / 2, df)
    return math.exp(diff - t * se), math.exp(diff + t * se)


# ---------------------------------------------------------------- Student's t, without scipy

def _beta_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes' betacf)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def student_t_cdf(t: float, df: float) -> float:
    tail = 0.5 * regularized_beta(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t >= 0 else tail


def student_t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p (0.5 < p < 1) for `df` degrees of freedom (fractional ones too: Welch), by bisection."""
    if not 0.5 < p < 1 or not df > 0:
        raise ValueError(f"student_t_quantile needs 0.5 < p < 1 and df > 0, got p={p}, df={df}")
    low, high = 0.0, 1.0
    while student_t_cdf(high, df) < p:
        low, high = high, high * 2
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if student_t_cdf(mid, df) < p else (low, mid)
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2


# ---------------------------------------------------------------- noise of the host, from repetitions

def noise_from_repetitions(spread: pd.DataFrame, what: str = "") -> Noise | None:
    """The largest relative range (slowest / fastest - 1) among the rows of a metrics spread table (one row per
    configuration, its repetitions in `samples`) that hold at least 2 runs: the run-to-run noise those runs
    showed. None when no configuration was repeated."""
    if spread.empty or "samples" not in spread:
        return None
    best = None
    for row in spread.to_dict("records"):
        values = _clean(row["samples"])
        if len(values) >= 2:
            pct = run_protocol.spread_pct(values.tolist())
            if best is None or pct > best[0]:
                best = (pct, row, values)
    if best is None:
        return None
    pct, row, values = best
    repeated = sum(len(_clean(s)) >= 2 for s in spread["samples"])
    label = " ".join(str(row[k]) for k in ("workload", "configuration") if k in row and isinstance(row[k], str))
    return Noise(pct, f"largest spread of {repeated} repeated configuration{'s' if repeated > 1 else ''}"
                      f"{' of ' + what if what else ''}: {label} {values.min():.1f}-{values.max():.1f} s".rstrip())
