"""The project's layering rules, read from the source: no import circles, the core's layers import only those below
them, method packages and launchers (``experiments/``, ``scripts/``) import only the declared surface (``zerolab`` and
the layer packages' ``__all__``), experiments import no other experiment, method packages import no experiment and
load no config by name.  Then the surface itself: each package's names, from its ``if TYPE_CHECKING:`` block and
declared in a literal ``__all__``, resolving to their definitions; ``zerolab``'s names the vocabulary of methods and the foundation; the JAX-free
names importing no JAX."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

from zerolab import lazy

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("zerolab", "alphagateau", "distill", "contempt_search", "sai_go", "skill_compat", "experiments")
METHOD_PACKAGES = ("alphagateau", "distill", "contempt_search", "sai_go", "skill_compat")
#: a method package of the tests' own (every hook through a training run); it follows the method packages' rule
TEST_METHOD_PACKAGE = "tests/zerolab/method_package"
#: the launchers: the experiments' runners and configs, and the scripts; they follow the method packages' rule too
LAUNCHER_DIRECTORIES = ("experiments", "scripts")
CORE_LAYERS = ("games", "networks", "search", "selfplay", "training", "engines", "play", "evaluation", "frontends")
LAYER_PACKAGES = tuple(f"zerolab.{layer}" for layer in CORE_LAYERS)


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, pathlib.Path]:
    modules = {}
    for package in PACKAGES + (TEST_METHOD_PACKAGE,):
        for path in sorted((ROOT / package).rglob("*.py")):
            modules[module_name(path)] = path
    return modules


def is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def source_of(module: str, name: str, modules: dict[str, pathlib.Path]) -> str:
    """Where ``name`` imported from ``module`` is defined: the submodule of that name if there is one, else
    ``module``."""
    return f"{module}.{name}" if f"{module}.{name}" in modules else module


def surface_sources(path: pathlib.Path, modules: dict[str, pathlib.Path]) -> dict[str, str]:
    """name -> the module that defines it, for the names a package's ``if TYPE_CHECKING:`` block imports (the names it
    resolves lazily); empty for a module without one."""
    sources = {}
    for block in ast.parse(path.read_text(), str(path)).body:
        if is_type_checking(block):
            for node in block.body:
                assert isinstance(node, ast.ImportFrom) and not node.level, f"{path}: only `from module import name`"
                for alias in node.names:
                    assert alias.asname is None, f"{path}: {alias.name} renamed in the TYPE_CHECKING block"
                    sources[alias.name] = source_of(node.module, alias.name, modules)
    return sources


def resolve(module: str, name: str, surfaces: dict[str, dict[str, str]]) -> str:
    """The module that defines ``name`` when it is imported from ``module``: through a surface package's lazy list (and
    the layer package's list under it, for a name of ``zerolab``) to the module itself."""
    while name in surfaces.get(module, {}):
        module = surfaces[module][name]
    return module


def imported_modules(path: pathlib.Path, name: str, modules: dict[str, pathlib.Path],
                     surfaces: dict[str, dict[str, str]]) -> set[str]:
    """Project modules that ``path`` imports anywhere in its body (module level or inside functions).  A name imported
    from a surface package (``from zerolab.games import GameRecord``) is an import of the module that defines it."""
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
            if base in surfaces and base != name:
                candidates = [resolve(base, alias.name, surfaces) if alias.name in surfaces[base] else submodule
                              for alias, submodule in zip(node.names, submodules)]
                # a name the package defines itself (make_game) or a submodule
                candidates = [c if c in modules else base for c in candidates]
            else:
                # `from package import module` imports the module; `from module import name` imports the module
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
def surfaces() -> dict[str, dict[str, str]]:
    """Each surface package (``zerolab``, the layer packages, ``zerolab.networks.lc0``) -> its lazily resolved names."""
    modules = project_modules()
    found = {name: surface_sources(path, modules) for name, path in modules.items()
             if name.startswith("zerolab") and path.name == "__init__.py"}
    return {name: sources for name, sources in found.items() if sources}


@pytest.fixture(scope="module")
def import_graph(surfaces) -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported_modules(path, name, modules, surfaces) for name, path in modules.items()}


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
    core = {name for name in import_graph if name.startswith("zerolab")}
    assert find_cycle(import_graph, core) is None, f"import circle: {' -> '.join(find_cycle(import_graph, core))}"


