"""What the pages show, shared by the single-run report and the comparison: figures (figures.py), the rows of
their HTML tables (rows.py), and the templates both render through (render_page). Numbers are formatted by
analysis.formatting; the pages (analysis.report, analysis.compare) only assemble a context and render it."""
from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / "templates"


def render_page(template: str, context: dict) -> str:
    """One page of templates/ rendered with `context`, every value HTML-escaped."""
    env = Environment(loader=FileSystemLoader(TEMPLATE_DIR), autoescape=select_autoescape(["html", "j2"]))
    return env.get_template(template).render(**context)
