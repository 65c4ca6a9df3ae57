"""Per-move records (``moves.jsonl``) with the evaluator's losses, and a matchup's resumable game files.

Each move record (one JSON line) holds: ``game``, ``ply``, ``fen`` (before the move), ``move``, ``colour``, ``team``
(``focal``/``alter``), ``team_name``, ``role`` (``senior``/``junior`` in STT, ``hand`` in HB), ``player``; STT:
``bits_before`` (the game's bits of the earlier plies, oldest first); HB: ``named_type``, ``brain_move``, ``h0``,
``interaction``.  :func:`evaluate_game` adds, by the evaluator E and from the mover's view:

* ``w_before``: win probability before the move; ``w_after``: after it (the game's result when pgx ended it there);
* ``signed_loss`` = 100·(w_before − w_after) and ``loss`` = max(0, signed_loss) (the paper's 0–100 scale);
* HB: ``w_after_h0`` / ``loss_h0`` / ``signed_loss_h0`` for the hand's free draw h0 (equal to the played move's when
  h0 was played).

A matchup directory holds ``games.jsonl`` (one line per finished, evaluated game) and ``moves.jsonl``; rerunning
keeps the games found there (:class:`MatchupFiles`).  :func:`game_record` turns a stored game back into the core's
:class:`zerolab.GameRecord` (annotated moves, the bitstring as a header), which :func:`zerolab.games.write_games`
writes as PGN.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterable

import chess

from skill_compat.oracle import Oracle, board_after
from skill_compat.teams import FrameworkGame
from zerolab import GameRecord

#: the fields of a move row that its PGN comment shows (None values are left out)
COMMENT_FIELDS = ("team_name", "role", "player", "named_type", "brain_move", "h0", "interaction")


def _loss_fields(w_before: float, w_after: float, suffix: str = "") -> dict:
    signed = 100.0 * (w_before - w_after)
    return {f"w_after{suffix}": w_after, f"signed_loss{suffix}": signed, f"loss{suffix}": max(0.0, signed)}


def evaluate_game(game: FrameworkGame, evaluator: Oracle) -> list[dict]:
    """The game's move records with the evaluator's fields (see the module docstring); one evaluation per position
    (the position after move t is the one before move t + 1), plus one per HB move whose h0 was not played."""
    board = chess.Board()
    before = []
    for record in game.records:
        before.append(evaluator.win_probability(board))
        board.push_uci(record["move"])
    evaluated = []
    for index, record in enumerate(game.records):
        last = index == len(game.records) - 1
        if not last:
            w_after = 1.0 - before[index + 1]
        elif not game.capped:  # pgx ended the game with this move: its result, mover's view
            focal_moved = record["team"] == "focal"
            w_after = game.focal_score if focal_moved else 1.0 - game.focal_score
        else:
            w_after = 1.0 - evaluator.win_probability(board)
        fields = {"w_before": before[index], **_loss_fields(before[index], w_after)}
        if record.get("role") == "hand" and record.get("h0"):
            if record["h0"] == record["move"]:
                fields.update(_loss_fields(before[index], w_after, "_h0"))
            else:
                position = board_after(chess.Board(), [r["move"] for r in game.records[:index]])
                w_h0 = 1.0 - evaluator.win_probability(board_after(position, [record["h0"]]))
                fields.update(_loss_fields(before[index], w_h0, "_h0"))
        evaluated.append({**record, **fields})
    return evaluated


def game_record(game: dict, moves: Iterable[dict], focal: str, alter: str) -> GameRecord:
    """A stored game (its ``games.jsonl`` row and ``moves.jsonl`` rows) as a core game record: White is the team
    that moved first, each move annotated with its :data:`COMMENT_FIELDS`, an STT game's bits of its plies as the
    ``Bitstring`` header."""
    rows = sorted(moves, key=lambda row: row["ply"])
    first, second = (focal, alter) if game["focal_is_white"] else (alter, focal)
    score = game["focal_score"] if game["focal_is_white"] else 1.0 - game["focal_score"]
    headers = {"Bitstring": game["bitstring"][: game["plies"]]} if game.get("bitstring") else {}
    return GameRecord(first, second, [row["move"] for row in rows], score, game["plies"], game["capped"],
                      annotations=[{field: row.get(field) for field in COMMENT_FIELDS} for row in rows],
                      headers=headers)


class MatchupFiles:
    """``DIR/games.jsonl`` and ``DIR/moves.jsonl`` of one matchup, appended game by game; rerunning keeps the games
    found (moves of games without a ``games.jsonl`` line, from an interrupted write, are dropped)."""

    def __init__(self, directory: str | pathlib.Path):
        self.directory = pathlib.Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.games_path = self.directory / "games.jsonl"
        self.moves_path = self.directory / "moves.jsonl"
        self._repair()

    def _repair(self) -> None:
        games = self.games()
        if self.games_path.exists():  # a torn last line (killed mid-write) is dropped
            self.games_path.write_text("".join(json.dumps(game) + "\n" for game in games))
        done = {game["game"] for game in games}
        if self.moves_path.exists():
            kept = [line for line in self.moves_path.read_text().splitlines()
                    if line.strip() and _complete_json(line) and json.loads(line)["game"] in done]
            self.moves_path.write_text("".join(line + "\n" for line in kept))

    def games(self) -> list[dict]:
        if not self.games_path.exists():
            return []
        lines = [line for line in self.games_path.read_text().splitlines() if line.strip() and _complete_json(line)]
        return [json.loads(line) for line in lines]

    def moves(self) -> list[dict]:
        if not self.moves_path.exists():
            return []
        return [json.loads(line) for line in self.moves_path.read_text().splitlines() if line.strip()]

    def done(self) -> set[int]:
        return {game["game"] for game in self.games()}

    def append(self, game: FrameworkGame, moves: Iterable[dict]) -> None:
        with self.moves_path.open("a") as file:
            file.writelines(json.dumps(move) + "\n" for move in moves)
        with self.games_path.open("a") as file:
            file.write(json.dumps(game.summary()) + "\n")


def _complete_json(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True


__all__ = ["COMMENT_FIELDS", "MatchupFiles", "evaluate_game", "game_record"]
