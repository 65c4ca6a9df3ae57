"""Logging set-up for the command-line entry points: our INFO lines, libraries' warnings only."""

from __future__ import annotations

import logging

QUIET_LIBRARIES = ("absl", "orbax", "jax", "tensorstore", "matplotlib", "chess.engine")


def configure_logging(level: int = logging.INFO) -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)
