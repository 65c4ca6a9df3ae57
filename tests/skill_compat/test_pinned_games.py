"""Framework games through the core's arena are the games the retired host driver played: the same seeds give the
same moves, scores and per-move records (roles, hand draws, named types, interactions), bit for bit.

``data/framework_games.json`` was recorded with ``skill_compat.driver.play_framework_games`` before the frameworks
moved onto ``zerolab.play.play_games`` (the commit is in the file): maia-1900 (argmax junior, T = 1 hand) and Stockfish
at 100 nodes; STT games 2 and 3 (the second bitstring of seed 7, both colours, capped at 40 plies) and HB games 0 and
1 (hand seed 3, Stockfish's move names the type against the hand alone, at most 80 plies: one won, one lost).  Each game is pinned by its
moves, score, length and a SHA-256 of its ``moves.jsonl`` rows.  (A batch's games depend on its size: maia's
batched policy is not bit-identical across batch sizes, so the batches here are the recorded ones.)
"""

from __future__ import annotations

import hashlib
import json
import pathlib

import jax
import pytest

from skill_compat import frameworks
from skill_compat.experiment import maia_agents
from skill_compat.oracle import StockfishOracle
from skill_compat.players import EnginePlayer, MoveBrain, NetworkPlayer
from skill_compat.teams import HbTeam, SttTeam, play_framework_games

PINNED = json.loads((pathlib.Path(__file__).parent / "data" / "framework_games.json").read_text())


@pytest.fixture(scope="module")
def players(stockfish_path):
    game, junior, hand, _ = maia_agents("", "argmax")
    stockfish = StockfishOracle(stockfish_path, nodes=PINNED["stockfish_nodes"])
    yield game, stockfish, NetworkPlayer(junior, name="maia"), hand
    stockfish.close()


def pinned_view(games) -> list[dict]:
    return [{"index": game.index, "focal_is_white": game.focal_is_white, "moves": " ".join(game.moves),
             "focal_score": game.focal_score, "plies": game.plies, "capped": game.capped,
             "records_sha256": hashlib.sha256(json.dumps(game.records, sort_keys=True).encode()).hexdigest()}
            for game in games]


def test_stt_games_are_the_pinned_ones(players):
    game, stockfish, maia, _ = players
    senior = EnginePlayer(stockfish, game)
    bits = frameworks.draw_bitstrings(PINNED["stt_bitstring_seed"], 2, PINNED["stt_plies"])
    games = play_framework_games(game, SttTeam("focal", senior, maia), SttTeam("alter", senior, maia),
                                 [frameworks.GameSlot(index) for index in PINNED["stt_games"]],
                                 jax.random.key(PINNED["key"]), PINNED["stt_plies"], bitstrings=bits)
    assert pinned_view(games) == PINNED["stt"]


def test_hb_games_are_the_pinned_ones(players):
    game, stockfish, _, hand = players
    brain = MoveBrain(EnginePlayer(stockfish, game), game, name="stockfish")
    games = play_framework_games(game, HbTeam("focal", brain, hand, game), HbTeam("alone", None, hand, game),
                                 [frameworks.GameSlot(index) for index in PINNED["hb_games"]],
                                 jax.random.key(PINNED["key"]), PINNED["hb_plies"], hand_seed=PINNED["hb_hand_seed"])
    assert pinned_view(games) == PINNED["hb"]
    assert [(game.focal_score, game.capped) for game in games] == [(1.0, False), (0.0, False)]  # decided by pgx
