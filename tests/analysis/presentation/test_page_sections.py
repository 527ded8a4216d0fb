"""What both pages do alike with a section (analysis.presentation.page_sections): a section that fails shows why in
its place and warns, naming the page; the storage sensitivity comes out as rows and as findings.json's objects."""
import pandas as pd
import pytest

from analysis.presentation.page_sections import SectionFailed, section_failed, storage_sensitivity_section


def test_a_failed_section_says_what_failed_and_warns_naming_the_page():
    with pytest.warns(SectionFailed, match=r"^report of run-a: the model could not be evaluated: KeyError: 'fio'$"):
        note = section_failed("report of run-a", "the model", KeyError("fio"))
    assert note == "the model could not be evaluated: KeyError: 'fio'"


def test_a_failing_storage_sensitivity_costs_its_section_only():
    def storage_sensitivity() -> pd.DataFrame:
        raise ValueError("no placement")

    with pytest.warns(SectionFailed, match="comparison of a, b: the storage sensitivity could not be evaluated"):
        section = storage_sensitivity_section("comparison of a, b", storage_sensitivity)
    assert section["rows"] == [] and section["placements"] == []
    assert section["error"] == "the storage sensitivity could not be evaluated: ValueError: no placement"
    assert section["json"]["error"] == section["error"]


def test_an_empty_storage_sensitivity_is_an_empty_table_without_error():
    section = storage_sensitivity_section("report of run-a", pd.DataFrame)
    assert (section["placements"], section["rows"], section["error"]) == ([], [], "")
