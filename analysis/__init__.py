"""Spillway analysis: raw run directory -> tidy tables (Parquet) -> metrics -> HTML report.

Data flows one way (docs/architecture.md): `parsers` read one raw source each, `tables` assembles
them into the tables of docs/tables.md, `metrics` derives what the report plots, `report` renders.
"""
