"""Self-play's types: the sizes of a batch (:class:`SelfPlayConfig`), what the scan carries and records
(:class:`Lanes`, :class:`PlyCarry`, :class:`PlyRecord`), what a move rule plays with and decides
(:class:`PlayVariables`, :class:`PlyDecision`, :class:`PlayedPly`), the rules a method may replace
(:class:`MoveRule`, :class:`LaneRule`, :class:`GameRule`) and the hooks' types.

The scan (:mod:`zerolab.selfplay.scan`) is built from typed hooks (aliases below), each with today's AlphaZero
behaviour as its default (:mod:`zerolab.selfplay.hooks`); a method (:mod:`zerolab.training.method`) may replace any of
them or the whole per-device play function:

* :class:`MoveRule` — the per-ply move rule ``act(variables, key, states, ply, carry) -> PlyDecision`` (:data:`ActFn`)
  and the frozen variables it plays with (a partner network), which reach it through :class:`PlayVariables`.  Its
  per-game state lives in ``carry`` (leaves ``[B, ...]``), made by the lane rule when a game starts.
* :class:`LaneRule` — the games in the lanes (:class:`Lanes`), one value that ``init`` makes for a run's first call
  (:data:`LaneInitFn`: the first games, their move-rule carries and the lanes' shared per-device state), ``step``
  updates after every ply (:data:`LaneStepFn`: each lane goes on or starts its next game; per-ply statistics) and
  the next call continues (lanes are carried from call to call: a game ends only when it is terminal or reaches
  ``max_game_plies``; ``resume``, where a rule has one, refreshes them at a call's start, e.g. SAI's α∅, β∅).  The
  core's (:func:`~zerolab.selfplay.hooks.standard_lane_rule`) starts every game from an :data:`InitialStatesFn` (the
  game's start position, a FEN list, ...) with a carry from an :data:`InitCarryFn`; SAI's starts games at per-game
  komi and branches games from earlier positions through a per-device queue.
* :class:`GameRule` — how moves are scored (:data:`RewardFn`, from the mover's view) and the records summed up at the
  end of the call (:data:`RecordsSummaryFn`); SAI scores at each game's komi.

Each hook gets its own random keys from the core and the call's ``settings`` (:data:`PlayFn`) where it takes them;
the streams are listed in :mod:`zerolab.selfplay.scan`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import flax.struct
import jax
import pgx

from zerolab.config import check_at_least, check_choice, section_dataclass
from zerolab.selfplay.frames import PackedFrames

TEMPERATURE_SCHEDULES = ("plies", "moves")
#: Calls of this many plies or more log their progress by default (:attr:`SelfPlayConfig.progress_plies`).
PROGRESS_CALL_PLIES = 256
#: Keys the core hands a lane rule's ``init`` (streams 1–3 of the call's key) and its ``step`` (streams 3–4 of the
#: ply's key): see :mod:`zerolab.selfplay.scan`.
LANE_INIT_KEYS = 3
LANE_STEP_KEYS = 2


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Sizes of one self-play batch.

    Attributes:
      num_games: games played in parallel (over all devices).
      plies_per_iteration: length of the scan (one self-play call); finished games restart inside it, and games
        still running at its end go on in the next call (the lanes are carried).
      max_game_plies: a game this long ends as a draw (whatever ``plies_per_iteration``: a game may span calls).
      temperature_schedule: ``plies`` (AlphaZero's: ``temperature`` for the first ``temperature_plies`` plies, then
        the search's choice) or ``moves`` (lc0's, over full moves m = ply // 2 of the game: ``temperature`` while
        m < ``temperature_delay_moves``, then a linear decay that reaches ``temperature_end`` after
        ``temperature_decay_moves`` more moves, and ``temperature_end`` from move ``temperature_cutoff_moves`` on
        when that is positive).  A temperature of 0 plays the search's choice.
      temperature_plies: the first plies of each game sample ``visits ** (1 / temperature)`` (``plies`` schedule).
      temperature: sampling temperature τ₀.
      device_memory_gib: the memory one device's self-play program may take (GiB); a device whose games do not fit
        plays them in chunks (:mod:`zerolab.selfplay.chunks`).  None: the memory the backend lets JAX allocate on
        the device (GPUs, TPUs), and no chunks on a backend that reports none (the CPU).
      progress_plies: a call logs ``self-play: P of T plies`` every this many plies, from inside the scan (a host
        callback; programs with one are not kept in JAX's persistent compilation cache).  None: every eighth of a
        call of :data:`PROGRESS_CALL_PLIES` plies or more (the paper presets' long calls, minutes on a GPU), none in
        shorter ones; 0: never.
    """

    num_games: int = 64
    plies_per_iteration: int = 64
    max_game_plies: int = 256
    temperature_plies: int = 0
    temperature: float = 1.0
    temperature_schedule: str = "plies"
    temperature_delay_moves: int = 0
    temperature_decay_moves: int = 0
    temperature_end: float = 0.0
    temperature_cutoff_moves: int = 0
    device_memory_gib: float | None = None
    progress_plies: int | None = None

    def __post_init__(self):
        for name in ("num_games", "plies_per_iteration", "max_game_plies"):
            check_at_least(f"selfplay.{name}", getattr(self, name), 1)
        check_choice("selfplay.temperature_schedule", self.temperature_schedule, TEMPERATURE_SCHEDULES)
        for name in ("temperature_plies", "temperature_delay_moves", "temperature_decay_moves",
                     "temperature_cutoff_moves"):
            if getattr(self, name) < 0:
                raise ValueError(f"selfplay.{name} must be >= 0, got {getattr(self, name)}")
        if self.temperature < 0 or self.temperature_end < 0:
            raise ValueError("selfplay temperatures must be >= 0")
        if self.progress_plies is not None:
            check_at_least("selfplay.progress_plies", self.progress_plies, 0)
        if self.device_memory_gib is not None and not self.device_memory_gib > 0:
            raise ValueError(f"selfplay.device_memory_gib must be > 0 or None, got {self.device_memory_gib}")

    @property
    def progress_interval(self) -> int:
        """Plies between two progress lines of a call (0: none); see ``progress_plies``."""
        if self.progress_plies is None:
            return self.plies_per_iteration // 8 if self.plies_per_iteration >= PROGRESS_CALL_PLIES else 0
        return self.progress_plies

    @classmethod
    def from_config(cls, config: Any) -> SelfPlayConfig:
        """From a ConfigDict (or mapping); keys absent from it keep their defaults (configs of older runs;
        :func:`zerolab.config.section_dataclass`)."""
        return section_dataclass(cls, config, "selfplay")


