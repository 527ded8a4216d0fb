"""The host-steadiness benchmark (experiments/benchmarks/host_steadiness.py) runs end to end on a tiny loop and
prints its rounds and spreads; its inputs are bounded (speed is not checked here)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.benchmarks.host_steadiness import steal_ticks
from run_protocol import spread_pct

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.benchmarks.host_steadiness", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_it_prints_every_round_and_both_spreads(tmp_path):
    done = _run("--rounds", "3", "--iterations", "20000", "--json", str(tmp_path / "out.json"))
    assert done.returncode == 0, done.stderr
    assert len(re.findall(r"^ +\d+ +[\d.]+ s +[\d.]+ s +\d+ ticks$", done.stdout, re.M)) == 3, done.stdout
    assert re.search(r"wall [\d.]+ %, thread CPU [\d.]+ % over 3 rounds of 20,000 steps", done.stdout), done.stdout
    recorded = json.loads((tmp_path / "out.json").read_text())
    assert recorded["cpu_spread_pct"] == pytest.approx(spread_pct([r["cpu_s"] for r in recorded["rounds"]]))


@pytest.mark.parametrize("args, field", [(("--rounds", "1"), "--rounds"), (("--rounds", "1001"), "--rounds"),
                                         (("--iterations", "0"), "--iterations")])
def test_a_value_out_of_bounds_is_refused_naming_it(args, field):
    done = _run(*args)
    assert done.returncode == 2 and field in done.stderr and "between" in done.stderr


def test_spread_and_steal():
    assert spread_pct([2.0, 2.2, 2.1]) == pytest.approx(10.0)
    assert steal_ticks() >= 0
