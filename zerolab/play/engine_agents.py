"""Engine agents: external programs behind the :class:`zerolab.play.agents.Agent` interface, with pgx as the referee —
UCI engines for chess and Gardner chess (:class:`EngineAgent`: Stockfish, Fairy-Stockfish) and GTP engines for Go
(:class:`GTPEngineAgent`: GNU Go).
"""

from __future__ import annotations

import logging

import jax
import numpy as np
import pgx

from zerolab.games import ChessGame, Game
from zerolab.play.agents import Agent, lanes_to_answer

logger = logging.getLogger(__name__)


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
