"""spillway/ (the harness) imports neither the analysis nor the emulation, except run_layout: the run directory's
layout, which the harness writes and the analysis reads (one definition, standard library only); experiments/ is
where the three meet."""
import ast

from spillway import REPO


SHARED = set()


def imported_modules(path):
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_the_harness_imports_neither_the_analysis_nor_the_emulation():
    found = {str(p.relative_to(REPO)): sorted(m for m in imported_modules(p) - SHARED
                                              if m.split(".")[0] in {"analysis", "emulation", "experiments"})
             for p in (REPO / "spillway").rglob("*.py")}
    assert {path: names for path, names in found.items() if names} == {}


def test_the_shared_layout_module_needs_nothing_beyond_the_standard_library():
    """So that the harness does not start pandas or pyarrow by importing it."""
    import subprocess
    import sys
    probe = "import sys, spillway.bench.orchestrator; print(sorted(m for m in ('pandas', 'pyarrow', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
