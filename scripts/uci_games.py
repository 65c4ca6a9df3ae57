"""Check a UCI engine the way a GUI uses it: complete games and arbitrary positions, all through python-chess.

    python scripts/uci_games.py --engine "python -m alphagateau.uci --random-init" --games 4 --positions 200

plays ``--games`` complete games (colours alternating) against ``--opponent`` (Stockfish at ``Skill Level 0`` by
default), each until python-chess declares the game over — mate, stalemate, insufficient material, the 75-move rule
or fivefold repetition, and the claimable draws (threefold, fifty moves) — and then asks the engine for a move in
``--positions`` positions it has never seen (``position fen ...`` out of the blue: random legal play from the start
position, from each seed, to a random depth, plus fixed positions with castling, en passant and promotions).
python-chess itself refuses an illegal ``bestmove`` (``chess.engine.EngineError``) and notices an engine that dies
(``chess.engine.EngineTerminatedError``): both are counted, reported and stop the check with exit status 1.
The games are written as PGN (``--pgn``); the last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time

import chess
import chess.engine
import chess.pgn

from zerolab import find_engine

SPECIAL_POSITIONS = (
    "r3k2r/pppq1ppp/2np1n2/2b1p1B1/2B1P1b1/2NP1N2/PPPQ1PPP/R3K2R w KQkq - 4 9",  # castling both ways, both sides
    "r3k2r/pppq1ppp/2np1n2/2b1p1B1/2B1P1b1/2NP1N2/PPPQ1PPP/R3K2R b KQkq - 4 9",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant for White
    "rnbqkbnr/pppp1ppp/8/8/3PpP2/8/PPP1P1PP/RNBQKBNR b KQkq f3 0 3",  # en passant for Black
    "8/1P4k1/8/8/8/8/6K1/8 w - - 0 1",  # promotion (all four pieces) for White
    "8/6K1/8/8/8/8/1p4k1/8 b - - 0 1",  # and for Black
    "r1n4k/1P6/8/8/8/8/8/7K w - - 0 1",  # promotion by capture
    "6k1/8/8/8/8/8/8/R3K2R w KQ - 99 80",  # castling both ways, halfmove clock at 99
)


def random_positions(count: int, seed: int) -> list[str]:
    """``count`` FENs of positions that are not over, reached by random legal play from the start position."""
    rng = random.Random(seed)
    fens = []
    while len(fens) < count:
        board = chess.Board()
        for _ in range(rng.randrange(1, 160)):
            if board.is_game_over():
                break
            board.push(rng.choice(list(board.legal_moves)))
        if not board.is_game_over():
            fens.append(board.fen())
    return fens


def play_game(engine, opponent, engine_is_white: bool, engine_limit, opponent_limit, round_number: int):
    board = chess.Board()
    while not board.is_game_over(claim_draw=True):
        engine_to_move = board.turn == (chess.WHITE if engine_is_white else chess.BLACK)
        player, limit = (engine, engine_limit) if engine_to_move else (opponent, opponent_limit)
        result = player.play(board, limit, game=round_number)  # a new game id: python-chess sends ucinewgame
        if result.move is None or result.move not in board.legal_moves:
            raise chess.engine.EngineError(f"{'engine' if engine_to_move else 'opponent'} answered "
                                           f"{result.move} in {board.fen()}")
        board.push(result.move)
    return board


def parse_limit(text: str) -> chess.engine.Limit:
    """``nodes=16``, ``time=0.5`` (seconds per move, UCI ``movetime``) or ``clock=30+0.5`` (UCI ``wtime``/``btime``
    and increments: the same remaining time before every move, so the engine's clock rule is what is tested)."""
    key, _, value = text.partition("=")
    if key == "clock":
        remaining, _, increment = value.partition("+")
        seconds, increment = float(remaining), float(increment or 0)
        return chess.engine.Limit(white_clock=seconds, black_clock=seconds, white_inc=increment,
                                  black_inc=increment)
    if key == "nodes":
        return chess.engine.Limit(nodes=int(value))
    if key == "time":
        return chess.engine.Limit(time=float(value))
    raise SystemExit(f"error: limit {text!r}: expected nodes=N, time=SECONDS or clock=SECONDS[+INCREMENT]")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", required=True, help="the engine's command line (quoted)")
    parser.add_argument("--engine-limit", default="nodes=16", help="nodes=N, time=SECONDS or clock=SECONDS[+INC]")
    parser.add_argument("--opponent", default="stockfish", help="name or path of the opponent engine")
    parser.add_argument("--opponent-option", action="append", default=["Skill Level=0"], metavar="NAME=VALUE")
    parser.add_argument("--opponent-limit", default="nodes=1")
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--positions", type=int, default=100, help="random positions asked out of the blue")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pgn", default="", help="write the games here")
    args = parser.parse_args(argv)

    engine_limit, opponent_limit = parse_limit(args.engine_limit), parse_limit(args.opponent_limit)
    options = dict(option.split("=", 1) for option in args.opponent_option)
    summary = {"engine": args.engine, "opponent": args.opponent, "opponent_options": options, "games": [],
               "positions_asked": 0, "illegal_or_crash": 0}
    started = time.perf_counter()
    engine = chess.engine.SimpleEngine.popen_uci(shlex.split(args.engine), timeout=600)
    opponent = chess.engine.SimpleEngine.popen_uci(find_engine(args.opponent))
    opponent.configure(options)
    try:
        pgn_games = []
        for number in range(args.games):
            engine_is_white = number % 2 == 0
            board = play_game(engine, opponent, engine_is_white, engine_limit, opponent_limit, number)
            outcome = board.outcome(claim_draw=True)
            game = chess.pgn.Game.from_board(board)
            game.headers.update({"White": "engine" if engine_is_white else args.opponent,
                                 "Black": args.opponent if engine_is_white else "engine", "Round": str(number + 1),
                                 "Termination": outcome.termination.name.lower()})
            pgn_games.append(game)
            record = {"engine_white": engine_is_white, "result": board.result(claim_draw=True),
                      "termination": outcome.termination.name.lower(), "plies": len(board.move_stack)}
            summary["games"].append(record)
            print(json.dumps(record), flush=True)
        if args.pgn:
            with open(args.pgn, "w") as stream:
                for game in pgn_games:
                    print(game, file=stream, end="\n\n")
        fens = [*SPECIAL_POSITIONS, *random_positions(args.positions, args.seed)]
        for fen in fens:
            board = chess.Board(fen)
            if not board.is_valid():
                raise SystemExit(f"error: {fen!r} is not a valid position ({board.status()!r})")
            result = engine.play(board, engine_limit)
            if result.move not in board.legal_moves:
                raise chess.engine.EngineError(f"engine answered {result.move} in {fen}")
            summary["positions_asked"] += 1
    except chess.engine.EngineError as error:  # EngineTerminatedError included
        summary["illegal_or_crash"] += 1
        summary["error"] = str(error)
    finally:
        for process in (engine, opponent):
            try:
                process.quit()
            except chess.engine.EngineError:
                pass
    summary["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(summary))
    return 1 if summary["illegal_or_crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
