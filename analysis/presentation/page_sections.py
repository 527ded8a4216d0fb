"""What both pages (analysis.report_page, analysis.compare_page) do the same way with a section: build it, or, when
it fails, show why in its place and warn, so that one failing section never costs the page; and the section both
build alike from their own model inputs, the storage sensitivity."""
from __future__ import annotations

import warnings
from typing import Callable

import pandas as pd

from . import findings_export
from .rows.sensitivity import sensitivity_context


class SectionFailed(UserWarning):
    """A section of a page could not be built: the page shows its error instead. Warned too, so that the user sees
    it on stderr and the tests, which turn this warning into an error (pytest.ini), fail on it."""


def section_failed(page: str, what: str, error: Exception, stacklevel: int = 3) -> str:
    """The note a failed section shows in its place, `<what> could not be evaluated: <error>`, warned as
    `<page>: <note>`; `page` names the page (`report of <run>`, `comparison of <runs>`)."""
    note = f"{what} could not be evaluated: {type(error).__name__}: {error}"
    warnings.warn(f"{page}: {note}", SectionFailed, stacklevel=stacklevel)
    return note


def storage_sensitivity_section(page: str, storage_sensitivity: Callable[[], pd.DataFrame]) -> dict:
    """The storage sensitivity (models.sensitivity.storage_sensitivity, as the page's `storage_sensitivity()`
    computes it) as the page's rows and as findings.json's objects; a failure is shown."""
    try:
        table = storage_sensitivity()
        return {**sensitivity_context(table), "error": "",
                "json": findings_export.section(findings_export.sensitivity_records(table))}
    except Exception as error:  # noqa: BLE001 - shown in the section instead
        note = section_failed(page, "the storage sensitivity", error, stacklevel=4)
        return {"placements": [], "rows": [], "error": note, "json": findings_export.section(error=note)}