def test_no_import_circle_anywhere(import_graph):
    nodes = set(import_graph)
    cycle = find_cycle(import_graph, nodes)
    assert cycle is None, f"import circle: {' -> '.join(cycle)}"


def test_experiments_import_no_other_experiment(import_graph):
    def is_experiment(name: str) -> bool:
        parts = name.split(".")
        return parts[0] == "experiments" and len(parts) == 2 and parts[1] not in ("__main__", "configs", "common")

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


def test_method_packages_import_no_experiment(import_graph):
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in import_graph.items()
        if name.split(".")[0] in METHOD_PACKAGES
        for target in targets
        if target.split(".")[0] == "experiments"
    )
    assert offenders == [], "runners live in experiments/; method packages hold the method, experiments use it"


def test_a_cycle_is_found_when_there_is_one():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph, set(graph)) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}, {"a", "b"}) is None


# The core's layers, lowest first: a module imports only its own layer and those below.  Top-level modules
# (config, devices, progress, logs, lazy) are the foundation under every layer; zerolab/__init__ re-exports the public
# surface and zerolab/__main__ runs the command line, above them all.
SURFACE = ("zerolab", "zerolab.__main__")


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
    assert flat == ["zerolab.config", "zerolab.devices", "zerolab.lazy", "zerolab.logs", "zerolab.progress"]


# --- the declared surface ---------------------------------------------------------------------------------------------
# Method packages import from two places only: `zerolab` (its __all__: the concepts methods are written with, and the
# foundation's names) and a layer package (its __all__: the rest of that layer's public names), never from a module inside a layer or from a
# foundation module (the foundation's names they use are in `zerolab`).  zerolab/README.md ("Layers") has the rule.


def is_method_module(name: str) -> bool:
    return name.split(".")[0] in METHOD_PACKAGES or name.startswith(TEST_METHOD_PACKAGE.replace("/", "."))


