"""Lazy re-exports (PEP 562) for the core's declared surfaces: ``zerolab`` itself and each layer package.

A surface package lists its public names by the module that holds them and resolves each on first use, so importing
one name imports only that module: FEN validation, UCI engines, configs and progress bars stay free of JAX and pgx,
and the command line starts fast.  The package also imports every name under ``if TYPE_CHECKING:`` so that type
checkers and IDEs see the real definitions; ``tests/zerolab/test_layers.py`` holds that block to the runtime list.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, sources: Mapping[str, tuple[str, ...]]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, which re-exports ``sources`` (module -> its names).

    A name that is the last part of its module's name (``"train"`` from ``zerolab.training.train``) is that module;
    any other is the module's attribute.  A resolved name is stored on the package, so later look-ups are plain
    attribute reads.
    """
    holder = {name: module for module, names in sources.items() for name in names}

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
