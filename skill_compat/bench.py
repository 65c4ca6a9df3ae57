"""Benchmarks (not tests): evaluator calls/s, expector seconds per move, framework moves/s jitted vs host.

``python -m skill_compat.bench [--nodes 5000] [--eval-nodes 400] [--simulations 16] [--games 8] [--plies 16]``

* evaluator: Stockfish W/D/L win probabilities at ``--nodes`` on the positions of a maia-vs-maia game;
* expector: :class:`~skill_compat.expectors.SttExpector` (S at ``--senior-nodes``, evaluations at ``--eval-nodes``)
  on the same positions;
* framework moves/s: STT games of maia + Gumbel search (``--simulations``) with the maia junior on both sides,
  ``--games`` lanes × ``--plies`` plies, through the core's jitted self-play scan (the attuned rule) and through the
  host (the core's arena with the same players as :class:`zerolab.SearchAgent` / :class:`zerolab.PolicyAgent`
  calls).
  Each path runs twice; the second (compiled) run is reported.
"""

from __future__ import annotations

import argparse
import json
import time

import chess
import jax

from skill_compat.attuned import stt_lane_rule, stt_move_rule
from skill_compat.frameworks import draw_bitstrings, game_pairing
from skill_compat.oracle import StockfishOracle
from skill_compat.expectors import SttExpector
from skill_compat.players import NetworkPlayer
from skill_compat.teams import SttTeam, play_framework_games
from zerolab import PolicyAgent, SearchAgent, SearchConfig, SelfPlayConfig, load_lc0_weights, make_game, make_play_fn


def timed(function, repeats: int = 2) -> float:
    seconds = 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        seconds = time.perf_counter() - started
    return seconds


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m skill_compat.bench", description=__doc__)
    parser.add_argument("--engine", default="stockfish")
    parser.add_argument("--nodes", type=int, default=5000, help="evaluator nodes")
    parser.add_argument("--senior-nodes", type=int, default=2000)
    parser.add_argument("--eval-nodes", type=int, default=400)
    parser.add_argument("--positions", type=int, default=20)
    parser.add_argument("--simulations", type=int, default=16)
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--plies", type=int, default=16)
    args = parser.parse_args(argv)

    game = make_game("chess", observation="lc0")
    network, variables = load_lc0_weights()
    junior = PolicyAgent(network, variables, game, mode="argmax", name="maia")
    team = SttTeam("maia", NetworkPlayer(junior), NetworkPlayer(junior))
    positions = play_framework_games(game, team, team, game_pairing(2), jax.random.key(0), args.positions)[0]
    boards, states = [], []
    board, state = chess.Board(), game.init(jax.random.key(0))
    step = game.jitted_step
    for move in positions.moves:
        boards.append(board.copy())
        states.append(state)
        board.push_uci(move)
        state = step(state, game.uci_to_action(move, state))
    results: dict[str, float] = {}

    evaluator = StockfishOracle(args.engine, args.nodes)
    seconds = timed(lambda: [evaluator.win_probability(b) for b in boards], repeats=1)
    results["evaluator_calls_per_s"] = len(boards) / seconds
    senior = StockfishOracle(args.engine, args.senior_nodes)
    expector = SttExpector(game, senior, senior.with_nodes(args.eval_nodes),
                           lambda s: junior.select_actions(s, jax.random.key(0)))
    expector.choose(states[0], boards[0])  # compiles
    seconds = timed(lambda: [expector.choose(s, b) for s, b in zip(states, boards)], repeats=1)
    results["expector_seconds_per_move"] = seconds / len(boards)
    evaluator.close()
    senior.close()

    search = SearchConfig(num_simulations=args.simulations, gumbel_scale=0.0)
    rule = stt_move_rule(game, network, search, variables, args.plies)
    selfplay = SelfPlayConfig(num_games=args.games, plies_per_iteration=args.plies, max_game_plies=args.plies)
    play = jax.jit(make_play_fn(game, rule, selfplay, stt_lane_rule(game, args.plies)), static_argnums=2)
    seconds = timed(lambda: jax.block_until_ready(play(variables, jax.random.key(1), args.games, variables)))
    results["jitted_moves_per_s"] = args.games * args.plies / seconds
    tree = SearchAgent("tree", game, network, variables, search)
    host_team = SttTeam("tree", NetworkPlayer(tree), NetworkPlayer(junior))
    bits = draw_bitstrings(0, args.games // 2, args.plies)
    seconds = timed(lambda: play_framework_games(game, host_team, host_team, game_pairing(args.games),
                                                 jax.random.key(1), args.plies, bitstrings=bits))
    results["host_moves_per_s"] = args.games * args.plies / seconds
    results.update(vars(args))
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
