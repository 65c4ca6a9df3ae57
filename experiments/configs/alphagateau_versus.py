"""AlphaGateau against the AlphaZero ResNet, head to head, over several seeds (evidence for the paper's Figure 5).

Both networks train with the same training keys (those of the quickstart: Gardner chess, Gumbel self-play); for each
seed in ``seeds`` each is trained from scratch, then the two final networks play ``match.games`` games with the same
search (half with each colour).  The summary gives each seed's score and the pooled score ± its standard error.

* ``tiny``: one seed, 32 games (a 2-core CPU in about 15 minutes);
* ``evidence``: three seeds × 128 games (about an hour on 2 cores);
* ``paper``: the quickstart's paper preset (Gardner chess, 128 × 5 networks, 128 simulations), one seed, 128 games
  at 128 simulations (accelerators).
"""

import dataclasses

import ml_collections

from experiments.configs import load_config
from zerolab import section_dataclass

TRAINING_KEYS = ("seed", "iterations", "game", "search", "selfplay", "method", "method_options", "replay", "train",
                 "checkpoint", "progress")


@dataclasses.dataclass(frozen=True, kw_only=True)
class AlphaGateauVersusConfig:
    """alphagateau-versus's own keys, typed (the training keys are the core's, ``match`` is
    :meth:`zerolab.evaluation.EvaluationConfig.for_match`'s)."""

    seeds: list[int]


def read_config(config: ml_collections.ConfigDict) -> AlphaGateauVersusConfig:
    """``config``'s own keys typed (:func:`zerolab.section_dataclass`); an empty ``seeds`` is a ValueError."""
    versus = section_dataclass(AlphaGateauVersusConfig, config, "alphagateau-versus", shared=True)
    if not versus.seeds:
        raise ValueError("seeds must list at least one seed, got []")
    return versus


def get_config(preset: str = "tiny"):
    # The quickstart's training keys (tiny and evidence; the paper's for paper), one source for both experiments.
    quickstart = load_config("quickstart", "paper" if preset == "paper" else "tiny")
    config = ml_collections.ConfigDict({key: quickstart[key] for key in TRAINING_KEYS})
    architecture = {key: quickstart.model[key] for key in ("block", "heads", "pooling")}  # the paper's
    dtype = quickstart.model.dtype  # bfloat16 in the paper preset
    width, blocks = quickstart.model.channels, quickstart.model.num_blocks
    config.models = {
        "alphagateau": {"name": quickstart.model.name, "channels": width, "num_blocks": blocks, **architecture,
                        "dtype": dtype},
        "resnet": {"name": "resnet", "channels": width, "num_blocks": blocks, "dtype": dtype},
    }
    config.seeds = [0]
    config.match = {"games": 32, "search": {"num_simulations": 16}, "max_game_plies": 256}
    config.compilation_cache = "~/.cache/zerolab/jax-compilation"
    config.checkpoint.keep_period = config.iterations  # the first and the final networks are kept
    if preset == "tiny":
        pass
    elif preset == "evidence":
        config.seeds = [0, 1, 2]
        config.match.games = 128
    elif preset == "paper":
        config.match.games = 128
        config.match.search.num_simulations = 128
    else:
        raise KeyError(preset)
    return config
