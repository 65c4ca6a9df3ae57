"""The project's layering rules, read from the source (no imports executed): no import circles, method packages use
only ``zerolab.api``, experiments import no other experiment, and every public name resolves."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("zerolab", "alphagateau", "distill", "contempt_search", "sai_go", "skill_compat", "experiments")
METHOD_PACKAGES = ("alphagateau", "distill", "contempt_search", "sai_go", "skill_compat")


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, pathlib.Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            modules[module_name(path)] = path
    return modules


def imported_modules(path: pathlib.Path, name: str, modules: dict[str, pathlib.Path]) -> set[str]:
    """Project modules that ``path`` imports anywhere in its body (module level or inside functions)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            # `from package import module` imports the module (and runs the package's __init__, which the surface
            # test below holds to re-exports); `from module import name` imports the module
            candidates = submodules if all(name in modules for name in submodules) else submodules + [base]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in modules:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                found.add(candidate)
    return found


@pytest.fixture(scope="module")
def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported_modules(path, name, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]], nodes: set[str]) -> list[str] | None:
    """One import circle among ``nodes`` (a list of modules ending where it starts), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in nodes:
                continue
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(nodes):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_core_has_no_import_circle(import_graph):
    # zerolab.api only re-exports (lazily, at attribute access); it is the top of the core, imported by no core module.
    core = {name for name in import_graph if name.startswith("zerolab") and name != "zerolab.api"}
    assert find_cycle(import_graph, core) is None, f"import circle: {' -> '.join(find_cycle(import_graph, core))}"
    importers_of_api = sorted(name for name in core if "zerolab.api" in import_graph[name])
    assert importers_of_api == [], f"core modules must not import zerolab.api: {importers_of_api}"


def test_no_import_circle_anywhere(import_graph):
    nodes = set(import_graph)
    cycle = find_cycle(import_graph, nodes)
    assert cycle is None, f"import circle: {' -> '.join(cycle)}"


def test_method_packages_use_only_the_declared_surface(import_graph):
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in import_graph.items()
        if name.split(".")[0] in METHOD_PACKAGES
        for target in targets
        if target.startswith("zerolab") and target != "zerolab.api"
    )
    assert offenders == []


def test_experiments_import_no_other_experiment(import_graph):
    def is_experiment(name: str) -> bool:
        parts = name.split(".")
        return parts[0] == "experiments" and len(parts) == 2 and parts[1] != "__main__"

    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in import_graph.items()
        if is_experiment(name)
        for target in targets
        if is_experiment(target)
    )
    assert offenders == []


def test_the_core_imports_no_method_package(import_graph):
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in import_graph.items()
        if name.startswith("zerolab")
        for target in targets
        if target.split(".")[0] in METHOD_PACKAGES + ("experiments",)
    )
    assert offenders == []


def test_every_public_name_resolves_to_its_defining_module():
    import importlib

    from zerolab import api

    for name, module_name in api.PUBLIC_NAMES.items():
        module = importlib.import_module(module_name)
        value = getattr(api, name)
        expected = module if module_name.rsplit(".", 1)[-1] == name else getattr(module, name)
        assert value is expected, name
    with pytest.raises(AttributeError, match="no public name 'run_everything'"):
        getattr(api, "run_everything")


def test_a_cycle_is_found_when_there_is_one():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph, set(graph)) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}, {"a", "b"}) is None


# The core's layers, lowest first: a module imports only its own layer and those below.  Top-level modules
# (config, devices, progress, logs) are the foundation under every layer; zerolab.api and zerolab/__init__ re-export
# the public surface, above them all.
CORE_LAYERS = ("games", "networks", "search", "selfplay", "training", "engines", "play", "evaluation", "frontends")
SURFACE = ("zerolab", "zerolab.api", "zerolab.__main__")


def core_layer(name: str) -> int:
    """0 for the foundation modules, 1 + the index in CORE_LAYERS for a layer's modules."""
    parts = name.split(".")
    if name in SURFACE:
        return len(CORE_LAYERS) + 1
    if len(parts) > 2 or parts[1] in CORE_LAYERS:
        if parts[1] not in CORE_LAYERS:
            raise AssertionError(f"{name}: a core sub-package that is not a layer; add it to CORE_LAYERS")
        return 1 + CORE_LAYERS.index(parts[1])
    return 0


def test_the_core_imports_only_layers_below(import_graph):
    offenders = sorted(
        f"{name} ({core_layer(name)}) imports {target} ({core_layer(target)})"
        for name, targets in import_graph.items()
        if name.startswith("zerolab")
        for target in targets
        if target.startswith("zerolab") and core_layer(target) > core_layer(name)
    )
    assert offenders == []


def test_every_core_module_belongs_to_a_layer(import_graph):
    flat = sorted(name for name in import_graph if name.startswith("zerolab.") and name.count(".") == 1
                  and name not in SURFACE and name.split(".")[1] not in CORE_LAYERS)
    assert flat == ["zerolab.config", "zerolab.devices", "zerolab.logs", "zerolab.progress"]
