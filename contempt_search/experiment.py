"""What the search-contempt experiments share: the base network they play, and their resumable result files."""

from __future__ import annotations

import json
import logging
import pathlib

from zerolab.api import Checkpointer, load_config, train

logger = logging.getLogger(__name__)

#: ``search.rules`` / agent-spec name of the search-contempt rules.
CONTEMPT_RULES = "contempt_search.rules:contempt_rules"


def base_network(config) -> pathlib.Path:
    """The run directory ``config.network``; trains ``config.base_config`` (tiny preset, ``base_overrides``) into it
    first when it holds no checkpoint.  The paper presets leave both empty: they need a converted maia-1900 run."""
    if not config.network:
        raise ValueError("this experiment needs network=RUN: the paper preset plays maia-1900 converted to a zerolab "
                         "run (python -m zerolab.lc0 convert --workdir RUN)")
    network = pathlib.Path(config.network)
    if (network / "checkpoints").is_dir() and Checkpointer(network / "checkpoints").steps():
        return network
    if not config.base_config:
        raise FileNotFoundError(f"network={network}: no checkpoint there, and no base_config to train one")
    base = load_config(config.base_config, "tiny", list(config.base_overrides) + [f"progress={bool(config.progress)}"])
    logger.info("training the base network into %s (%s %s)", network, config.base_config, list(config.base_overrides))
    train.run(base, network)
    return network


def read_rows(path: pathlib.Path) -> list[dict]:
    """The JSON lines of ``path`` (none when it does not exist yet)."""
    path = pathlib.Path(path)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def append_row(path: pathlib.Path, row: dict) -> None:
    """Appends one result, so that a rerun skips it."""
    with pathlib.Path(path).open("a") as stream:
        stream.write(json.dumps(row) + "\n")
