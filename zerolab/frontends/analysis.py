"""A JSON analysis engine for any checkpoint, in the shape of KataGo's: many positions in, batched on the accelerator.

::

    python -m zerolab analysis --checkpoint RUN [--step S] [--visits N] [--max-batch B] [search.KEY=VALUE ...]

reads one JSON query a line on standard input and writes one JSON response a line for every position it analyses
(KataGo's analysis engine: ``id``, ``turnNumber``, ``moveInfos``, ``rootInfo``).  A query gives positions either as a
game (KataGo's shape) or as a list:

* ``{"id": "g", "moves": ["e2e4", "e7e5"], "initialPosition": FEN, "analyzeTurns": [0, 2], "maxVisits": 64}`` —
  the position after each listed number of moves (``analyzeTurns``, default: after all of them) from
  ``initialPosition`` (default: the game's start);
* ``{"id": "p", "positions": [FEN, FEN, ...], "maxVisits": 64}`` — each position on its own (``turnNumber`` is then
  its index in the list).

Positions are the game's texts: a FEN for chess and Gardner chess, GTP vertices from the empty board for Go
(:meth:`zerolab.games.Game.from_fen`); moves are the game's move texts (UCI, GTP vertices).  Every position of a query
is searched in one batch (``--max-batch`` at a time; batches are padded to a power of two so that few programs are
compiled), with the run's search and play defaults (no root noise:
:data:`zerolab.frontends.loaded_search.PLAY_SEARCH_DEFAULTS`).

Each response's ``moveInfos`` lists the root's searched moves, most visited first: ``move``, ``visits``, ``value``
(the move's searched Q for the side to move, in [−1, 1]), ``winrate`` ((value + 1) / 2), ``prior`` (the network's
probability), ``order`` and ``pv`` (the move, then the most visited child at each node, as far as the tree goes);
chess adds ``scoreCp`` (lc0's centipawn map).  ``rootInfo`` has ``visits``, ``value``, ``rawValue`` (the network's)
and ``winrate``.  A query that cannot be read is answered by ``{"id", "error", "field"}`` naming the field and what was
expected, and the engine goes on; ``{"id", "action": "query_version"}`` answers the engine's name.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

import numpy as np

ENGINE_NAME = "zerolab-analysis"
DEFAULT_MAX_BATCH = 64
MAXIMUM_VISITS = 100_000
PRINCIPAL_VARIATION_LENGTH = 32


class QueryError(ValueError):
    """A query that cannot be answered: ``field`` names the part at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclasses.dataclass(frozen=True)
class Position:
    """One position to analyse: its number in the answer (``turnNumber``), its text and the pgx state."""

    turn: int
    text: str
    state: Any


def positions_of(query: Mapping[str, Any], game: Any) -> list[Position]:
    """The positions a query asks for (see the module docstring); a bad field is a :class:`QueryError` naming it."""
    if "positions" in query:
        texts = query["positions"]
        if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
            raise QueryError("positions", "positions must be a non-empty list of position texts (FENs for chess)")
        return [Position(index, text, state_of(game, text, f"positions[{index}]")) for index, text in enumerate(texts)]
    moves = query.get("moves", [])
    if not isinstance(moves, list) or not all(isinstance(move, str) for move in moves):
        raise QueryError("moves", "moves must be a list of move texts (UCI for chess, GTP vertices for Go)")
    initial = query.get("initialPosition")
    if initial is not None and not isinstance(initial, str):
        raise QueryError("initialPosition", "initialPosition must be a position text (a FEN for chess)")
    turns = query.get("analyzeTurns", [len(moves)])
    if (not isinstance(turns, list) or not turns
            or not all(isinstance(turn, int) and 0 <= turn <= len(moves) for turn in turns)):
        raise QueryError("analyzeTurns", f"analyzeTurns must be a non-empty list of move counts from 0 to "
                                         f"{len(moves)} (the moves given), got {turns!r}")
    if initial is None:
        import jax

        state = game.init(jax.random.key(0))
    else:
        state = state_of(game, initial, "initialPosition")
    texts = [initial or "startpos"]
    states = [state]
    for index, move in enumerate(moves[:max(turns)]):
        if bool(state.terminated):
            raise QueryError(f"moves[{index}]", f"move {index + 1} ({move!r}) comes after the game has ended")
        try:
            action = game.text_to_action(move, state)
        except ValueError as error:
            raise QueryError(f"moves[{index}]", f"move {index + 1}: {error}") from None
        state = game.jitted_step(state, np.int32(action))
        states.append(state)
        texts.append(f"{texts[0]} moves {' '.join(moves[:index + 1])}")
    return [Position(turn, texts[turn], states[turn]) for turn in turns]


