"""What the pages show, shared by the single-run report and the comparison: figures (figures/, one module per
family), the rows of their HTML tables (rows/, one module per section), the sections both pages build the same way
(page_sections.py), and the templates both render through (render_page). Numbers are formatted by
analysis.formatting; the pages (analysis.report_page, analysis.compare_page) only assemble a context and render
it."""
from __future__ import annotations

import functools
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / "templates"


@functools.cache
def _environment() -> Environment:
    """One environment per process: it keeps the compiled templates (compiling them took 0.16 s of every page, a
    sixth of a small run's report), and recompiles a template whose file changed."""
    return Environment(loader=FileSystemLoader(TEMPLATE_DIR), autoescape=select_autoescape(["html", "j2"]))


def render_page(template: str, context: dict) -> str:
    """One page of templates/ rendered with `context`, every value HTML-escaped."""
    return _environment().get_template(template).render(**context)
