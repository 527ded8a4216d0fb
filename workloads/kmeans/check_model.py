#!/usr/bin/env python3
"""Checks a trained K-means model against the centres the data was generated from.

    check_model.py <centres.json> <model.json> <validation.json>

centres.json is what `generate` wrote (true centres, sigma), model.json what `train` wrote (found centres,
cost per iteration). Writes validation.json; exits 1, saying why, when the model fails:

- every true centre has a found centre within sigma * sqrt(dimensions), the RMS distance of a point from
  its centre: the mean of a cluster's points misses its centre by about sigma * sqrt(dimensions / n_c),
  while a merged or split cluster moves a centre by half the distance between centres or more. The
  matching is one to one because that tolerance is below half the smallest distance between centres
  (spread * sqrt(dimensions) < 0.5, checked);
- the cost (sum of squared distances) never increases from one iteration to the next beyond float noise,
  as Lloyd's algorithm guarantees;
- the final cost is within COST_SLACK of its expectation, (points - k) * dimensions * sigma^2: a sum of
  that many squared Gaussian deviations, so the recorded costs mean what they say.

Standard library only: it runs in the workload's venv and under the tests' interpreter alike.
"""
import json
import math
import sys

# Relative increase of the cost between iterations taken as summation-order noise, not an increase.
COST_NOISE = 1e-6
# Relative distance of the final cost from its expectation allowed, at the least; more with few points.
COST_SLACK = 0.05


def distance(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def check(truth, model):
    problems = []
    dimensions, sigma = truth["dimensions"], truth["sigma"]
    tolerance = sigma * math.sqrt(dimensions)
    if tolerance >= truth["min_centre_distance"] / 2:
        problems.append(f"spread {truth['spread']} is too large to check recovery in {dimensions} dimensions: "
                        f"the tolerance {tolerance:.4g} is not below half the smallest centre distance "
                        f"{truth['min_centre_distance']:.4g} (need spread * sqrt(dimensions) < 0.5)")
    if model["dimensions"] != dimensions:
        problems.append(f"model has {model['dimensions']} dimensions, the data {dimensions}")
    if model["points"] != truth["points"]:
        problems.append(f"model was trained on {model['points']} points, {truth['points']} were generated")

    errors = []
    matched = set()
    for index, centre in enumerate(truth["centres"]):
        nearest = min(range(len(model["centres"])), key=lambda c: distance(centre, model["centres"][c]))
        error = distance(centre, model["centres"][nearest])
        errors.append(error)
        if error > tolerance:
            problems.append(f"true centre {index} has no found centre within {tolerance:.4g}: "
                            f"the nearest is {error:.4g} away")
        elif nearest in matched:
            problems.append(f"true centre {index} shares its found centre {nearest} with another true centre")
        matched.add(nearest)

    costs = [row["cost"] for row in model["per_iteration"]]
    for before, after, iteration in zip(costs, costs[1:], range(1, len(costs))):
        if after > before * (1 + COST_NOISE):
            problems.append(f"cost increased at iteration {iteration}: {before:.10g} -> {after:.10g}")
    expected_cost = (truth["points"] - truth["k"]) * dimensions * sigma ** 2
    cost_ratio = costs[-1] / expected_cost
    slack = max(COST_SLACK, 5 * math.sqrt(2 / (truth["points"] * dimensions)))
    if abs(cost_ratio - 1) > slack:
        problems.append(f"final cost {costs[-1]:.6g} is {cost_ratio:.4f} times the expected "
                        f"{expected_cost:.6g} (allowed 1 +- {slack:.3g})")
    return {
        "ok": not problems,
        "problems": problems,
        "tolerance": tolerance,
        "max_centre_error": max(errors),
        "centre_errors": errors,
        "costs": costs,
        "expected_final_cost": expected_cost,
        "final_cost_ratio": cost_ratio,
    }


def main(argv):
    if len(argv) != 4:
        sys.exit(f"usage: {argv[0]} <centres.json> <model.json> <validation.json>")
    with open(argv[1]) as truth_file, open(argv[2]) as model_file:
        result = check(json.load(truth_file), json.load(model_file))
    with open(argv[3], "w") as out:
        json.dump(result, out, indent=2)
    if not result["ok"]:
        for problem in result["problems"]:
            print(f"kmeans validation FAILED: {problem}", file=sys.stderr)
        return 1
    print(f"kmeans validation: all {len(result['centre_errors'])} true centres recovered "
          f"(largest error {result['max_centre_error']:.4g}, tolerance {result['tolerance']:.4g}); "
          f"cost never increased; final cost {result['final_cost_ratio']:.4f} x expected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