def state_of(game: Any, text: str, field: str) -> Any:
    try:
        return game.from_fen(text)
    except ValueError as error:
        raise QueryError(field, str(error)) from None


def visits_of(query: Mapping[str, Any], default: int) -> int:
    visits = query.get("maxVisits", default)
    if not isinstance(visits, int) or isinstance(visits, bool) or not 1 <= visits <= MAXIMUM_VISITS:
        raise QueryError("maxVisits", f"maxVisits must be an integer from 1 to {MAXIMUM_VISITS}, got {visits!r}")
    return visits


def bucket(size: int, maximum: int) -> int:
    """The batch a search of ``size`` positions is padded to: the next power of two, at most ``maximum``."""
    return min(1 << max(size - 1, 0).bit_length(), maximum)


def principal_variation(tree: Mapping[str, np.ndarray], node: int, length: int) -> list[int]:
    """Actions from ``node`` down, the most visited child at each node (host arrays of one tree)."""
    actions = []
    while node >= 0 and len(actions) < length:
        visits = tree["children_visits"][node]
        slot = int(np.argmax(visits))
        if visits[slot] <= 0:
            break
        actions.append(int(tree["children_actions"][node, slot]))
        node = int(tree["children_index"][node, slot])
    return actions


def describe_root(tree: Mapping[str, np.ndarray], game: Any, state: Any, value_to_centipawns: Callable | None,
                  ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(moveInfos, rootInfo)`` of one searched tree (host arrays, root at node 0)."""
    actions, visits = tree["children_actions"][0], tree["children_visits"][0]
    valid = actions >= 0
    logits = np.where(valid, tree["children_prior_logits"][0].astype(np.float64), -np.inf)
    priors = np.exp(logits - logits[valid].max())
    priors /= priors.sum()
    qvalues = tree["children_rewards"][0] + tree["children_discounts"][0] * tree["children_values"][0]
    order = sorted(np.flatnonzero(valid & (visits > 0)), key=lambda slot: (-visits[slot], -priors[slot]))
    infos = []
    for rank, slot in enumerate(order):
        variation = [int(actions[slot])] + principal_variation(tree, int(tree["children_index"][0, slot]),
                                                               PRINCIPAL_VARIATION_LENGTH - 1)
        info = {"move": game.action_to_text(int(actions[slot]), state), "visits": int(visits[slot]),
                "value": float(qvalues[slot]), "winrate": float((qvalues[slot] + 1) / 2),
                "prior": float(priors[slot]), "order": rank, "pv": variation_texts(game, state, variation)}
        if value_to_centipawns is not None:
            info["scoreCp"] = value_to_centipawns(float(qvalues[slot]))
        infos.append(info)
    value = float(tree["node_values"][0])
    root = {"visits": int(tree["node_visits"][0]), "value": value, "rawValue": float(tree["raw_values"][0]),
            "winrate": (value + 1) / 2}
    if value_to_centipawns is not None:
        root["scoreCp"] = value_to_centipawns(value)
    return infos, root


def variation_texts(game: Any, state: Any, actions: Sequence[int]) -> list[str]:
    """The move texts of ``actions`` played from ``state`` (cut where the game ends)."""
    texts = []
    for action in actions:
        if bool(state.terminated):
            break
        texts.append(game.action_to_text(action, state))
        state = game.jitted_step(state, np.int32(action))
    return texts


TREE_FIELDS = ("children_actions", "children_visits", "children_index", "children_prior_logits", "children_rewards",
               "children_discounts", "children_values", "node_values", "node_visits", "raw_values")


class AnalysisEngine:
    """Batched searches of many positions with one network (see the module docstring).

    Args:
      game, network, variables, search: what to search with (:class:`zerolab.frontends.loaded_search.LoadedSearch`'s
        fields, or a :class:`zerolab.play.search_agents.SearchAgent`'s).
      max_batch: the most positions searched at once.
      seed: seed of the search keys.
    """

    def __init__(self, game: Any, network: Any, variables: Any, search: Any, max_batch: int = DEFAULT_MAX_BATCH,
                 seed: int = 0, name: str = ENGINE_NAME):
        import jax

        if max_batch < 1:
            raise ValueError(f"--max-batch must be at least 1, got {max_batch}")
        self.game, self.network, self.variables, self.search = game, network, variables, search
        self.max_batch = int(max_batch)
        self.key = jax.random.key(seed)
        self.name = name
        self._programs: dict[tuple[int, int], Callable] = {}
        self.centipawns = None
        if getattr(game, "board_size", None) == 8:
            from zerolab.frontends.search_report import value_to_centipawns

            self.centipawns = value_to_centipawns

    def program(self, batch: int, visits: int) -> Callable:
        """The compiled search of ``batch`` positions at ``visits`` simulations (kept)."""
        import jax

        from zerolab.search.mcts import run_search

        if (batch, visits) not in self._programs:
            config = dataclasses.replace(self.search, num_simulations=visits)
            game, network = self.game, self.network

            def search(variables, key, states):
                tree = run_search(config, game, network, variables, key, states, keep_tree=True).tree
                return {field: getattr(tree, field) for field in TREE_FIELDS}

            self._programs[batch, visits] = jax.jit(search)
        return self._programs[batch, visits]

    def analyse(self, positions: Sequence[Position], visits: int) -> list[tuple[list[dict], dict]]:
        """``(moveInfos, rootInfo)`` of each position, searched ``max_batch`` at a time."""
        import jax

        answers = []
        for start in range(0, len(positions), self.max_batch):
            chunk = positions[start:start + self.max_batch]
            size = bucket(len(chunk), self.max_batch)
            states = [position.state for position in chunk] + [chunk[0].state] * (size - len(chunk))
            batch = jax.tree.map(lambda *leaves: np.stack(leaves), *states)
            self.key, key = jax.random.split(self.key)
            trees = jax.device_get(self.program(size, visits)(self.variables, key, batch))
            for index, position in enumerate(chunk):
                one = {field: np.asarray(array[index]) for field, array in trees.items()}
                answers.append(describe_root(one, self.game, position.state, self.centipawns))
        return answers

    def answer(self, line: str) -> list[dict[str, Any]]:
        """The responses to one query line."""
        try:
            query = json.loads(line)
        except json.JSONDecodeError as error:
            return [{"error": f"the query is not JSON: {error}", "field": ""}]
        if not isinstance(query, dict):
            return [{"error": "a query is a JSON object", "field": ""}]
        identifier = query.get("id")
        if query.get("action") == "query_version":
            return [{"id": identifier, "action": "query_version", "version": self.name}]
        try:
            if "id" not in query:
                raise QueryError("id", "a query needs an 'id', echoed in its responses")
            visits = visits_of(query, int(self.search.num_simulations))
            positions = positions_of(query, self.game)
            for position in positions:
                if bool(position.state.terminated):
                    raise QueryError("turnNumber" if "moves" in query else f"positions[{position.turn}]",
                                     f"the game is over in position {position.turn} ({position.text})")
            started = time.perf_counter()
            answers = self.analyse(positions, visits)
        except QueryError as error:
            return [{"id": identifier, "error": str(error), "field": error.field}]
        seconds = time.perf_counter() - started
        return [{"id": identifier, "turnNumber": position.turn, "isDuringSearch": False, "moveInfos": infos,
                 "rootInfo": root, "searchSeconds": seconds}
                for position, (infos, root) in zip(positions, answers)]

    def serve(self, input_stream: TextIO, output_stream: TextIO) -> None:
        """Answers queries from ``input_stream`` until its end."""
        for line in input_stream:
            if not line.strip():
                continue
            for response in self.answer(line):
                output_stream.write(json.dumps(response, allow_nan=False, default=_finite) + "\n")
            output_stream.flush()


def _finite(value: Any) -> Any:
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def checkpoint_engine(path: str, step: int | None = None, visits: int | None = None,
                      overrides: Mapping[str, str] | None = None, max_batch: int = DEFAULT_MAX_BATCH,
                      seed: int = 0) -> AnalysisEngine:
    """The analysis engine of a run's checkpoint, in the run's own game (chess, Gardner chess, Go), with its search
    and play defaults (:func:`zerolab.frontends.loaded_search.play_search`)."""
    from zerolab.frontends.loaded_search import play_search
    from zerolab.play.search_agents import load_search_agent

    agent = load_search_agent(path, {} if step is None else {"step": str(step)})
    search = play_search(agent.search_config, visits, dict(overrides or {}))
    return AnalysisEngine(agent.game, agent.network, agent.variables, search, max_batch, seed,
                          name=f"{ENGINE_NAME} {agent.name}")


def main(args: Any, input_stream: TextIO = sys.stdin, output_stream: TextIO = sys.stdout) -> int:
    """``python -m zerolab analysis`` (arguments from :mod:`zerolab.frontends.cli`)."""
    from zerolab.devices import use_compilation_cache

    if args.visits is not None and not 1 <= args.visits <= MAXIMUM_VISITS:
        raise ValueError(f"analysis: --visits must be from 1 to {MAXIMUM_VISITS}, got {args.visits}")
    if args.compilation_cache:
        use_compilation_cache(args.compilation_cache, min_compile_seconds=0.0)
    engine = checkpoint_engine(args.checkpoint, args.step, args.visits, args.overrides, args.max_batch, args.seed)
    engine.serve(input_stream, output_stream)
    return 0


__all__ = ["AnalysisEngine", "Position", "QueryError", "bucket", "checkpoint_engine", "describe_root",
           "positions_of", "principal_variation"]
