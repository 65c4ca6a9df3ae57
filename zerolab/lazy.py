"""Lazy re-exports (PEP 562) for the core's declared surfaces: ``zerolab`` itself and each layer package.

A surface package writes where its public names come from once, as the imports of its ``if TYPE_CHECKING:`` block
(type checkers and IDEs read them as the real definitions), and declares them in a literal ``__all__`` (what static
readers and ``import *`` read).  :func:`lazy_surface` reads the block from the package's source to build the
package's ``__getattr__`` and ``__dir__``, and refuses to import a package whose ``__all__`` is not exactly the
block's names and the functions and classes it defines itself, so the two can never drift apart.  Each name resolves
on first use, so importing one name imports only the module that holds it: FEN validation, UCI engines, configs and
progress bars stay free of JAX and pgx, and the command line starts fast.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import sys
from collections.abc import Callable
from typing import Any


def surface_sources(path: str | pathlib.Path, package: str) -> dict[str, str]:
    """``{name: module}`` for each name the ``if TYPE_CHECKING:`` block of ``package``'s ``__init__.py`` at ``path``
    imports (``from module import name``; ``from package import name`` names the package's own submodule ``name``).

    Raises ValueError for an import there that is not ``from module import name`` (relative, starred or aliased).
    """
    tree = ast.parse(pathlib.Path(path).read_text(), str(path))
    sources: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom) or statement.level or not statement.module:
                raise ValueError(f"{path}:{statement.lineno}: a surface lists its names as 'from module import name'")
            for alias in statement.names:
                if alias.name == "*" or alias.asname not in (None, alias.name):
                    raise ValueError(f"{path}:{statement.lineno}: {alias.name} as {alias.asname}: a surface name "
                                     "keeps its own name")
                module = statement.module
                sources[alias.name] = f"{package}.{alias.name}" if module == package else module
    return sources


def defined_names(path: str | pathlib.Path) -> list[str]:
    """The public functions and classes that the module at ``path`` defines itself (at its top level)."""
    tree = ast.parse(pathlib.Path(path).read_text(), str(path))
    return [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")]


def lazy_surface(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose public names are those its ``if TYPE_CHECKING:`` block
    imports (:func:`surface_sources`) and the functions and classes it defines itself.

    A name that is the last part of its module's name (``"train"`` from ``zerolab.training.train``) is that module;
    any other is the module's attribute.  A resolved name is stored on the package, so later look-ups are plain
    attribute reads.

    Raises ImportError when the package's ``__all__`` (a literal, written before the call) is not exactly those
    names, naming the ones missing from it and the ones it has too many.
    """
    module = sys.modules[package]
    path = module.__file__
    holder = surface_sources(path, package)
    public = set(holder) | set(defined_names(path))
    declared = getattr(module, "__all__", None)
    if declared is None or list(declared) != sorted(public):
        declared = set(declared or ())
        raise ImportError(f"{package}.__all__ must list, sorted, the names of its TYPE_CHECKING block and the functions "
                          f"and classes it defines: missing {sorted(public - declared)}, not public "
                          f"{sorted(declared - public)}" + ("" if declared != public else " (not sorted)"))

    def __getattr__(name: str) -> Any:
        module_name = holder.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(module_name)
        value = module if module_name.rpartition(".")[2] == name else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(holder))

    return __getattr__, __dir__
