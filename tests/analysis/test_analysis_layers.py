"""The analysis package on its layers (docs/architecture.md, "The analysis, layer by layer"): each module imports
only modules of its own layer or below, there is no import circle, and raw/ is named only where it is parsed."""
from __future__ import annotations

import ast
from pathlib import Path

ANALYSIS = Path(__file__).resolve().parents[2] / "analysis"

# Low to high. A module not listed fails the test: a new module must say where it belongs.
LAYERS = [
    ("base", ["safeio", "formatting"]),
    ("parsers", ["parsers.*"]),
    ("tables", ["tables"]),
    ("metrics", ["metrics", "access_patterns", "stages", "devices", "across_runs.*", "statistics", "gate"]),
    ("models", ["models", "models.iomodel", "models.bottleneck", "models.cost", "models.sensitivity"]),
    ("findings", ["findings"]),
    ("presentation", ["presentation.*"]),
    ("pages", ["report_page", "compare_page", "hibench", "notebooks", "predict", "__main__", "benchmarks.*"]),
]
# Where raw/ is named: the parsers, which alone open its files; the parse driver (tables), which walks it and hands
# each file to a parser; the run-directory layout (rundir), which lists its folders.
READS_RAW = ("parsers.", "tables")


def module_name(path: Path) -> str:
    parts = path.relative_to(ANALYSIS).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"


def layer_of(module: str) -> int:
    for rank, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if module == pattern or (pattern.endswith(".*") and (module + ".").startswith(pattern[:-1])) \
                    or (pattern.endswith(".*") and module == pattern[:-2]):
                return rank
    raise AssertionError(f"analysis/{module.replace('.', '/')}.py is in no layer of tests/analysis/test_layers.py")


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ANALYSIS.rglob("*.py")) if module_name(p) != "__init__"}


def imports(module: str, path: Path) -> set[str]:
    """The analysis modules `module` imports, wherever in the file (function-level imports count too)."""
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "analysis":
                target = node.module.partition(".")[2]
            else:
                continue
            names = [f"{target}.{a.name}".strip(".") for a in node.names]
            known = modules()
            found |= {n for n in names if n in known} or ({target} if target in known else set())
            found |= {target} if target in known else set()
        elif isinstance(node, ast.Import):
            found |= {a.name.partition(".")[2] for a in node.names if a.name.startswith("analysis.")}
    return {m for m in found if m and m != module and m in modules()}


def test_every_module_imports_only_its_layer_and_below():
    against = []
    for module, path in modules().items():
        for imported in sorted(imports(module, path)):
            if layer_of(imported) > layer_of(module):
                against.append(f"{module} ({LAYERS[layer_of(module)][0]}) imports {imported} "
                               f"({LAYERS[layer_of(imported)][0]})")
    assert against == []


def test_no_import_circle():
    graph = {module: imports(module, path) for module, path in modules().items()}
    state, circles = {}, []

    def visit(module, trail):
        state[module] = "open"
        for nxt in sorted(graph.get(module, ())):
            if state.get(nxt) == "open":
                circles.append(" -> ".join(trail[trail.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_raw_is_named_only_where_it_is_parsed():
    naming = []
    for module, path in modules().items():
        if module.startswith(READS_RAW):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    node.value == "raw" or node.value.startswith("raw/") or "/raw/" in node.value):
                naming.append(f"{module}:{node.lineno}: {node.value!r}")
    assert naming == []
