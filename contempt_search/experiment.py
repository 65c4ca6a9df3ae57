"""What the search-contempt experiments share: the base network they play, the temperature schedules, the choice of
settings by their self-play decisiveness, and their resumable result files."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import pathlib
from collections.abc import Sequence

from zerolab import Checkpointer, SearchChanges, SearchConfig, SelfPlayConfig, from_json, make_game, train

logger = logging.getLogger(__name__)

#: ``search.rules`` / agent-spec name of the search-contempt rules.
CONTEMPT_RULES = "contempt_search.rules:contempt_rules"
#: The plain search's rules in the experiments: the standard search (mctx's bit for bit with mctx's PUCT), which
#: ``run_search`` runs in the same simulation loop as contempt's, so that the arms differ only in the rules.  Run
#: configs recorded before this was empty name it ``zerolab.search.mcts:project_loop_rules``, read as empty
#: (:data:`zerolab.search.config.RETIRED_RULES`).
PLAIN_RULES = ""


def base_network(config, base_run_config=None) -> pathlib.Path:
    """The run directory ``config.network``; trains ``base_run_config`` (the training config the launcher loaded for
    ``config.base_config``: its tiny preset with ``base_overrides``) into it first when it holds no checkpoint.  The
    paper presets leave both empty: they need a converted maia-1900 run."""
    if not config.network:
        raise ValueError("this experiment needs network=RUN: the paper preset plays maia-1900 converted to a zerolab "
                         "run (python -m zerolab lc0 convert --workdir RUN)")
    network = pathlib.Path(config.network)
    if holds_checkpoint(network):
        return network
    if base_run_config is None:
        raise FileNotFoundError(f"network={network}: no checkpoint there, and no base_config to train one")
    logger.info("training the base network into %s (%s %s)", network, config.base_config, config.base_overrides)
    train.run(base_run_config, network)
    return network


def holds_checkpoint(run: str | pathlib.Path) -> bool:
    """Whether the run directory ``run`` holds a checkpoint (the network :func:`base_network` plays as it is)."""
    directory = pathlib.Path(run) / "checkpoints"
    return directory.is_dir() and bool(Checkpointer(directory).steps())


def network_game(network: pathlib.Path):
    """The game a run directory's network plays (its ``config.json``), without loading the checkpoint."""
    game = from_json((pathlib.Path(network) / "config.json").read_text()).game
    return make_game(game.name, go_size=game.go_size, komi=game.komi)


def read_rows(path: pathlib.Path) -> list[dict]:
    """The JSON lines of ``path`` (none when it does not exist yet)."""
    path = pathlib.Path(path)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def append_row(path: pathlib.Path, row: dict) -> None:
    """Appends one result, so that a rerun skips it."""
    with pathlib.Path(path).open("a") as stream:
        stream.write(json.dumps(row) + "\n")


def temperature_settings(config, temperature: str) -> dict:
    """SelfPlayConfig fields of a schedule name (``tau1``, ``tau2``: ``config``'s (start, delay, decay, end, cutoff)
    over full moves, a launcher's typed config or a ConfigDict) or of a constant τ given as text (``"0.6"``)."""
    if temperature in ("tau1", "tau2"):
        return schedule_settings(getattr(config, temperature))
    try:
        constant = float(temperature)
    except ValueError:
        raise ValueError(f"temperature {temperature!r}: expected 'tau1', 'tau2' or a number") from None
    return {"temperature": constant, "temperature_delay_moves": 10**6, "temperature_end": constant}


def schedule_settings(schedule) -> dict:
    """SelfPlayConfig fields of a τ schedule ``(start, delay, decay, end, cutoff)`` over full moves (a config's
    ``tau1`` / ``tau2``: numbers, typed ``list[float]``): the one reading of a schedule, the move counts as ints."""
    start, delay, decay, end, cutoff = schedule
    return {"temperature": float(start), "temperature_delay_moves": int(delay), "temperature_decay_moves": int(decay),
            "temperature_end": float(end), "temperature_cutoff_moves": int(cutoff)}


#: The search keys every arm sets itself (:func:`arm_search`): a launcher's ``search`` section may not name them.
ARM_SEARCH_KEYS = ("dirichlet_fraction", "gumbel_scale", "rules", "rule_options")


def arm_search(base: SearchConfig, search: SearchChanges, *, sc_limit: int | None) -> SearchConfig:
    """The experiments' search of one arm, as an object: ``base`` (the network's run's search) with the launcher's
    ``search`` section applied (its simulations, kind and PUCT rule ``selection``), without root noise (the arms play
    their best), with the plain rules (``sc_limit`` None) or contempt's at N_scl = ``sc_limit``: the arms differ only
    in the rules.  A section naming a key the arms set themselves (:data:`ARM_SEARCH_KEYS`) is a ValueError."""
    check_arm_changes(search)
    arm = dataclasses.replace(search.apply(base), dirichlet_fraction=0.0, gumbel_scale=0.0, rules=PLAIN_RULES,
                              rule_options=())
    if sc_limit is not None:
        arm = dataclasses.replace(arm, rules=CONTEMPT_RULES, rule_options={"sc_limit": sc_limit})
    return arm


def check_arm_changes(search: SearchChanges) -> None:
    """Raises ValueError where the ``search`` section names a key that :func:`arm_search` sets for every arm (root
    noise, the rules and their options), which the section would otherwise change in vain."""
    for key, _ in search.items:
        if key.partition(".")[0] in ARM_SEARCH_KEYS:
            raise ValueError(f"search.{key}: the experiment sets it for every arm (no root noise; the plain rules or "
                             f"contempt's at sc_limit), so the search section may not name it")


def temperature_schedule(config, temperature: str) -> SelfPlayConfig:
    """The ``moves`` schedule of :func:`temperature_settings` as a SelfPlayConfig (for agents and self-play)."""
    return SelfPlayConfig(temperature_schedule="moves", **temperature_settings(config, temperature))


def log_distance(ratio: float, target: float) -> float:
    """|log(ratio / target)|: how far a (w+l)/d ratio is from ``target`` (infinite for a ratio of 0, ∞ or nan)."""
    if not (0 < ratio < math.inf):
        return math.inf
    return abs(math.log(ratio / target))


def nearest_setting(rows: Sequence[dict], target_ratio: float) -> dict:
    """The row whose ``ratio`` ((w+l)/d) is nearest ``target_ratio`` on a log scale (the first of equals)."""
    if not target_ratio > 0:
        raise ValueError(f"target_ratio must be positive, got {target_ratio}")
    if not rows:
        raise ValueError("no self-play setting to choose from")
    best = min(rows, key=lambda row: log_distance(float(row["ratio"]), target_ratio))
    if math.isinf(log_distance(float(best["ratio"]), target_ratio)):
        raise ValueError(f"no setting among {[row['name'] for row in rows]} has a finite, positive (w+l)/d")
    return best
