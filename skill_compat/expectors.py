"""The expector seniors: players that value candidate moves by the win probabilities that follow them.

* :class:`SttExpector` — S's top candidates, each valued by the mean win probability over the next two plies' four
  bit patterns (the issue's definition; ``reference_00_quirk`` reproduces the reference code's 00 board).
* :class:`HbExpector` — the HB brain that names the piece type whose hand moves have the best expected win
  probability (``evaluation``: the paper's cptowl of E's centipawns, ties broken by expected centipawns, or
  Stockfish's W/D/L; ``moves``: the hand's top moves of each type, as the paper, or all of them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import chess
import jax
import jax.numpy as jnp
import numpy as np

from skill_compat.oracle import EVALUATIONS, Oracle, board_after, result_evaluation
from skill_compat.players import BoardAgent, BrainChoice, JuniorModel, jitted_piece_types, lane_state
from zerolab import lanes_to_answer


def tile_state(state: Any, count: int) -> Any:
    return jax.tree.map(lambda leaf: jnp.repeat(jnp.asarray(leaf)[None], count, axis=0), state)


def mover_result(states_after: Any, mover_colour_index: np.ndarray) -> np.ndarray:
    """[K] score (1, ½, 0) of the player with pgx id ``mover_colour_index`` [K] in finished games."""
    rewards = np.asarray(states_after.rewards)
    return (rewards[np.arange(len(rewards)), np.asarray(mover_colour_index)] + 1) / 2


class SttExpector(BoardAgent):
    """The STT expector: candidates are S's top ``candidates`` moves (MultiPV at S's budget); the value of a
    candidate m is the mean over the next two plies' bits s ∈ {11, 10, 01, 00} (opponent's bit, then ours) of our
    win probability:

    * 11: m's own MultiPV win probability;
    * 10: S answers m, our junior replies, evaluate;
    * 01: the opponent junior answers m, evaluate (our senior to move);
    * 00: the opponent junior answers, our junior replies, evaluate.

    Evaluations are by ``evaluator`` (``eval_nodes``); a position over by pgx's rules gives its result to every s
    below it.  With ``reference_00_quirk`` the 00 value re-evaluates the 10 board, as the paper's reference code does
    (off: not the definition).  ``junior`` models both juniors (maia-1900 argmax, the juniors of both teams).
    """

    def __init__(self, game: Any, senior: Oracle, evaluator: Oracle, junior: JuniorModel, candidates: int = 5,
                 name: str = "expector", reference_00_quirk: bool = False):
        if candidates < 1:
            raise ValueError(f"expector candidates must be positive, got {candidates}")
        super().__init__(game)
        self.senior, self.evaluator, self.junior = senior, evaluator, junior
        self.candidates, self.name, self.reference_00_quirk = candidates, name, reference_00_quirk
        self._step = game.batched_step
        self.last_values: list[dict[str, dict[str, float]]] = []  # per call: {move: {s: value}}, for tests and logs

    def select_actions(self, states: Any, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        del key
        host_states, boards = self.boards(states, active)
        actions = np.zeros(host_states.terminated.shape[0], np.int32)
        self.last_values = []
        for lane, board in boards.items():
            state = lane_state(host_states, lane)
            move, values = self.choose(state, board)
            self.last_values.append(values)
            actions[lane] = self.game.uci_to_action(move, state)
        return actions

    def _uci(self, states: Any, actions: np.ndarray, index: int) -> str:
        return self.game.action_to_uci(int(actions[index]), lane_state(states, index))

    def choose(self, state: Any, board: chess.Board) -> tuple[str, dict[str, dict[str, float]]]:
        """(the chosen move, {candidate: {s: our win probability}}) in one position (unbatched pgx state)."""
        lines = self.senior.top_moves(board, self.candidates)
        if not lines:
            raise ValueError(f"the senior's engine gave no candidate move in {board.fen()}")
        size = self.candidates
        moves = [move for move, _ in lines] + [lines[0][0]] * (size - len(lines))  # padded to a fixed batch
        us = int(state.current_player)
        them = 1 - us
        ours = np.full(size, us)
        theirs = np.full(size, them)
        m_actions = np.array([self.game.uci_to_action(move, state) for move in moves], np.int32)
        after_m = self._step(tile_state(state, size), jnp.asarray(m_actions))
        over_m = np.asarray(after_m.terminated)
        result_m = mover_result(after_m, ours)
        # 01 and 00: the opponent junior answers
        j1 = np.asarray(self.junior(after_m), np.int32)
        after_j1 = self._step(after_m, jnp.asarray(j1))
        over_j1, result_j1 = np.asarray(after_j1.terminated), 1 - mover_result(after_j1, theirs)
        j2 = np.asarray(self.junior(after_j1), np.int32)
        after_j2 = self._step(after_j1, jnp.asarray(j2))
        over_j2, result_j2 = np.asarray(after_j2.terminated), mover_result(after_j2, ours)
        # 10: S answers, then our junior
        replies = []
        for index in range(size):
            replies.append(None if over_m[index] else self.senior.best_move(board_after(board, [moves[index]])))
        r_actions = np.array([0 if reply is None else self.game.uci_to_action(reply, lane_state(after_m, index))
                              for index, reply in enumerate(replies)], np.int32)
        after_r = self._step(after_m, jnp.asarray(r_actions))
        over_r, result_r = np.asarray(after_r.terminated), 1 - mover_result(after_r, theirs)
        j3 = np.asarray(self.junior(after_r), np.int32)
        after_j3 = self._step(after_r, jnp.asarray(j3))
        over_j3, result_j3 = np.asarray(after_j3.terminated), mover_result(after_j3, ours)

        values: dict[str, dict[str, float]] = {}
        for index, (move, w11) in enumerate(lines):
            if over_m[index]:
                values[move] = dict.fromkeys(("11", "10", "01", "00"), float(result_m[index]))
                continue
            value = {"11": float(w11)}
            opponent_junior = self._uci(after_m, j1, index)
            if over_j1[index]:
                value["01"] = value["00"] = float(result_j1[index])
            else:
                value["01"] = self.evaluator.win_probability(board_after(board, [move, opponent_junior]))
                if over_j2[index]:
                    value["00"] = float(result_j2[index])
                elif not self.reference_00_quirk:
                    our_junior = self._uci(after_j1, j2, index)
                    value["00"] = 1 - self.evaluator.win_probability(
                        board_after(board, [move, opponent_junior, our_junior]))
            if over_r[index]:
                value["10"] = float(result_r[index])
            elif over_j3[index]:
                value["10"] = float(result_j3[index])
            else:
                our_reply = self._uci(after_r, j3, index)
                value["10"] = 1 - self.evaluator.win_probability(board_after(board, [move, replies[index], our_reply]))
            if "00" not in value:  # the reference code's quirk: the 10 board evaluated again
                value["00"] = value["10"]
            values[move] = value
        best = max(values, key=lambda move: np.mean(list(values[move].values())))
        return best, values

    def new_game(self) -> None:
        super().new_game()
        for oracle in (self.senior, self.evaluator):
            oracle.new_game()


#: ``(states [K]) -> [K, A]`` the hand's policy over legal moves (maia at T = 1); mocked in tests.
HandModel = Callable[[Any], np.ndarray]


#: Which of the hand's moves of a piece type the HB expector weighs: its ``top`` most probable ones (the paper's 3),
#: or ``all`` of them (the expectation over the whole restricted policy D_p, the paper's formula without its cut).
HB_MOVES = ("top", "all")


class HbExpector(BoardAgent):
    """The HB expector: for each piece type with legal moves, the hand's ``top`` most probable moves of that type
    (``moves="all"``: every legal move of it), renormalised to q; value = Σ q(m)·(our win probability after m, by
    ``evaluator``); names the best type (it has no move of its own).  As an agent alone it plays the hand's most
    probable move of the type it names.

    ``evaluation``: ``cptowl`` (the paper's: ½ + atan(cp/290.68)/3.096 of E's centipawns, mate 1/0; types of equal
    value are ordered by Σ q(m)·(our centipawns after m), a mate in n counting 100,000 − n) or ``wdl`` (Stockfish's
    (W + D/2)/1000, which saturates; a tie goes to the first type, pawns: the behaviour before cptowl)."""

    def __init__(self, game: Any, evaluator: Oracle, hand: HandModel, top: int = 3, name: str = "expector",
                 evaluation: str = "cptowl", moves: str = "top"):
        if top < 1:
            raise ValueError(f"HB expector top must be positive, got {top}")
        if evaluation not in EVALUATIONS:
            raise ValueError(f"expector.evaluation must be one of {EVALUATIONS}, got {evaluation!r}")
        if moves not in HB_MOVES:
            raise ValueError(f"expector.moves must be one of {HB_MOVES}, got {moves!r}")
        super().__init__(game)
        self.evaluator, self.hand, self.top, self.name = evaluator, hand, top, name
        self.evaluation, self.moves = evaluation, moves
        self._types = jitted_piece_types(game)
        self._step = game.batched_step
        self.last_values: list[dict[int, float]] = []
        self.last_centipawns: list[dict[int, float]] = []  # cptowl: Σ q·(our centipawns) per type, the tie-break

    def name_piece_types(self, states: Any, key: jax.Array, active: np.ndarray) -> BrainChoice:
        del key
        host_states, boards = self.boards(states, active)
        batch = host_states.terminated.shape[0]
        types = np.asarray(self._types(states))
        probabilities = np.asarray(self.hand(states))
        named = np.zeros(batch, np.int32)
        self.last_values, self.last_centipawns = [], []
        for lane, board in boards.items():
            values, centipawns = self.type_values(lane_state(host_states, lane), board, types[lane],
                                                  probabilities[lane])
            self.last_values.append(values)
            self.last_centipawns.append(centipawns)
            named[lane] = best_type(values, centipawns if self.evaluation == "cptowl" else None)
        return BrainChoice(piece_type=named, move=np.full(batch, -1, np.int32))

    def select_actions(self, states: Any, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        named = self.name_piece_types(states, key, lanes_to_answer(states, active)).piece_type
        types = np.asarray(self._types(states))
        probabilities = np.where(types == named[:, None], np.asarray(self.hand(states)), -1.0)
        return np.argmax(probabilities, axis=-1).astype(np.int32)

    def weighed_moves(self, types: np.ndarray, probabilities: np.ndarray) -> list[tuple[int, int, float]]:
        """``(piece type, action, q)`` of the moves each type is valued over (``top`` or ``all``), q renormalised
        within the type (uniform where the hand gives the type no mass)."""
        chosen: list[tuple[int, int, float]] = []
        for piece_type in range(1, 7):
            actions = np.flatnonzero(types == piece_type)
            if not len(actions):
                continue
            if self.moves == "top":
                actions = actions[np.argsort(-probabilities[actions], kind="stable")[: self.top]]
            weights = probabilities[actions]
            weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(actions), 1 / len(actions))
            chosen += [(piece_type, int(action), float(q)) for action, q in zip(actions, weights)]
        return chosen

    def type_values(self, state: Any, board: chess.Board, types: np.ndarray,
                    probabilities: np.ndarray) -> tuple[dict[int, float], dict[int, float]]:
        """``({piece type: Σ q(m)·win(m)}, {piece type: Σ q(m)·centipawns(m)})`` over the types with legal moves in
        one position, our view (the centipawns only under ``cptowl``; empty under ``wdl``)."""
        chosen = self.weighed_moves(types, probabilities)
        size = padded_batch(len(chosen), self.top)
        actions = np.array([action for _, action, _ in chosen] + [chosen[0][1]] * (size - len(chosen)), np.int32)
        after = self._step(tile_state(state, size), jnp.asarray(actions))
        over = np.asarray(after.terminated)
        results = mover_result(after, np.full(size, int(state.current_player)))
        values: dict[int, float] = {}
        centipawns: dict[int, float] = {}
        for index, (piece_type, action, q) in enumerate(chosen):
            if self.evaluation == "wdl":  # the evaluator's W/D/L alone, as before cptowl
                if over[index]:
                    win = float(results[index])
                else:
                    move = self.game.action_to_uci(action, state)
                    win = 1 - self.evaluator.win_probability(board_after(board, [move]))
                values[piece_type] = values.get(piece_type, 0.0) + q * win
                continue
            if over[index]:
                ours = result_evaluation(float(results[index]))
            else:
                move = self.game.action_to_uci(action, state)
                ours = self.evaluator.evaluate(board_after(board, [move])).for_opponent()
            values[piece_type] = values.get(piece_type, 0.0) + q * ours.cptowl
            centipawns[piece_type] = centipawns.get(piece_type, 0.0) + q * ours.centipawns
        return values, centipawns

    def new_game(self) -> None:
        super().new_game()
        self.evaluator.new_game()


def padded_batch(count: int, top: int) -> int:
    """Boards the HB expector steps at once for ``count`` moves: a multiple of 6·``top`` (6·top for the top moves;
    all moves take a few compiled sizes, not one per count)."""
    unit = 6 * top
    return unit * max(1, math.ceil(count / unit))


def best_type(values: dict[int, float], centipawns: dict[int, float] | None = None) -> int:
    """The piece type of the highest value; among equal values the highest ``centipawns`` (when given), then the
    first type."""
    if centipawns is None:
        return max(values, key=values.get)
    return max(values, key=lambda piece_type: (values[piece_type], centipawns[piece_type]))


__all__ = ["HB_MOVES", "HbExpector", "SttExpector", "best_type", "mover_result", "padded_batch", "tile_state"]
