"""The repository's layering check: every Python module against the rules of docs/architecture.md, section "Layers".

The rules are read from that section's two tables, so the document and the check cannot disagree: a module added to
the code without a place in the tables fails, and the failure names the table to list it in. `problems(root)` returns
one line per violation (an empty list: none); tests/test_architecture.py runs it on the repository and on trees with
a violation planted. `python tests/architecture.py` prints the problems of this checkout.

What counts as an import: every `import` and `from ... import` statement of a module, wherever it stands (inside a
function, under `if TYPE_CHECKING:`, in a try block), relative ones resolved against the module's package.
"""
from __future__ import annotations

import ast
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = Path("docs/architecture.md")
SECTION = "## Layers"
WHERE_PACKAGES = f'{DOC}, section "Layers", table of the folders'
WHERE_LAYERS = f'{DOC}, section "Layers", table of the analysis layers'
NOT_CHECKED = {"tests", "docs", "inventories"}   # tests import every package; the others hold no Python


@dataclass(frozen=True)
class Folder:
    name: str                  # a top folder of the repository: `spillway`, `collectors`, ...
    may_import: frozenset      # the repository's packages its modules may import
    standard_library_only: bool


@dataclass(frozen=True)
class Layer:
    name: str
    members: tuple             # patterns of module names under `analysis.`: `tables`, `parsers.*`
    naming_raw: tuple          # the members that may name raw/ (they alone read it)


@dataclass(frozen=True)
class Rules:
    folders: dict              # name -> Folder
    layers: tuple              # Layer, low to high


@dataclass(frozen=True)
class Import:
    target: str                # the module imported (a dotted name of the repository), or a top-level name outside it
    line: int


def problems(root: Path = REPO) -> list[str]:
    rules = read_rules(root / DOC)
    modules = python_modules(root, rules)
    sources = {name: (root / path).read_text() for name, path in modules.items()}
    graph = {name: imports_of(name, path, _parse(sources[name]), modules) for name, path in modules.items()}
    found = []
    found += folder_problems(root, rules)
    found += direction_problems(root, rules, modules, graph)
    found += layer_problems(rules, modules, graph)
    found += raw_problems(rules, modules, sources)
    found += cycle_problems({name: {i.target for i in imported if i.target in modules}
                             for name, imported in graph.items()})
    return found


# --- the rules, from the document -----------------------------------------------------------------------------------

def read_rules(doc: Path) -> Rules:
    text = doc.read_text()
    start = text.find(f"\n{SECTION}\n")
    if start < 0:
        raise ValueError(f'{doc} has no section "{SECTION}": the layering check reads its rules there')
    end = text.find("\n## ", start + 1)
    tables = _tables(text[start:end if end > 0 else len(text)])
    folders_table = _table_headed(tables, "folder", doc)
    layers_table = _table_headed(tables, "layer", doc)
    folders = {}
    for folder, may_import, outside in folders_table:
        name = _names(folder)[0].strip("/")
        folders[name] = Folder(name, frozenset(_names(may_import)), "standard library" in outside)
    for folder in folders.values():
        if folder.may_import - set(folders):
            raise ValueError(f"{doc}, section \"{SECTION}\": {folder.name}/ may import "
                             f"{', '.join(sorted(folder.may_import - set(folders)))}, which no row of the table is")
    layers = tuple(Layer(row[0].strip("` "), tuple(_names(row[1])), tuple(_names(row[2]))) for row in layers_table)
    return Rules(folders, layers)


def _tables(section: str) -> list[list[list[str]]]:
    tables, rows = [], []
    for line in section.splitlines() + [""]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            tables.append([r for r in rows if not set("".join(r)) <= set("-: ")])
            rows = []
    return tables


def _table_headed(tables, first_header: str, doc: Path):
    for table in tables:
        if table and table[0][0].lower() == first_header:
            return table[1:]
    raise ValueError(f'{doc}, section "{SECTION}": no table whose first column is "{first_header}"')


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def matches(module: str, pattern: str) -> bool:
    """`models.*` is the package models and everything under it, so that splitting a module into a package, or a
    package into more modules, keeps them in their layer."""
    if pattern.endswith(".*"):
        return module == pattern[:-2] or module.startswith(pattern[:-1])
    return module == pattern


# --- the modules and their imports ----------------------------------------------------------------------------------

def python_modules(root: Path, rules: Rules) -> dict[str, Path]:
    """Dotted name -> path (from root) of every Python module of the checked folders (a host script's name is its
    path with dots: it is no package, nothing imports it by that name)."""
    modules = {}
    for folder in sorted(rules.folders):
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path.relative_to(root)
    return modules


