"""Search-contempt: MCTS whose opponent nodes freeze their visit distribution after N_scl visits."""

import dataclasses

#: The experiments' temperature schedules over full moves, ``(start, delay, decay, end, cutoff)`` as
#: :class:`zerolab.selfplay.types.SelfPlayConfig`'s ``moves`` schedule reads them: ``tau1`` decays from 0.7 to 0.1 over the
#: first 5 moves, ``tau2`` keeps 0.9 for 20 moves, then decays to 0.6 over 60 and holds it from move 40.  One place,
#: read by the contempt-selfplay, contempt-match and contempt-train configs (no imports: configs load fast).
TEMPERATURE_SCHEDULES = {"tau1": (0.7, 0, 5, 0.1, 0), "tau2": (0.9, 20, 60, 0.6, 40)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class BaseNetworkConfig:
    """The keys every search-contempt experiment names its network with (the first fields of each one's typed
    config): the run directory ``network``, trained from ``base_config`` (a config name, its tiny preset with
    ``base_overrides``) when it holds no checkpoint (``experiments.common.contempt.base_run_config``), and ``seed``."""

    seed: int = 0
    network: str = "runs/contempt-base"  # a run directory; trained from base_config when it has no checkpoint
    base_config: str = "quickstart"
    base_overrides: list[str] = dataclasses.field(default_factory=lambda: ["model.name=resnet"])
