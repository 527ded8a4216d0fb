"""The rows of the pages' HTML tables: every number formatted with its unit (analysis.formatting), one
builder per table, in one module per section: shared cells (cells.py), the run's page's tables (report_tables.py),
the comparison page's (compare_tables.py), and the sections both pages or one of them show: overview.py,
sensitivity.py, io_patterns.py, findings_section.py."""