def imports_of(module: str, path: Path, tree: ast.Module, modules: dict[str, Path]) -> list[Import]:
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            found += [Import(_known_prefix(alias.name, modules), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level > len(package):   # beyond the top package: Python refuses it, nothing is imported
                    continue
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module
            for alias in node.names:
                named = f"{base}.{alias.name}"
                found.append(Import(named if named in modules else _known_prefix(base, modules), node.lineno))
    return [i for i in found if i.target != module]


@functools.lru_cache(maxsize=4096)
def _parse(source: str) -> ast.Module:
    """Keyed by the text: the tests check copies of the repository that differ in a file or two."""
    return ast.parse(source)


def _statements(body):
    """Every statement, however deeply nested in functions, classes, conditions and try blocks (an import is a
    statement: the expressions, most of a module's nodes, need no visit)."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                yield from _statements(children)


def _known_prefix(name: str, modules) -> str:
    """The module of the repository that `import name` depends on: the longest prefix that is one (`a.b.c` where
    only the package `a.b` exists: `a.b`); outside the repository, the top-level name."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return parts[0]


def top(module: str) -> str:
    return module.split(".")[0]


# --- the rules, checked ---------------------------------------------------------------------------------------------

def folder_problems(root: Path, rules: Rules) -> list[str]:
    found = [f"{name}/ is in {WHERE_PACKAGES} but is no folder of the repository: remove its row"
             for name in sorted(rules.folders) if not (root / name).is_dir()]
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if folder.name not in rules.folders and folder.name not in NOT_CHECKED and any(folder.rglob("*.py")):
            found.append(f"{folder.name}/ holds Python modules but is in no row of {WHERE_PACKAGES}: list it")
    return found


def direction_problems(root: Path, rules: Rules, modules, graph) -> list[str]:
    packages = {name for name in rules.folders if (root / name / "__init__.py").is_file()}   # the rest: host scripts
    found = []
    for module, imported in graph.items():
        folder = rules.folders[top(module)]
        for i in imported:
            if i.target in modules and top(i.target) in packages:
                if top(i.target) != folder.name and top(i.target) not in folder.may_import:
                    found.append(f"{_place(modules[module], i.line)}: {module} imports {i.target}: {folder.name}/ "
                                 f"may import {_listing(folder.may_import)} ({WHERE_PACKAGES})")
            elif folder.standard_library_only and i.target not in sys.stdlib_module_names | {"__future__"} \
                    and i.target not in modules:
                found.append(f"{_place(modules[module], i.line)}: {module} imports {i.target}, which is not of the "
                             f"standard library: {folder.name}/ uses the standard library only ({WHERE_PACKAGES})")
    return found


def layer_problems(rules: Rules, modules, graph) -> list[str]:
    found, rank = [], {}
    for module in (m for m in modules if top(m) == "analysis"):
        name = module.partition(".")[2] or "__init__"
        ranks = [n for n, layer in enumerate(rules.layers) if any(matches(name, p) for p in layer.members)]
        if not ranks:
            found.append(f"{modules[module]}: {module} is in no analysis layer: list `{name}` in the "
                         f"layer it belongs to ({WHERE_LAYERS})")
        elif len(ranks) > 1:
            found.append(f"{module} is in the layers {', '.join(rules.layers[n].name for n in ranks)}: list it in "
                         f"one ({WHERE_LAYERS})")
        else:
            rank[module] = ranks[0]
    for layer in rules.layers:
        for pattern in layer.members:
            if not any(matches(m.partition(".")[2] or "__init__", pattern) for m in modules if top(m) == "analysis"):
                found.append(f"`{pattern}` of the analysis layer {layer.name} matches no module of analysis/: "
                             f"remove it or name the module that replaced it ({WHERE_LAYERS})")
    for module, imported in graph.items():
        for i in imported:
            if module in rank and i.target in rank and rank[i.target] > rank[module]:
                found.append(f"{_place(modules[module], i.line)}: {module} ({rules.layers[rank[module]].name}) "
                             f"imports {i.target} ({rules.layers[rank[i.target]].name}), a layer above it "
                             f"({WHERE_LAYERS})")
    return found


def raw_problems(rules: Rules, modules, sources) -> list[str]:
    """Only the modules that read raw/ name it; the rest take tables."""
    naming_raw = [p for layer in rules.layers for p in layer.naming_raw]
    found = []
    for module, path in modules.items():
        name = module.partition(".")[2] or "__init__"
        if top(module) != "analysis" or any(matches(name, p) for p in naming_raw):
            continue
        for node in ast.walk(_parse(sources[module])) if "raw" in sources[module] else ():
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    node.value == "raw" or node.value.startswith("raw/") or "/raw/" in node.value):
                found.append(f"{_place(path, node.lineno)}: {module} names raw/ ({node.value!r}): only "
                             f"{_listing(naming_raw)} read it, the rest take tables ({WHERE_LAYERS})")
    return found


def cycle_problems(graph: dict[str, set]) -> list[str]:
    """One line per import circle (a strongly connected set of modules), with a shortest path around it."""
    found = []
    for circle in _strongly_connected(graph):
        if len(circle) == 1:   # a module alone (imports_of drops a module's import of itself)
            continue
        start = min(circle)
        found.append(f"import circle: {' -> '.join(_shortest_way_back(graph, start, circle))}"
                     + (f" (modules in it: {', '.join(sorted(circle))})" if len(circle) > 2 else ""))
    return sorted(found)


def _strongly_connected(graph):
    """Tarjan's algorithm, iterative (a deep import chain must not hit Python's recursion limit)."""
    order, low, stack, on_stack, circles = {}, {}, [], set(), []

    def enter(node):
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        return node, iter(sorted(graph[node]))

    for root in sorted(graph):
        if root in order:
            continue
        work = [enter(root)]
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in order:
                    work.append(enter(successor))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], order[successor])
            else:   # every successor seen: node is done
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:
                    circle = {stack.pop()}
                    while node not in circle:
                        circle.add(stack.pop())
                    on_stack.difference_update(circle)
                    circles.append(circle)
    return circles


def _shortest_way_back(graph, start, circle) -> list[str]:
    trails, seen = [[start]], {start}
    while trails:
        trail = trails.pop(0)
        for nxt in sorted(graph[trail[-1]] & circle):
            if nxt == start:
                return trail + [start]
            if nxt not in seen:
                seen.add(nxt)
                trails.append(trail + [nxt])
    raise AssertionError(f"{start} is in a circle with no way back")


def _place(path: Path, line: int) -> str:
    return f"{path}:{line}"


def _listing(names) -> str:
    return ", ".join(sorted(names)) or "none of the repository's packages"


if __name__ == "__main__":
    found = problems()
    print("\n".join(found) or "no problems")
    sys.exit(1 if found else 0)