@flax.struct.dataclass
class PlyRecord:
    """What the scan keeps of each ply, before value targets are computed.  All [T, B]."""

    action: jax.Array  # the move played
    reward: jax.Array  # from the view of the player who moved
    game_over: jax.Array  # the move ended the game (or hit max_game_plies)
    first_player_moved: jax.Array  # the mover was the game's first player (the side to move at its start)
    game_length: jax.Array  # plies played when the game ended (valid where game_over)
    position_hash: jax.Array  # [T, B, 2] hash of the position searched, for counting distinct positions
    summary: dict = flax.struct.field(default_factory=dict)  # {name: [T, B]} the move rule's statistics


@flax.struct.dataclass
class Lanes:
    """The games in play, one per lane (leaves ``[B, ...]``), and the state the lanes of one device share.

    Attributes:
      states: [B] the positions to move from.
      ply: [B] int32 plies of each position, counted from ``first_ply`` at its game's first position; the
        temperature schedule and the ply cap read it.
      first_ply: [B] int32 the ply of each game's first position: 0 for a game from an initial position, the plies
        already played for a game that continues another game's position (SAI's branches).  The records count a
        game's own plies, ``ply − first_ply``.
      rule_carry: the move rule's per-game state (leaves [B, ...]; None without one), made by the lane rule.
      shared: the lane rule's per-device state (any pytree, e.g. SAI's queue of pending branches; None by default).
    """

    states: Any
    ply: jax.Array
    first_ply: jax.Array
    rule_carry: Any = None
    shared: Any = None


@flax.struct.dataclass
class PlyCarry:
    """What the scan carries from ply to ply: the lanes and the next ply's key."""

    lanes: Lanes
    key: jax.Array


@flax.struct.dataclass
class PlayVariables:
    """What a move rule plays with: the learner's variables and, for rules that have them, frozen ones."""

    learner: Any
    frozen: Any = None


@flax.struct.dataclass
class PlyDecision:
    """A move rule's decision for a batch of B positions.

    Attributes:
      action: [B] the move to play when the temperature rule does not sample.
      policy_target: [B, A] what the network learns at this position.
      carry: the rule's per-game state after this ply (leaves [B, ...]; None without one).
      visit_counts: [B, A] weights the temperature schedule samples from (``visits ** (1 / τ)``), or None for rules
        that choose their moves themselves.
      frame_extras: ``{name: [B, ...]}`` per-frame fields stored with the frame (see :attr:`zerolab.selfplay.frames.Frames.extras`).
      summary: ``{name: [B]}`` statistics averaged into the iteration's metrics (e.g. the search's summary).
    """

    action: jax.Array
    policy_target: jax.Array
    carry: Any = None
    visit_counts: Any = None
    frame_extras: dict = flax.struct.field(default_factory=dict)
    summary: dict = flax.struct.field(default_factory=dict)


@flax.struct.dataclass
class PlayedPly:
    """What one ply did, for the lane rule's step: the move rule's decision and the moves' results, leaves [B, ...].

    Attributes:
      decision: the move rule's decision (``decision.carry``: the rule's per-game state after the ply).
      action: [B] the moves played.
      next_states: [B] the positions after the moves, before any lane starts a new game.
      game_over: [B] the move ended its game (or reached ``max_game_plies``).
      reward: [B] the reward rule's, from the view of the player who moved.
    """

    decision: PlyDecision
    action: jax.Array
    next_states: Any
    game_over: jax.Array
    reward: jax.Array


