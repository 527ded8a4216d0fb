"""Spillway analysis: run directory -> parsers -> tables (Parquet) -> metrics -> models -> presentation -> pages.

Data flows one way (docs/architecture.md, "The analysis, layer by layer"): only `parsers` read `raw/`, `tables`
assembles their output into the tables of docs/tables.md, everything downstream takes tables; each layer imports
only the layers below it (docs/architecture.md, "Layers"; checked by tests/architecture.py).
"""
