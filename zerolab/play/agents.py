"""Agents: anything that picks moves for a batch of positions.

An agent may be a network with a search (:class:`SearchAgent`), a searchless predictor, or an external program over
UCI (:class:`EngineAgent`).  The arena plays agents against each other with pgx as the referee, so every agent
speaks pgx action ids.

Agent specs (command line, configs):

* ``DIR[:key=value,...]`` — a run directory (its newest checkpoint) or one checkpoint step directory, with
  ``step=N``, ``name=NAME`` and search settings by :class:`zerolab.search.config.SearchConfig`'s field names
  (:meth:`SearchConfig.with_overrides`): ``num_simulations=N``, ``kind=gumbel|muzero``, ``gumbel_scale=X``,
  ``max_num_considered_actions=N``, ``rules=package.module:factory`` (search rules; default: the run's own
  ``search.rules``) and ``rule_options.NAME=VALUE`` for the rules' options
  (``rules=contempt_search.rules:contempt_rules,rule_options.sc_limit=5``; values are Python literals or strings).
  The rules' factory rejects option names it does not take; an unknown key is an error naming the valid ones.
* ``ENGINE[:key=value,...]`` — an external UCI engine (``stockfish:elo=1350``, ``fairy-stockfish:skill=-20``); see
  :mod:`zerolab.engines.uci_client` for its options.
* ``gnugo[:level=N,timeout=S,seed=K]`` — GNU Go over GTP for Go (:class:`GTPEngineAgent`, :mod:`zerolab.engines.gtp_client`;
  ``seed`` defaults to 1, so its moves repeat from run to run).
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import logging
import pathlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
import pgx

from zerolab.config import split_spec
from zerolab.games import ChessGame, Game
from zerolab.games.base import plies_played
from zerolab.networks.network import make_network
from zerolab.training.runs import Components, load_trained_variables
from zerolab.search.mcts import run_search
from zerolab.selfplay.hooks import choose_actions
from zerolab.selfplay.types import SelfPlayConfig

logger = logging.getLogger(__name__)


class Agent(abc.ABC):
    """The base of every agent: picks one move per position of a batch of pgx states.

    ``select_actions`` is the one method an agent must write.  The others have defaults that do nothing (or name the
    agent as the mover of every move), so the arena and a :class:`zerolab.play.arena.TeamAgent` call them on any agent:

    * ``new_game()`` — before each batch of new games (engines clear their hash, predictors their history);
    * ``set_start_positions(start_fens)`` — after ``new_game()`` when the games start from given positions (one text
      per game lane), for agents that cannot read a game's earlier moves off its pgx state
      (:class:`GTPEngineAgent` gives GNU Go the moves of a Go start position);
    * ``observe(states)`` — shown the batched positions of a ply in which the agent moves in no game (the arena calls
      it on the side not to move, a team on the members its rule skips), so an agent that follows its games ply by
      ply (:class:`EngineAgent`'s boards) stays in step however long it is skipped;
    * ``mover_names(batch_size)`` and ``move_annotations(batch_size)`` — read by the arena after each
      ``select_actions``: who chose each lane's move (default: the agent itself; a team names its member) and notes
      on it for the game record (default: none; a team's rule says who moved and why);
    * ``close()`` — release external processes.

    Attributes:
      name: a short name for tables, PGN headers and Elo books.
    """

    name: str

    @abc.abstractmethod
    def select_actions(self, states: pgx.State, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        """[B] pgx action ids, one legal action for each position of the batched ``states`` that ``active`` [B]
        marks (None: every position whose game is running).

        Other positions may get any action; the arena ignores them.  An agent may answer them anyway (a batched
        search does), but an external engine should not be asked about them.
        """

    def new_game(self) -> None:
        """Called before each batch of new games."""

    def set_start_positions(self, start_fens: Sequence[str] | None) -> None:
        """The games of the next batch start from these positions (one text per lane; None: the standard start)."""

    def observe(self, states: pgx.State) -> None:
        """Shown the batched positions of a ply in which this agent moves in no game."""

    def mover_names(self, batch_size: int) -> list[str]:
        """[B] who chose each move of the last ``select_actions`` call (read by the arena for the game record)."""
        return [self.name] * batch_size

    def move_annotations(self, batch_size: int) -> list[dict[str, Any]]:
        """[B] notes (JSON values) on each move of the last ``select_actions`` call, for the game record."""
        return [{} for _ in range(batch_size)]

    def close(self) -> None:
        """Releases what the agent holds (external processes)."""


def lanes_to_answer(states: pgx.State, active: np.ndarray | None) -> np.ndarray:
    """[B] bool: the lanes an agent answers — ``active`` when given, else the positions whose game is running."""
    return ~np.asarray(states.terminated) if active is None else np.asarray(active, bool)


#: Builds one agent (called once, when it first plays).
AgentLoader = Callable[[], Agent]


class AgentPool:
    """Named agents built on first use, kept, and closed together (a context manager).

    ``pool[name]`` builds the agent of ``loaders[name]`` the first time and checks that it carries that name (the
    name its results are booked under); ``release(name)`` closes one built agent (built again if asked for later);
    ``close()`` closes every agent built (engines' processes).
    """

    def __init__(self, loaders: Mapping[str, AgentLoader]):
        self.loaders = dict(loaders)
        self.agents: dict[str, Agent] = {}

    def __getitem__(self, name: str) -> Agent:
        if name not in self.agents:
            if name not in self.loaders:
                raise KeyError(f"no agent named {name!r}; the agents are {sorted(self.loaders)}")
            agent = self.loaders[name]()
            if agent.name != name:
                agent.close()
                raise ValueError(f"the loader of {name!r} built an agent named {agent.name!r}")
            self.agents[name] = agent
        return self.agents[name]

    def release(self, name: str) -> None:
        """Closes ``name``'s agent if it was built (nothing otherwise)."""
        agent = self.agents.pop(name, None)
        if agent is not None:
            agent.close()

    def close(self) -> None:
        for agent in self.agents.values():
            agent.close()
        self.agents.clear()

    def __enter__(self) -> AgentPool:
        return self

    def __exit__(self, *exception) -> None:
        self.close()


@functools.lru_cache(maxsize=32)
def compiled_search(search_config: Any, game: Game, network: Any, temperature: SelfPlayConfig | None = None):
    """One jitted ``(variables, key, states) -> (actions [B], summary {name: [B]})`` per (search, game, network,
    temperature), shared by agents; the summary is the search rules' (empty for the standard search).

    With ``temperature`` (a :class:`zerolab.selfplay.types.SelfPlayConfig` whose temperature schedule is used), the move is
    sampled from the root visits as in self-play (:func:`zerolab.selfplay.hooks.choose_actions`), at each game's ply
    :func:`zerolab.games.base.plies_played` (plies since its start position); the key is split into a search key and a sampling key.
    Without it the move is the search's choice, from the whole key.
    """

    def search(variables, key, states):
        if temperature is None:
            output = run_search(search_config, game, network, variables, key, states)
            return output.action, output.summary
        search_key, sample_key = jax.random.split(key)
        output = run_search(search_config, game, network, variables, search_key, states)
        action = choose_actions(sample_key, output.visit_counts, output.action, plies_played(states), temperature)
        return action, output.summary

    return jax.jit(search)


class SearchAgent(Agent):
    """A network with a search, e.g. a training checkpoint; ``select_actions`` is one jitted batched search.

    The search rules' per-search statistics (``SearchRules.summary_fn``) are averaged over the positions the agent
    was asked about (``active``, by default those of games still running): :meth:`search_statistics`.

    ``temperature`` (default None: play the search's choice) samples each move from the root visits with a
    self-play temperature schedule (a :class:`zerolab.selfplay.types.SelfPlayConfig`; only its ``temperature*`` fields
    are read), counted from each game's start position: e.g. lc0's schedule over full moves
    (``temperature_schedule="moves"``) for matches between self-play settings.
    """

    def __init__(self, name: str, game: Game, network: Any, variables: Any, search_config: Any,
                 temperature: SelfPlayConfig | None = None):
        if temperature is not None and not isinstance(temperature, SelfPlayConfig):
            raise TypeError(f"temperature must be a zerolab.selfplay.types.SelfPlayConfig or None, "
                            f"got {type(temperature).__name__}")
        self.name = name
        self.game = game
        self.network = network
        self.variables = variables
        self.search_config = search_config
        self.temperature = temperature
        self._search = compiled_search(search_config, game, network, temperature)
        self._statistic_totals: dict[str, float] = {}
        self._searched_positions = 0

    def select_actions(self, states: pgx.State, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        actions, summary = self._search(self.variables, key, states)  # one batched search over every lane
        if summary:
            running = lanes_to_answer(states, active)
            self._searched_positions += int(running.sum())
            for name, values in summary.items():
                total = float(np.asarray(values)[running].sum())
                self._statistic_totals[name] = self._statistic_totals.get(name, 0.0) + total
        return np.asarray(actions)

    def search_statistics(self) -> dict[str, float]:
        """``{name: mean}`` of the search summary over every position searched so far (empty without a summary)."""
        return {name: total / max(self._searched_positions, 1) for name, total in self._statistic_totals.items()}


AGENT_OPTION_KEYS = ("step", "name")
"""A checkpoint agent spec's own keys; its other keys are the search's (:meth:`SearchConfig.with_overrides`)."""


def load_search_agent(path: str | pathlib.Path, options: dict[str, str] | None = None,
                      game: Game | None = None, temperature: SelfPlayConfig | None = None) -> SearchAgent:
    """A :class:`SearchAgent` from a run directory (newest checkpoint, or ``step``) or a checkpoint step directory.

    ``game`` (default: the run's own) is the game the agent plays: the network module is built for it from the run's
    model config, e.g. an AlphaGateau trained on 5×5 Gardner chess playing 8×8 chess (its graph, not its parameters,
    carries the board size).  Agents of one architecture and game share one compiled search.  ``temperature``: see
    :class:`SearchAgent`.
    """
    options = dict(options or {})
    trained = load_trained_variables(path, int(options["step"]) if "step" in options else None)
    components = Components.from_config(trained.config)
    if game is not None and game != components.game:
        components = dataclasses.replace(components, game=game, network=make_network(trained.config.model, game))
    search = components.search.with_overrides(
        {key: value for key, value in options.items() if key not in AGENT_OPTION_KEYS},
        what="agent option", other_keys=AGENT_OPTION_KEYS)
    search.make_rules()  # a wrong rules name or option fails here, with the spec's words, not inside a jitted search
    name = options.get("name", f"{pathlib.Path(path).name}@{trained.step}")
    return SearchAgent(name, components.game, components.network, trained.variables, search, temperature)


class EngineAgent(Agent):
    """An external UCI engine (Stockfish, Fairy-Stockfish) choosing moves one position at a time.

    The engine sees the game's moves, not just a FEN: each game lane's python-chess board (a
    :class:`zerolab.games.board.GardnerBoard` on 5×5) is continued from pgx's states by :class:`zerolab.games.board.GameBoards`
    and sent as ``position startpos|fen ROOT moves ...``, so the engine knows the repetitions.  pgx stays the
    referee: when the engine's move is not legal under pgx's rules (Gardner rules differ in details between the
    two), a uniformly random legal move is played instead and counted in ``fallback_moves``; so is a move lost to
    an engine crash or time-out (the engine is restarted).  Only the ``active`` lanes are sent to the engine; the
    boards of the other running lanes are continued all the same, so a team member asked about some lanes only
    stays in step in every game.
    """

    def __init__(self, spec: str, game: ChessGame, seed: int = 0):
        from zerolab.games.board import GameBoards, rules_name
        from zerolab.engines.uci_client import UCIEngine
        from zerolab.engines.uci_spec import EngineSpec

        if not isinstance(game, ChessGame):
            raise ValueError(f"engine agents play chess or gardner_chess, not {game.name}")
        self.name = spec
        self.game = game
        self.engine = UCIEngine(EngineSpec.parse(spec), rules_name(game))
        self.boards = GameBoards(game)
        self.rng = np.random.default_rng(seed)
        self.fallback_moves = 0

    def select_actions(self, states: pgx.State, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        del key
        states = jax.device_get(states)
        answer = lanes_to_answer(states, active)
        actions = np.zeros(answer.shape[0], np.int32)
        for index in np.flatnonzero(~np.asarray(states.terminated)):
            state = jax.tree.map(lambda x: x[index], states)
            if answer[index]:
                actions[index] = self._choose(int(index), state)
            else:  # a lane another agent moves in: keep its board in step
                self.boards.board(int(index), state)
        return actions

    def _choose(self, lane: int, state: pgx.State) -> int:
        from zerolab.games.board import describe_position
        from zerolab.engines.uci_client import EngineError

        board = self.boards.board(lane, state)
        try:
            return self.game.uci_to_action(self.engine.play(board), state)
        except EngineError as error:  # the engine died or timed out: restart it for the next move
            logger.warning("%s failed on %s (%s); restarting it", self.name, describe_position(board), error)
            self.engine.restart()
        except ValueError as error:  # a move pgx's rules do not allow
            logger.warning("%s: %s", self.name, error)
        self.fallback_moves += 1
        return int(self.rng.choice(np.flatnonzero(np.asarray(state.legal_action_mask))))

    def observe(self, states: pgx.State) -> None:
        """Keep the game boards in step with positions played by others (a team mate); the engine is not asked."""
        self.boards.follow(states)

    def new_game(self) -> None:
        self.engine.new_game()
        self.boards.reset()

    def close(self) -> None:
        self.engine.close()


class GTPEngineAgent(Agent):
    """An external GTP engine (GNU Go) playing Go, spec ``gnugo[:level=N,timeout=S,seed=K]``; pgx stays the referee.

    The agent keeps each game lane's moves: between two of its calls the opponent played one move, found by
    comparing the lane's state after the agent's own move (replayed with pgx) with the new state (the point that
    turned from empty to the opponent's colour; none means a pass).  Games from start positions
    (:meth:`set_start_positions`, Go's move-list texts: :meth:`zerolab.games.go.GoGame.from_fen`) begin with those
    moves.  Before each move the engine is given the lane's game (``clear_board`` and the moves; only the new moves
    when it already holds that lane's game).  A move pgx
    does not allow (GNU Go's ko rule is not pgx's positional superko), ``resign``, or a move lost to an engine crash
    or time-out (the engine is restarted) becomes a uniformly random legal move, counted in ``fallback_moves``.
    """

    def __init__(self, spec: str, game: Game, seed: int = 0):
        from zerolab.games import GoGame
        from zerolab.engines.gtp_client import GTPEngine, GTPEngineOptions

        if not isinstance(game, GoGame):
            raise ValueError(f"GTP engine agent {spec!r} plays go, not {game.name}")
        self.name = spec
        self.game = game
        self.engine = GTPEngine(GTPEngineOptions.parse(spec, board_size=game.size, komi=game.komi))
        self.rng = np.random.default_rng(seed)
        self.fallback_moves = 0
        self._step = game.jitted_step
        self.new_game()

    def new_game(self) -> None:
        self._moves: dict[int, list[int]] = {}  # lane -> pgx actions played so far
        self._after_own_move: dict[int, pgx.State] = {}  # lane -> state after this agent's last move
        self._start: dict[int, tuple[list[int], pgx.State]] = {}  # lane -> its start position's moves and state
        self._engine_lane: int | None = None
        self._engine_moves: list[int] = []

    def set_start_positions(self, start_fens: list[str] | None) -> None:
        """The games of the next batch start from these positions (one move-list text per lane; None: the empty
        board)."""
        if start_fens is None:
            self._start = {}
            return
        positions = {text: (self.game.start_moves(text), self.game.from_fen(text)) for text in set(start_fens)}
        self._start = {lane: positions[text] for lane, text in enumerate(start_fens)}  # each text replayed once

    def _opponent_move(self, lane: int, state: pgx.State) -> int | None:
        """The move played since this agent's last move in ``lane`` (None when the lane starts now)."""
        before = self._after_own_move.get(lane)
        if before is None:
            before = self._start[lane][1] if lane in self._start else self.game.init(jax.random.key(0))
        if int(self.game.plies_played(state)) != int(self.game.plies_played(before)) + 1:
            return None
        old, new = np.asarray(self.game.stone_colours(before)), np.asarray(self.game.stone_colours(state))
        placed = np.flatnonzero((old == 0) & (new != 0))
        return int(placed[0]) if len(placed) else self.game.pass_action

    def select_actions(self, states: pgx.State, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        del key
        states = jax.device_get(states)
        actions = np.zeros(states.terminated.shape[0], np.int32)
        for lane in np.flatnonzero(lanes_to_answer(states, active)):
            state = jax.tree.map(lambda leaf: leaf[lane], states)
            moves = self._moves.setdefault(int(lane), list(self._start.get(int(lane), ([], None))[0]))
            if int(self.game.plies_played(state)) != len(moves):
                opponent = self._opponent_move(int(lane), state)
                if opponent is None or int(self.game.plies_played(state)) != len(moves) + 1:
                    raise ValueError(f"{self.name}: game lane {lane} is at ply {int(self.game.plies_played(state))} "
                                     f"but the agent saw {len(moves)} moves; call new_game() before new games")
                moves.append(opponent)
            actions[lane] = self._choose(int(lane), state, moves)
            moves.append(int(actions[lane]))
            self._after_own_move[int(lane)] = self._step(state, actions[lane])
        return actions

    def _choose(self, lane: int, state: pgx.State, moves: list[int]) -> int:
        from zerolab.engines.gtp_client import GTPEngineError

        colour = "b" if bool(self.game.black_to_move(state)) else "w"
        try:
            if self._engine_lane != lane or moves[: len(self._engine_moves)] != self._engine_moves:
                self.engine.set_position([self.game.action_to_gtp(action) for action in moves])
            else:
                for index in range(len(self._engine_moves), len(moves)):
                    self.engine.send(f"play {'b' if index % 2 == 0 else 'w'} {self.game.action_to_gtp(moves[index])}")
            self._engine_lane, self._engine_moves = lane, list(moves)
            vertex = self.engine.generate_move(colour)
            self._engine_moves.append(-1)  # the engine played its move; a mismatch below forces a full replay
            if vertex != "resign":
                action = self.game.gtp_to_action(vertex)
                if bool(state.legal_action_mask[action]):
                    self._engine_moves[-1] = action
                    return action
                logger.warning("%s: move %s is illegal under pgx's rules", self.name, vertex)
        except GTPEngineError as error:
            logger.warning("%s failed (%s); restarting it", self.name, error)
            self.engine.restart()
            self._engine_lane = None
        self.fallback_moves += 1
        return int(self.rng.choice(np.flatnonzero(np.asarray(state.legal_action_mask))))

    def close(self) -> None:
        self.engine.close()


GTP_ENGINE_NAMES = ("gnugo",)


def make_agent(spec: str, game: Game | None = None) -> Agent:
    """An agent from a spec string (see the module docstring)."""
    head, options = split_spec(spec)
    if pathlib.Path(head).is_dir():  # a run or checkpoint directory; an engine may be given by its file's path
        return load_search_agent(head, options)
    if game is None:
        raise ValueError(f"engine agent {spec!r} needs the game it plays")
    if pathlib.Path(head).name in GTP_ENGINE_NAMES:
        return GTPEngineAgent(spec, game)
    return EngineAgent(spec, game)