ActFn = Callable[[PlayVariables, jax.Array, pgx.State, jax.Array, Any], PlyDecision]
"""``(variables, key, states [B], ply [B], carry) -> PlyDecision``: the per-ply move rule (jittable)."""
InitCarryFn = Callable[[jax.Array, int], Any]
"""``(key, num_games) -> carry``: the move rule's per-game state of fresh games, leaves ``[num_games, ...]`` (for
:func:`~zerolab.selfplay.hooks.standard_lane_rule`)."""
InitialStatesFn = Callable[[jax.Array, int], pgx.State]
"""``(key, num_games) -> states [num_games]``: the positions fresh games start from (jittable; for
:func:`~zerolab.selfplay.hooks.standard_lane_rule`)."""
PlayFn = Callable[..., tuple[PackedFrames, PlyRecord]]
"""``(variables, key, num_games, frozen_variables=None, settings=None) -> (frames [T, B], records [T, B])``: one
device's self-play.  ``settings`` (any pytree, traced; None by default) are the call's settings, passed as they are
to the hooks that take them (the lane rule's; e.g. SAI's per-call branch probability and fresh komi)."""
LaneInitFn = Callable[[PlayVariables, jax.Array, int, Any], Lanes]
"""``(variables, keys [LANE_INIT_KEYS], num_games, settings) -> lanes``: the games a self-play call starts with
(``ply == first_ply``), their move-rule carries and the lanes' shared state.  ``keys`` are the rule's own (a key
array; the core's streams are not among them); ``settings`` the call's (:data:`PlayFn`)."""
RewardFn = Callable[[Lanes, pgx.State, jax.Array], jax.Array]
"""``(lanes before the ply, next_states [B], game_over [B]) -> reward [B]`` from the view of the player who moved;
what the value targets are made of (jittable)."""
LaneResumeFn = Callable[[PlayVariables, jax.Array, Lanes, Any], Lanes]
"""``(variables, keys [LANE_INIT_KEYS], lanes, settings) -> lanes``: the lanes a call continues, as that call's
variables and settings see them (e.g. SAI's α∅, β∅ of the current network); the games in them go on unchanged."""
LaneStepFn = Callable[[jax.Array, Lanes, PlayedPly, Any], tuple[Lanes, dict]]
"""``(keys [LANE_STEP_KEYS], lanes before the ply, played, settings) -> (lanes of the next ply, statistics)``: every
lane goes on with its game (:func:`~zerolab.selfplay.hooks.advance_lanes`) or, where it ended, starts its next one
(:func:`~zerolab.selfplay.hooks.restart_games`); the shared state may change.  ``statistics`` (``{name: array}``, any
shapes) are stacked over the plies for :data:`RecordsSummaryFn`.  ``keys`` are the rule's own (a key array, fresh
each ply); ``settings`` the call's."""
RecordsSummaryFn = Callable[[PlyRecord, dict, Lanes], dict]
"""``(records [T, B], statistics {name: [T, ...]}, lanes after the last ply) -> {name: [T, B]}``: the records'
summary, whose values ``summarize`` averages into the iteration's metrics (a per-call total is broadcast over
``[T, B]``)."""


@dataclasses.dataclass(frozen=True)
class MoveRule:
    """A per-ply move rule: ``act`` and the frozen variables it plays with (its per-game state's initial value is the
    lane rule's: :class:`LaneRule`).

    ``frozen_variables`` (e.g. a partner network's) are placed on the devices once and passed to every call as
    ``variables.frozen``; they are arguments of the jitted self-play, not constants compiled into it.
    """

    act: ActFn
    frozen_variables: Any = None


@dataclasses.dataclass(frozen=True)
class LaneRule:
    """How the games in the lanes begin and follow one another: ``init`` makes the lanes (:class:`Lanes`) of a
    run's first call, ``step`` updates them after each ply (the core's: :func:`~zerolab.selfplay.hooks.standard_lane_rule`)
    and ``resume`` (None: none) refreshes carried lanes at the start of every call that continues them
    (:func:`zerolab.selfplay.scan.make_play_fn`'s ``play_lanes``).  Everything in the lanes (states, plies, the move
    rule's carry, the shared state) is carried from call to call and checkpointed with the train state.

    ``from_start_position``: every game starts from the game's start position (``game.init``), so that its moves
    replayed from there give the game (self-play PGN is written only then)."""

    init: LaneInitFn
    step: LaneStepFn
    from_start_position: bool = False
    resume: LaneResumeFn | None = None


@dataclasses.dataclass(frozen=True)
class GameRule:
    """How moves are scored and the records summed up: a method's replacements for the core's parts; ``None`` keeps
    the core's (:mod:`zerolab.selfplay.hooks`: :func:`~zerolab.selfplay.hooks.pgx_reward`,
    :func:`~zerolab.selfplay.hooks.ply_summary`)."""

    reward: RewardFn | None = None
    summarize: RecordsSummaryFn | None = None
