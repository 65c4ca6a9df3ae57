"""What the sai-go launchers share: the network of an SAI run, from its directory or from the config that would
train it (their plans), and the checks of the keys they read (:func:`check_sai_network`, :func:`check_play_keys`,
:func:`checked_simulations`)."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterable, Sequence

from sai_go.plan import SaiModel, abstract_model
from sai_go.search import check_lambda
from zerolab import SearchChanges, check_at_least, from_json
from experiments.configs import load_config
from zerolab.evaluation import check_game_count
from zerolab.training import step_directories

GNUGO_LEVELS = range(0, 11)


def run_model(run: str | pathlib.Path, config_name: str = "sai-go",
              overrides: Sequence[str] = ()) -> tuple[SaiModel, str]:
    """``(model, where it comes from)``: the run directory's own config when it exists, else the config that trains
    it: ``config_name`` at the preset its name ends with (``runs/sai-go-paper``: paper; otherwise tiny)."""
    path = pathlib.Path(run) / "config.json"
    if path.exists():
        return abstract_model(from_json(path.read_text())), f"{run}/config.json"
    preset = "paper" if pathlib.Path(run).name.endswith("paper") else "tiny"
    return (abstract_model(load_config(config_name, preset, overrides)),
            f"{run} does not exist at plan time: the network of the {config_name} {preset} preset"
            + (f" with {overrides}" if overrides else ""))


def check_sai_network(key: str, run: str | pathlib.Path, steps: Iterable[int] = ()) -> None:
    """``run`` must hold a trained 7×7 Go network (its ``checkpoints/`` and ``config.json``) with each of ``steps``
    (negative: the newest); else a FileNotFoundError or ValueError naming ``key`` and what to do."""
    path = pathlib.Path(run)
    directory = path / "checkpoints"
    found = step_directories(directory) if directory.is_dir() else []
    if not found:
        raise FileNotFoundError(f"{key}={str(run)!r}: no checkpoint there; train one first (python -m experiments run "
                                f"sai-go --workdir {run})")
    try:
        game = json.loads((path / "config.json").read_text()).get("game", {})
    except (OSError, ValueError) as error:
        raise FileNotFoundError(f"{key}={str(run)!r}: its config.json cannot be read ({error})") from None
    if game.get("name") != "go":
        raise ValueError(f"{key}={str(run)!r}: a run of {game.get('name')}, not of 7x7 Go")
    if game.get("go_size") != 7:
        raise ValueError(f"{key}={str(run)!r}: a run of {game.get('go_size')}x{game.get('go_size')} Go, not 7x7")
    missing = [step for step in steps if step >= 0 and step not in found]
    if missing:
        raise FileNotFoundError(f"{key}={str(run)!r}: no checkpoint step {missing}; steps: {found}")


def check_play_keys(section, prefix: str = "") -> None:
    """The play keys a section may hold (a ConfigDict or a launcher's typed config), each checked where present:
    ``games`` (even, half with each colour), ``gnugo_levels`` (0–10), ``lambdas`` / ``lam`` ([0, 1]; a ``lam`` of
    None is left to the caller), ``max_game_plies`` (≥ 1), ``temperature_plies`` (≥ 0); a ``search`` section is
    checked as it is read (:class:`zerolab.SearchChanges`).  Keys are named as ``prefix`` + key."""
    absent = object()

    def value(key: str):
        return getattr(section, key, absent)

    if value("games") is not absent:
        check_game_count(f"{prefix}games", value("games"))
    for level in value("gnugo_levels") if value("gnugo_levels") is not absent else ():
        if level not in GNUGO_LEVELS:
            raise ValueError(f"{prefix}gnugo_levels: GNU Go levels are 0 to 10, got {level!r}")
    lambdas = value("lambdas")
    for lam in list(lambdas if lambdas is not absent else ()) + ([value("lam")] if value("lam") not in (absent, None)
                                                                 else []):
        check_lambda(lam, f"{prefix}lambdas" if lambdas is not absent else f"{prefix}lam")
    for key, minimum in (("max_game_plies", 1), ("temperature_plies", 0)):
        if value(key) is not absent:
            check_at_least(prefix + key, value(key), minimum)


def checked_simulations(search: SearchChanges, name: str) -> int:
    """``search.num_simulations`` of a ``search`` section (``name``) whose searches are SAI's own PUCT with root noise
    (held-out self-play, endgame searches): they change only their simulations, so any other key is a ValueError
    naming it, as is a section without ``num_simulations``."""
    for key, _ in search.items:
        if key != "num_simulations":
            raise ValueError(f"{name}.{key}: these searches are SAI's PUCT with root noise at {name}.num_simulations; "
                             f"they change no other key")
    if search.get("num_simulations") is None:
        raise ValueError(f"{name}.num_simulations: missing; these searches need their simulations")
    return search.get("num_simulations")
