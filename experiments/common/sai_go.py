"""What the sai-go launchers' plans share: the network of an SAI run, from its directory or from the config that
would train it."""

from __future__ import annotations

import pathlib

from sai_go.plan import SaiModel, abstract_model
from zerolab import from_json, load_config


def run_model(run: str | pathlib.Path, config_name: str = "sai-go", overrides: list[str] = ()) -> tuple[SaiModel, str]:
    """``(model, where it comes from)``: the run directory's own config when it exists, else the config that trains
    it: ``config_name`` at the preset its name ends with (``runs/sai-go-paper``: paper; otherwise tiny)."""
    path = pathlib.Path(run) / "config.json"
    if path.exists():
        return abstract_model(from_json(path.read_text())), f"{run}/config.json"
    preset = "paper" if pathlib.Path(run).name.endswith("paper") else "tiny"
    return (abstract_model(load_config(config_name, preset, list(overrides))),
            f"{run} does not exist at plan time: the network of the {config_name} {preset} preset"
            + (f" with {list(overrides)}" if overrides else ""))
