"""The layout's rules (docs/architecture.md): no import cycle between the package's modules, counting imports inside
functions; no import of the project's own modules inside a function outside the CLI, but for the few named with
their reasons; no module longer than MAX_LINES lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parent.parent
# Where each installed package's files live (pyproject.toml's package-dir).
PACKAGE_DIRS = {"share_ner": ROOT / "share_ner", "share_ner.features": ROOT / "features",
                "share_ner.lexicons": ROOT / "lexicons", "share_ner.eval": ROOT / "eval"}
# Function-level imports of the project's own modules outside cli.py and commands/, each with its reason in the
# code: (importing module, imported module).
ALLOWED_LAZY: set[tuple[str, str]] = {
    # PySpark's daemon for share-ner: the model's modules imported only when it has a model to load before forking
    ("share_ner.spark.daemon", "share_ner.batch.annotate"), ("share_ner.spark.daemon", "share_ner.batch.processes"),
    # the daemon imports its package first: the package's names come from its dataframe module when asked for
    ("share_ner.spark", "share_ner.spark.dataframe")}
# A module longer than this does more than one job: split it by job (docs/architecture.md).
MAX_LINES = 700
# Longer modules allowed for now, each with its reason (paths relative to the repository).
LONG_MODULES: dict[str, str] = {}


def _modules() -> dict[str, Path]:
    out = {}
    for prefix, directory in PACKAGE_DIRS.items():
        for path in directory.rglob("*.py"):
            parts = list(path.relative_to(directory).with_suffix("").parts)
            if parts[0] in ("features", "lexicons", "eval") and prefix == "share_ner":
                continue  # not there; listed for completeness of the mapping only
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([prefix, *parts])] = path
    return out


def _imports(modules: dict[str, Path]) -> dict[str, list[tuple[str, bool]]]:
    """Each module's imports of project modules: (imported module, inside a function)."""

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    out: dict[str, list[tuple[str, bool]]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: list[tuple[str, bool]] = []

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue  # for type checkers only: never run
                inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.Import):
                    targets = [a.name for a in child.names]
                elif isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        parts = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                        base = ".".join([*parts, base] if base else parts)
                    targets = [f"{base}.{a.name}" for a in child.names] + [base]
                else:
                    visit(child, inner)
                    continue
                for target in {resolve(t) for t in targets if t.startswith("share_ner")} - {"", name}:
                    found.append((target, in_function))
        visit(ast.parse(path.read_text(encoding="utf-8")), False)
        out[name] = found
    return out


def _graph(imports: dict[str, list[tuple[str, bool]]]) -> dict[str, set[str]]:
    """Who imports whom, at module level or inside a function alike."""
    return {m: {t for t, _ in found} for m, found in imports.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = walk(nxt)
                if found:
                    return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = walk(node)
            if found:
                return found
    return None


def test_no_import_cycle_between_modules() -> None:
    graph = _graph(_imports(_modules()))
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_no_function_level_import_of_the_project_outside_the_cli() -> None:
    imports = _imports(_modules())
    lazy = {(m, t) for m, found in imports.items() for t, inside in found
            if inside and m != "share_ner.cli" and not m.startswith("share_ner.commands")}
    assert lazy == ALLOWED_LAZY


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_an_import_inside_a_function_closes_a_cycle(tmp_path) -> None:
    (tmp_path / "a.py").write_text("from share_ner.b import f\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("def f():\n    from share_ner.a import g\n    return g\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import share_ner.a\n",
                                   encoding="utf-8")
    modules = {"share_ner.a": tmp_path / "a.py", "share_ner.b": tmp_path / "b.py", "share_ner.c": tmp_path / "c.py"}
    imports = _imports(modules)
    assert imports == {"share_ner.a": [("share_ner.b", False)], "share_ner.b": [("share_ner.a", True)],
                       "share_ner.c": []}  # an import for type checkers only never runs
    assert _cycle(_graph(imports)) == ["share_ner.a", "share_ner.b", "share_ner.a"]


def test_no_module_is_longer_than_the_limit() -> None:
    lengths = {path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
               for path in _modules().values()}
    long = {path: n for path, n in lengths.items() if n > MAX_LINES}
    assert set(long) <= set(LONG_MODULES), f"over {MAX_LINES} lines: {long}"
    assert set(LONG_MODULES) <= set(long), "no longer long: drop from LONG_MODULES"
