"""``python -m distill.data generate|annotate|build|puzzles``: the searchless-chess data pipeline, step by step.

  generate   play diverse games with Stockfish (random openings, mixed skill levels, some random moves) and
             write them as PGN files in chunks; resumable.
  annotate   read PGN files (generated, or your own, e.g. Lichess dumps), de-duplicate the boards and have
             Stockfish score the board and every legal move as a win probability; several processes,
             resumable, unreadable games and failed boards reported with their location and skipped.
  build      split the annotated boards by game into train/test and write ArrayRecord files for the loader.
  puzzles    make a small Lichess-format puzzle CSV of forced mates found by Stockfish in PGN games.

Run ``python -m distill.data STEP --help`` for each step's options.
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import pathlib
import sys
from collections.abc import Sequence

EPILOG = "A rerun with the same arguments continues an interrupted run; other arguments need another directory."


def _pgn_files(patterns: Sequence[str]) -> list[pathlib.Path]:
    paths: list[pathlib.Path] = []
    for pattern in patterns:
        path = pathlib.Path(pattern)
        if path.is_dir():
            paths.extend(sorted(path.glob("*.pgn")))
        else:
            matches = sorted(glob.glob(pattern))
            if not matches:
                raise FileNotFoundError(f"no PGN file matches {pattern!r}")
            paths.extend(pathlib.Path(match) for match in matches)
    if not paths:
        raise FileNotFoundError(f"no PGN files in {list(patterns)}")
    return paths


def _generate(arguments: argparse.Namespace) -> dict:
    from distill.data.generate import GenerationSettings, generate

    settings = GenerationSettings(
        num_games=arguments.games, engine=arguments.engine, skill_levels=tuple(arguments.skill_levels),
        nodes_per_move=arguments.nodes, max_random_opening_plies=arguments.random_opening_plies,
        random_move_probability=arguments.random_move_probability, max_game_plies=arguments.max_game_plies,
        games_per_chunk=arguments.games_per_chunk, seed=arguments.seed)
    paths = generate(settings, arguments.output, num_workers=arguments.workers)
    return {"pgn_files": [str(path) for path in paths]}


def _annotate(arguments: argparse.Namespace) -> dict:
    from distill.data.annotate import AnnotationSettings, annotate

    settings = AnnotationSettings(engine=arguments.engine, nodes_per_move=arguments.nodes_per_move,
                                  time_per_move=arguments.time_per_move, hash_megabytes=arguments.hash,
                                  positions_per_chunk=arguments.positions_per_chunk)
    report = annotate(_pgn_files(arguments.pgn), arguments.output, settings, num_workers=arguments.workers)
    return {**report, "position_problems_this_run": len(report["position_problems_this_run"])}


def _build(arguments: argparse.Namespace) -> dict:
    from distill.data.build import build

    return build(arguments.annotations, arguments.output, test_fraction=arguments.test_fraction, seed=arguments.seed,
                 mirror_train=arguments.mirror_train)


def _puzzles(arguments: argparse.Namespace) -> dict:
    import chess.engine

    from distill.puzzles import make_mate_puzzles, write_puzzles
    from zerolab import UCIEngine

    with UCIEngine(f"{arguments.engine}:threads=1") as engine:
        puzzles = make_mate_puzzles(_pgn_files(arguments.pgn), engine, chess.engine.Limit(nodes=arguments.nodes),
                                    arguments.count, max_mate=arguments.max_mate)
    write_puzzles(arguments.output, puzzles)
    return {"puzzles": len(puzzles), "output": str(arguments.output)}


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m distill.data", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    steps = root.add_subparsers(dest="step", required=True)

    generate = steps.add_parser(
        "generate", epilog=EPILOG, help="play games with Stockfish into PGN files",
        description="Play games for the dataset: each opens with 0..R random plies, then each side is Stockfish at "
                    "a skill level drawn from --skill-levels, with a random move instead of Stockfish's with "
                    "probability --random-move-probability. Writes OUTPUT/chunk-*.pgn and OUTPUT/progress.json.")
    generate.add_argument("--output", required=True, type=pathlib.Path, help="directory for the PGN chunks")
    generate.add_argument("--games", type=int, required=True, help="number of games")
    generate.add_argument("--engine", default="stockfish", help="Stockfish name or path (default: stockfish)")
    generate.add_argument("--skill-levels", type=int, nargs="+", default=[0, 3, 6, 10, 20])
    generate.add_argument("--nodes", type=int, default=2000, help="Stockfish nodes per move")
    generate.add_argument("--random-opening-plies", type=int, default=8, help="at most this many random plies first")
    generate.add_argument("--random-move-probability", type=float, default=0.05)
    generate.add_argument("--max-game-plies", type=int, default=240,
                          help="games stop (unfinished) after this many plies")
    generate.add_argument("--games-per-chunk", type=int, default=4)
    generate.add_argument("--workers", type=int, default=2, help="processes, one Stockfish per skill level each")
    generate.add_argument("--seed", type=int, default=0)
    generate.set_defaults(run=_generate)

    annotate = steps.add_parser(
        "annotate", epilog=EPILOG, help="score every board and legal move with Stockfish",
        description="Read the games, drop duplicate boards, and search each board once with MultiPV = number of "
                    "legal moves, giving the board's value and every move's value as the win probability "
                    "sigmoid(0.00368208 * cp) of the side to move (mate = 1 or 0). The search budget is the "
                    "per-move budget times the number of moves. Writes OUTPUT/positions.jsonl, OUTPUT/chunk-*.jsonl "
                    "and OUTPUT/progress.json.")
    annotate.add_argument("pgn", nargs="+", help="PGN files, globs or directories of *.pgn")
    annotate.add_argument("--output", required=True, type=pathlib.Path, help="directory for the annotations")
    annotate.add_argument("--engine", default="stockfish", help="Stockfish name or path (default: stockfish)")
    budget = annotate.add_mutually_exclusive_group()
    budget.add_argument("--nodes-per-move", type=int, default=None, help="nodes per legal move (default 200)")
    budget.add_argument("--time-per-move", type=float, default=None, help="seconds per legal move")
    annotate.add_argument("--hash", type=int, default=16, help="Stockfish hash in MB")
    annotate.add_argument("--positions-per-chunk", type=int, default=64)
    annotate.add_argument("--workers", type=int, default=2, help="processes, one Stockfish each")
    annotate.set_defaults(run=_annotate)

    build = steps.add_parser(
        "build", help="split by game and write ArrayRecord files",
        description="Split the annotated boards into train and test by game (a board seen in any training game is "
                    "a training board) and write OUTPUT/{train,test}/{positions,action_values}.array_record and "
                    "OUTPUT/dataset.json. Unchanged inputs are not rebuilt.")
    build.add_argument("annotations", type=pathlib.Path, help="a finished annotation directory")
    build.add_argument("--output", required=True, type=pathlib.Path, help="dataset directory")
    build.add_argument("--test-fraction", type=float, default=0.1, help="share of games in the test split")
    build.add_argument("--seed", type=int, default=0, help="seed of the game split")
    build.add_argument("--mirror-train", action="store_true",
                       help="also train on the colour mirror of every training board (same values; not in the paper)")
    build.set_defaults(run=_build)

    puzzles = steps.add_parser(
        "puzzles", help="make mate puzzles (Lichess CSV) from games",
        description="Search the last plies of each game with Stockfish; where it announces mate in at most "
                    "--max-mate moves, write a puzzle: the game move before as the opponent's move, then "
                    "Stockfish's mating line. The Rating column is a placeholder.")
    puzzles.add_argument("pgn", nargs="+", help="PGN files, globs or directories of *.pgn")
    puzzles.add_argument("--output", required=True, type=pathlib.Path, help="CSV file to write")
    puzzles.add_argument("--count", type=int, default=50, help="at most this many puzzles")
    puzzles.add_argument("--max-mate", type=int, default=2)
    puzzles.add_argument("--nodes", type=int, default=200_000, help="Stockfish nodes per position")
    puzzles.add_argument("--engine", default="stockfish")
    puzzles.set_defaults(run=_puzzles)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    arguments = parser().parse_args(argv)
    if arguments.step == "annotate" and arguments.nodes_per_move is None and arguments.time_per_move is None:
        arguments.nodes_per_move = 200
    try:
        result = arguments.run(arguments)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
