"""Grafana dashboards as code: the panel queries (`dashboards.queries`) and the generator (`python -m dashboards`)."""
