"""What the search-contempt launchers share: the training config of the base network they play, and the checks of
the keys they all read (:func:`check_contempt_config`)."""

from __future__ import annotations

from contempt_search.experiment import arm_search, holds_checkpoint, temperature_settings
from zerolab import SearchConfig, check_at_least
from experiments.configs import load_config
from zerolab.training import check_training_config


def base_run_config(config):
    """The training config ``config.base_config`` names (its tiny preset with ``base_overrides``, the experiment's
    ``progress``; ``config`` a launcher's typed config or a ConfigDict): the run :func:`contempt_search.experiment.base_network` trains into ``config.network`` when that
    holds no checkpoint (and :func:`contempt_search.plan.experiment_network` plans); None when the config names none
    (the paper presets play a converted maia-1900 run)."""
    if not config.base_config:
        return None
    return load_config(config.base_config, "tiny", [*config.base_overrides, f"progress={config.progress}"])


def check_contempt_config(config) -> None:
    """The keys every search-contempt launcher reads, checked before its run directory is made: the agents' ``search``
    section (each value was checked when the config was read; here the arms' search it makes from a default one, which
    refuses lc0's PUCT rule with Gumbel and the keys the arms set themselves), the game cap, N_scl values, the named
    temperatures, and the base network (``network`` holding a checkpoint, or a ``base_config`` whose training config
    passes the core's checks).  ``config`` is a launcher's typed config; the keys a launcher lacks (``sc_limits``,
    ``sc_limit``, ``puct_temperatures``) are skipped.  A bad value is a ValueError naming the key."""
    arm_search(SearchConfig(), config.search, sc_limit=None)
    check_at_least("max_game_plies", config.max_game_plies, 1)
    for value in getattr(config, "sc_limits", ()):
        check_at_least("sc_limits", value, 1)
    if hasattr(config, "sc_limit"):
        check_at_least("sc_limit", config.sc_limit, 0)
    for temperature in getattr(config, "puct_temperatures", ()):
        temperature_settings(config, temperature)
    if not (config.network and holds_checkpoint(config.network)):
        base = base_run_config(config)
        if base is None:
            raise ValueError(f"network={config.network!r}: no checkpoint there and no base_config to train one (the "
                             f"paper presets play maia-1900 converted to a run: python -m zerolab lc0 convert "
                             f"--workdir RUN)")
        check_training_config(base)
