"""What the search-contempt launchers share: the training config of the base network they play."""

from __future__ import annotations

from zerolab import load_config


def base_run_config(config):
    """The training config ``config.base_config`` names (its tiny preset with ``base_overrides``, the experiment's
    ``progress``): the run :func:`contempt_search.experiment.base_network` trains into ``config.network`` when that
    holds no checkpoint (and :func:`contempt_search.plan.experiment_network` plans); None when the config names none
    (the paper presets play a converted maia-1900 run)."""
    if not config.base_config:
        return None
    return load_config(config.base_config, "tiny", list(config.base_overrides) + [f"progress={bool(config.progress)}"])
