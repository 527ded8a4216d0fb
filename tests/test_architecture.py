"""The repository keeps its layers (docs/architecture.md, "Layers"; the check is tests/architecture.py), and the check
fails on a violation of each of its rules, planted in a copy of the repository's Python modules."""
import shutil
import subprocess
import sys
import textwrap

import pytest

import architecture
from architecture import REPO

# Violations in today's tree that other helpers of issue 40 are removing. The test expects exactly these, so it fails
# both on a new violation and once one of these is gone: the lead empties this after merging the helpers' branches.


def test_the_repository_keeps_its_layers():
    assert architecture.problems(REPO) == []


def test_the_harness_starts_no_pandas():
    """What the rule "run_layout: the standard library only" is for: the harness imports the layout without
    starting pandas, pyarrow or numpy (and the system python, without the venv, can run it)."""
    probe = ("import sys, spillway.bench.orchestrator, spillway.__main__; "
             "print(sorted(m for m in ('pandas', 'pyarrow', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """The repository's checked folders (Python modules only) and docs/architecture.md, and their problems."""
    root = tmp_path_factory.mktemp("pristine")
    rules = architecture.read_rules(REPO / architecture.DOC)
    keep_python = lambda folder, names: [n for n in names  # noqa: E731 - copytree's ignore
                                         if not n.endswith(".py") and not (REPO / folder / n).is_dir()]
    for folder in rules.folders:
        shutil.copytree(REPO / folder, root / folder, ignore=keep_python)
    (root / "docs").mkdir()
    shutil.copy(REPO / architecture.DOC, root / architecture.DOC)
    return root, architecture.problems(root)


@pytest.fixture
def tree(pristine, tmp_path):
    root, _ = pristine
    shutil.copytree(root, tmp_path / "repo")
    return tmp_path / "repo"


def new_problems(pristine, tree):
    return sorted(set(architecture.problems(tree)) - set(pristine[1]))


def append(tree, module_path, code):
    path = tree / module_path
    path.write_text(path.read_text() + "\n\n" + textwrap.dedent(code))


def test_the_copy_has_the_problems_of_the_repository(pristine):
    assert pristine[1] == []


def test_the_harness_importing_the_analysis_fails(pristine, tree):
    append(tree, "spillway/bench/plan.py", "from analysis import formatting\n")
    (problem,) = new_problems(pristine, tree)
    assert problem.startswith("spillway/bench/plan.py:") and "spillway.bench.plan imports analysis.formatting: " \
        "spillway/ may " \
        "import dashboards, run_layout" in problem


def test_the_emulation_importing_the_analysis_fails(pristine, tree):
    append(tree, "emulation/config.py", "import analysis.tables\n")
    assert [p.split(": ", 1)[1] for p in new_problems(pristine, tree)] == [
        "emulation.config imports analysis.tables: emulation/ may import run_layout, spillway "
        f"({architecture.WHERE_PACKAGES})"]


def test_a_host_script_importing_a_package_of_the_repository_fails(pristine, tree):
    append(tree, "collectors/iostat/iostat_json.py", "from spillway.inventory import load\n")
    (problem,) = new_problems(pristine, tree)
    assert "collectors.iostat.iostat_json imports spillway.inventory: collectors/ may import none of the " \
        "repository's packages" in problem


def test_the_layout_importing_beyond_the_standard_library_fails(pristine, tree):
    append(tree, "run_layout/__init__.py", "import pandas\n")
    (problem,) = new_problems(pristine, tree)
    assert "run_layout imports pandas, which is not of the standard library" in problem


def test_an_analysis_import_a_layer_up_fails(pristine, tree):
    append(tree, "analysis/parsers/fio.py", "from ..metrics import device_backends\n")   # relative: resolved
    (problem,) = new_problems(pristine, tree)
    assert "analysis.parsers.fio (parsers) imports analysis.metrics (metrics), a layer above it" in problem


def test_an_import_for_type_checking_counts(pristine, tree):
    append(tree, "analysis/safeio.py", """\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from analysis.report_page import build_context
        """)
    problems = new_problems(pristine, tree)   # and the circle it closes: report imports safeio
    assert any("analysis.safeio (base) imports analysis.report_page (pages), a layer above it" in p for p in problems)


def test_an_import_inside_a_function_closing_a_circle_fails(pristine, tree):
    append(tree, "analysis/stages.py", """\
        def _later():
            from analysis import metrics
            return metrics
        """)
    assert new_problems(pristine, tree) == ["import circle: analysis.metrics -> analysis.stages -> analysis.metrics"]


def test_a_circle_across_packages_fails_with_its_path(pristine, tree):
    append(tree, "run_layout/__init__.py", """\
        def _later():
            from spillway import run_record
            return run_record
        """)
    problems = new_problems(pristine, tree)
    assert any(p.startswith("import circle: run_layout -> spillway.run_record -> run_layout") for p in problems)
    assert any("run_layout imports spillway.run_record: run_layout/ may import none" in p for p in problems)


def test_a_longer_circle_names_every_module_in_it(pristine, tree):
    append(tree, "spillway/run_record.py", "from spillway.bench import plan\n")
    append(tree, "spillway/workloads.py", "from spillway import run_record\n")
    (problem,) = new_problems(pristine, tree)
    assert problem.startswith("import circle: spillway.") and problem.count(" -> ") >= 3, problem
    assert "spillway.bench.plan" in problem and "spillway.run_record" in problem and "spillway.workloads" in problem


def test_raw_named_outside_the_parsers_and_the_tables_fails(pristine, tree):
    append(tree, "analysis/metrics.py", 'TRACES = "raw/{host}/blocktrace"\n')
    (problem,) = new_problems(pristine, tree)
    assert problem.startswith("analysis/metrics.py:") and "analysis.metrics names raw/ ('raw/{host}/blocktrace')" \
        in problem


def test_a_module_in_no_layer_fails_naming_where_to_list_it(pristine, tree):
    (tree / "analysis/collector_registry.py").write_text('"""Which collector writes what."""\n')
    assert new_problems(pristine, tree) == [
        "analysis/collector_registry.py: analysis.collector_registry is in no analysis layer: list "
        f"`collector_registry` in the layer it belongs to ({architecture.WHERE_LAYERS})"]


def test_a_split_module_stays_in_its_layer(pristine, tree):
    (tree / "analysis/models/split_model").mkdir()
    (tree / "analysis/models/split_model/formulas.py").write_text("from analysis import formatting\n")
    (tree / "analysis/findings/rules").mkdir(parents=True, exist_ok=True)
    (tree / "analysis/findings/rules/split_rules.py").write_text("from analysis.models.split_model import formulas\n")
    assert new_problems(pristine, tree) == []


def test_a_layer_entry_naming_no_module_fails(pristine, tree):
    (tree / "analysis/gate.py").unlink()
    (problem,) = new_problems(pristine, tree)
    assert problem.startswith("`gate` of the analysis layer metrics matches no module of analysis/")


def test_a_folder_of_python_in_no_row_fails(pristine, tree):
    (tree / "benchmarks").mkdir()
    (tree / "benchmarks/__init__.py").write_text("")
    assert new_problems(pristine, tree) == [
        f"benchmarks/ holds Python modules but is in no row of {architecture.WHERE_PACKAGES}: list it"]


def test_the_check_needs_its_section(tree):
    doc = tree / architecture.DOC
    doc.write_text(doc.read_text().replace("\n## Layers\n", "\n## Layering\n"))
    with pytest.raises(ValueError, match='has no section "## Layers"'):
        architecture.problems(tree)


@pytest.mark.parametrize("module, pattern, expected", [
    ("models", "models.*", True), ("models.iomodel.fit", "models.*", True), ("modelsx", "models.*", False),
    ("tables", "tables", True), ("tables.registry", "tables", False)])
def test_a_pattern_with_a_star_takes_the_package_and_all_under_it(module, pattern, expected):
    assert architecture.matches(module, pattern) is expected


def test_each_circle_is_reported_once_with_a_shortest_way_around():
    graph = {"a": {"b"}, "b": {"c", "a2"}, "c": {"a"}, "a2": {"b"}, "d": {"a"}, "e": {"f"}, "f": {"e"}, "g": set()}
    assert architecture.cycle_problems(graph) == [
        "import circle: a -> b -> c -> a (modules in it: a, a2, b, c)", "import circle: e -> f -> e"]
