"""Independent checks of written game records: every move replayed by another move generator (python-chess for 8×8,
Fairy-Stockfish's ``pyffish`` for Gardner chess) and the ``Result`` header checked against the final position."""

from __future__ import annotations

import io
import pathlib
import re

import chess
import chess.pgn

HEADER = re.compile(r'^\[(\w+) "(.*)"\]$')
RESULTS = ("1-0", "0-1", "1/2-1/2")
COMMENT = re.compile(r"\{[^}]*\}")


def read_gardner_pgn(path: str | pathlib.Path) -> list[tuple[dict[str, str], list[str]]]:
    """``[(headers, uci_moves)]`` of a long-algebraic Gardner PGN file (move numbers, ``{comments}`` and the result
    token dropped)."""
    games, headers, moves = [], {}, []
    for line in pathlib.Path(path).read_text().splitlines():
        match = HEADER.match(line.strip())
        if match:
            if moves:
                games.append((headers, moves))
                headers, moves = {}, []
            headers[match.group(1)] = match.group(2)
        elif line.strip():
            tokens = COMMENT.sub(" ", line).split()
            moves += [token for token in tokens if not token.endswith(".") and token not in RESULTS]
    if headers:
        games.append((headers, moves))
    return games


def check_gardner_game(headers: dict[str, str], moves: list[str]) -> None:
    """Each move legal under Fairy-Stockfish's Gardner rules; the result agrees with the final position."""
    import pyffish

    fen = headers["FEN"]
    for ply, move in enumerate(moves):
        legal = pyffish.legal_moves("gardner", fen, moves[:ply])
        assert move in legal, f"ply {ply + 1}: {move} is not legal after {moves[:ply]} (legal: {legal})"
    assert int(headers["PlyCount"]) == len(moves)
    final_moves_left = pyffish.legal_moves("gardner", fen, moves)
    in_check = pyffish.gives_check("gardner", fen, moves)
    result = headers["Result"]
    if not final_moves_left and in_check:
        white_moved_last = (len(moves) % 2 == 1) == (fen.split()[1] == "w")
        assert result == ("1-0" if white_moved_last else "0-1"), f"checkmate but Result {result} after {moves}"
    elif headers.get("Termination") == "ply limit (adjudicated draw)":
        assert result == "1/2-1/2" and final_moves_left
    else:
        assert result == "1/2-1/2", f"Result {result} without a checkmate after {moves}"
        # pgx ends a game as a draw on stalemate, insufficient material, repetition or the 50-move rule
        ended, _ = pyffish.is_optional_game_end("gardner", fen, moves)
        insufficient = all(pyffish.has_insufficient_material("gardner", fen, moves))
        assert not final_moves_left or ended or insufficient, f"a draw the final position does not explain: {moves}"


def read_chess_pgn(path: str | pathlib.Path) -> list[chess.pgn.Game]:
    games, text = [], io.StringIO(pathlib.Path(path).read_text())
    while (game := chess.pgn.read_game(text)) is not None:
        assert not game.errors, game.errors
        games.append(game)
    return games


def check_chess_game(game: chess.pgn.Game) -> None:
    """python-chess replays the moves; the result agrees with the final position."""
    board = game.board()
    for move in game.mainline_moves():
        assert board.is_legal(move), f"{move} is not legal in {board.fen()}"
        board.push(move)
    assert int(game.headers["PlyCount"]) == board.ply() - game.board().ply()
    result = game.headers["Result"]
    if board.is_checkmate():
        assert result == ("0-1" if board.turn == chess.WHITE else "1-0")
    elif game.headers.get("Termination") == "ply limit (adjudicated draw)":
        assert result == "1/2-1/2"
    else:
        assert result == "1/2-1/2"
        assert board.is_game_over(claim_draw=True), f"a draw the final position does not explain: {board.fen()}"


def check_game_file(path: str | pathlib.Path) -> int:
    """Checks every game of a PGN file (Gardner when its games say ``Variant "Gardner"``); returns their number."""
    path = pathlib.Path(path)
    if '[Variant "Gardner"]' in path.read_text():
        games = read_gardner_pgn(path)
        for headers, moves in games:
            check_gardner_game(headers, moves)
        return len(games)
    games = read_chess_pgn(path)
    for game in games:
        check_chess_game(game)
    return len(games)
