"""What the storage did, in sentences: a documented rule set over a run's tables (findings layer: above the models,
below the presentation; docs/findings.md holds every rule's trigger, threshold, evidence and action), in the manner
of Drishti over Darshan logs, for Spark and MapReduce on storage.

- engine.py: what a rule and a finding are, the tables a rule reads (Inputs), a rule set's evaluation over a run;
- rules/: the rules, one module per family, and RULES, the rule set in its order (rules/__init__.py);
- rules/run_time.py: the time rules, and the rule set over a comparison's runs (evaluate_comparison).
findings.json, their presentation for machines, is analysis/presentation/findings_export.py.
"""