def core_imports(path: pathlib.Path) -> list[tuple[int, str, str | None]]:
    """``(line, module, name)`` for each import of the core in ``path``, anywhere in it: ``from zerolab.x import name``
    gives the module and the name, ``import zerolab.x`` the module and None."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "zerolab":
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names if alias.name.split(".")[0] == "zerolab"]
    return found


def declared(package: str) -> list[str]:
    """A surface package's ``__all__`` (a literal that :func:`zerolab.lazy.lazy_surface` checks against the package's
    ``TYPE_CHECKING`` block and definitions)."""
    return list(importlib.import_module(package).__all__)


@pytest.fixture(scope="module")
def method_imports() -> dict[str, list[tuple[int, str, str | None]]]:
    return {name: core_imports(path) for name, path in project_modules().items() if is_method_module(name)}


def surface_offenders(method_imports) -> list[str]:
    top = set(declared("zerolab"))
    layers = {package: set(declared(package)) for package in LAYER_PACKAGES}
    offenders = []
    for module, imports in method_imports.items():
        for line, source, name in imports:
            if (source == "zerolab" and name in top) or (source in layers and name in layers[source] - top):
                continue
            if source in layers and name in top:
                reason = f"{name} is in zerolab.__all__: import it from zerolab"
            elif name is not None and source in ("zerolab",) + LAYER_PACKAGES:
                reason = f"{name} is not in {source}.__all__"
            else:
                reason = "import names from zerolab or a layer package, never from a module inside one"
            offenders.append(f"{module}:{line} imports {source}{f' {name}' if name else ''} ({reason})")
    return offenders


def test_method_packages_use_only_the_declared_surface(method_imports):
    assert len(method_imports) > 50  # every method module was read, the test method package's too
    assert surface_offenders(method_imports) == []


@pytest.fixture(scope="module")
def launcher_imports() -> dict[str, list[tuple[int, str, str | None]]]:
    """The core imports of every file of ``experiments/`` (runners, ``common/``, configs, ``__main__``) and
    ``scripts/``, by path."""
    return {str(path.relative_to(ROOT)): core_imports(path)
            for directory in LAUNCHER_DIRECTORIES for path in sorted((ROOT / directory).rglob("*.py"))}


def test_launchers_use_only_the_declared_surface(launcher_imports):
    assert len(launcher_imports) > 40  # every launcher, config and script was read
    assert {path.split("/")[0] for path in launcher_imports} == set(LAUNCHER_DIRECTORIES)
    assert surface_offenders(launcher_imports) == []


def test_the_surface_rule_fails_a_launcher_that_imports_a_module_inside_a_layer(launcher_imports):
    mutated = {**launcher_imports, "experiments/quickstart.py": [(1, "zerolab.evaluation.checkpoints", "rated_steps"),
                                                                      (2, "zerolab.training", "train"),
                                                                      (3, "zerolab", "config"),
                                                                      (4, "zerolab.evaluation", "rated_steps")]}
    assert surface_offenders(mutated) == [
        "experiments/quickstart.py:1 imports zerolab.evaluation.checkpoints rated_steps (import names from zerolab or "
        "a layer package, never from a module inside one)",
        "experiments/quickstart.py:2 imports zerolab.training train (train is in zerolab.__all__: import it from "
        "zerolab)",
        "experiments/quickstart.py:3 imports zerolab config (config is not in zerolab.__all__)",
    ]


def test_no_method_loads_a_config_by_name(method_imports):
    """``load_config(NAME)`` (``experiments.configs``) imports ``experiments/configs/NAME.py``: a method module that
    called it would depend on an experiment's config through a string no import check sees (importing
    ``experiments.configs`` is refused above; the name is refused from any source).  Launchers load configs and pass
    them in."""
    offenders = sorted(f"{module}:{line}" for module, imports in method_imports.items()
                       for line, source, name in imports if name == "load_config")
    assert offenders == []


def test_the_surface_rule_fails_a_method_that_imports_a_module_inside_a_layer(method_imports):
    inside = "import names from zerolab or a layer package, never from a module inside one"
    mutated = {**method_imports, "contempt_search.rules": [(1, "zerolab.search.config", "SearchRules"),
                                                           (2, "zerolab.search", "SearchRules"),
                                                           (3, "zerolab.selfplay", "value_targets"),
                                                           (4, "zerolab.devices", "make_mesh"),
                                                           (5, "zerolab.search", None),
                                                           (6, "zerolab.selfplay", "Lanes"),
                                                           (7, "zerolab", "make_game")]}
    assert surface_offenders(mutated) == [
        f"contempt_search.rules:1 imports zerolab.search.config SearchRules ({inside})",
        "contempt_search.rules:2 imports zerolab.search SearchRules (SearchRules is in zerolab.__all__: import it "
        "from zerolab)",
        "contempt_search.rules:3 imports zerolab.selfplay value_targets (value_targets is not in "
        "zerolab.selfplay.__all__)",
        f"contempt_search.rules:4 imports zerolab.devices make_mesh ({inside})",
        f"contempt_search.rules:5 imports zerolab.search ({inside})",
    ]


def test_every_name_of_zerolab_is_a_methods_concept_or_the_foundations(method_imports, launcher_imports):
    """``zerolab`` is the vocabulary a method is written in: each of its names is one a method package imports from it,
    or a foundation name (configs, devices, logs, progress: no layer package above them) a launcher imports; the rest
    of a layer's public names come from the layer package.  Each name comes from its one home, the surface of the layer
    that defines it (or its foundation module), which declares it too."""
    used_by_methods = {name for imports in method_imports.values() for _, source, name in imports if source == "zerolab"}
    used_by_launchers = {name for imports in launcher_imports.values()
                         for _, source, name in imports if source == "zerolab"}
    sources = lazy.surface_sources(ROOT / "zerolab" / "__init__.py", "zerolab")
    names = declared("zerolab")
    assert names == sorted(sources) and len(set(names)) == len(names)
    foundation = {name for name, source in sources.items() if source.count(".") == 1 and source not in LAYER_PACKAGES}
    assert sorted(set(names) - used_by_methods - (foundation & used_by_launchers)) == []
    for name, source in sources.items():
        assert name in declared(source) if source in LAYER_PACKAGES else name in foundation, (name, source)


def test_each_surface_package_writes_its_names_once_in_its_type_checking_block(surfaces):
    """The names a surface resolves lazily are those its ``if TYPE_CHECKING:`` block imports (what type checkers see),
    read by :func:`zerolab.lazy.surface_sources` as by this test; its ``__all__`` is them and the functions and classes
    it defines itself."""
    assert set(LAYER_PACKAGES) | {"zerolab"} <= set(surfaces)
    modules = project_modules()
    for package, sources in surfaces.items():
        path = ROOT / package.replace(".", "/") / "__init__.py"
        read = lazy.surface_sources(path, package)
        assert {name: source_of(module, name, modules) for name, module in read.items()} == sources, package
        defined = {node.name for node in ast.parse(path.read_text()).body
                   if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")}
        assert declared(package) == sorted(set(sources) | defined), package


def test_a_surface_whose_all_differs_from_its_type_checking_block_is_refused(tmp_path, monkeypatch):
    package = tmp_path / "drifting_surface"
    package.mkdir()
    body = ("from typing import TYPE_CHECKING\nfrom zerolab.lazy import lazy_surface\nif TYPE_CHECKING:\n"
            "    from zerolab.games import make_game, validate_fen\n__all__ = {names}\n"
            "__getattr__, __dir__ = lazy_surface(__name__)\n\n\ndef helper():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    (package / "__init__.py").write_text(body.format(names='["helper", "make_game", "validate_fen"]'))
    assert importlib.import_module("drifting_surface").make_game is importlib.import_module("zerolab").make_game
    del sys.modules["drifting_surface"]
    (package / "__init__.py").write_text(body.format(names='["make_game", "train"]'))
    with pytest.raises(ImportError, match=r"missing \['helper', 'validate_fen'\], not public \['train'\]"):
        importlib.import_module("drifting_surface")


def test_a_surface_refuses_an_import_it_cannot_resolve(tmp_path):
    path = tmp_path / "__init__.py"
    path.write_text("if TYPE_CHECKING:\n    from zerolab.games import make_game as build\n")
    with pytest.raises(ValueError, match="build: a surface name keeps its own name"):
        lazy.surface_sources(path, "package")
    path.write_text("if TYPE_CHECKING:\n    import zerolab.games\n")
    with pytest.raises(ValueError, match="__init__.py:2: a surface lists its names as 'from module import name'"):
        lazy.surface_sources(path, "package")


def test_every_public_name_resolves_to_its_definition(surfaces):
    for package, sources in surfaces.items():
        module = importlib.import_module(package)
        for name, source in sources.items():
            defining = importlib.import_module(source)
            expected = defining if source.rpartition(".")[2] == name else getattr(defining, name)
            assert getattr(module, name) is expected, f"{package}.{name}"
            assert name in dir(module)
    import zerolab

    with pytest.raises(AttributeError, match="has no attribute 'run_everything'"):
        getattr(zerolab, "run_everything")
    assert zerolab.make_game is importlib.import_module("zerolab.games").make_game


def test_no_public_name_is_shadowed_by_a_submodule(surfaces):
    """Importing ``package.x`` sets the package's attribute ``x`` to that module, so a public name ``x`` defined
    elsewhere (a function) would resolve to the module once anything imported it."""
    for package, sources in surfaces.items():
        directory = ROOT / package.replace(".", "/")
        submodules = {path.stem for path in directory.glob("*.py")} | {path.name for path in directory.iterdir()
                                                                        if (path / "__init__.py").exists()}
        shadowed = sorted(name for name, source in sources.items()
                          if name in submodules and source != f"{package}.{name}")
        assert shadowed == [], f"{package}: {shadowed} are also submodules of the package"


def test_the_core_imports_no_name_from_zerolab_itself(surfaces):
    offenders = sorted(
        f"{name}:{line} imports {imported} from zerolab"
        for name, path in project_modules().items()
        if name.startswith("zerolab.")
        for line, source, imported in core_imports(path)
        if source == "zerolab" and imported in surfaces["zerolab"]
    )
    assert offenders == [], "the core imports from its own layers; zerolab's surface sits above them all"


#: names whose import pulls in neither JAX nor pgx: annotation workers, UCI engines and the command line stay fast
JAX_FREE = {
    "zerolab": ("EngineError", "GameBoards", "UCIEngine", "UCIOption", "configure_logging", "find_engine", "from_json",
                "progress_bar", "to_json", "validate_fen"),
    "experiments.configs": ("load_config",),
    "zerolab.games": ("START_FENS", "InvalidPositionError"),
    "zerolab.frontends": ("MoveChoice", "SearchBudget", "UCIServer", "main_loop"),
}


def test_jax_free_names_import_no_jax():
    imports = "; ".join(f"from {package} import {', '.join(names)}" for package, names in JAX_FREE.items())
    code = f"import sys; {imports}; print(sorted({{'jax', 'pgx', 'flax'}} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
