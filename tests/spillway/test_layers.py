"""spillway/ (the harness) imports neither analysis nor emulation; experiments/ is where the three meet."""
import ast

from spillway import REPO


def imported_packages(path):
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_harness_imports_neither_the_analysis_nor_the_emulation():
    found = {str(p.relative_to(REPO)): sorted(imported_packages(p) & {"analysis", "emulation", "experiments"})
             for p in (REPO / "spillway").rglob("*.py")}
    assert {path: names for path, names in found.items() if names} == {}
