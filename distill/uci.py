"""``python -m distill.uci --checkpoint DIR``: a searchless engine speaking UCI (through ``zerolab.frontends.uci``).

DIR is a run directory (its newest checkpoint) or one checkpoint (``RUN/checkpoints/<step>``); the engine plays
with the checkpoint's EMA parameters.  ``--random-init`` runs an untrained network of ``--predictor`` and
``--model-size`` instead, for smoke tests.  The protocol, its robustness and time handling are ``zerolab.frontends.uci``'s;
this module only supplies the move callback and two options: ``Repetition Workaround`` (check) and
``Decisive Engine`` (a Stockfish spec such as ``stockfish:nodes=10000``, empty for none).  The ``info`` line
reports the chosen move's win probability as centipawns through the inverse of the Lichess formula.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

import chess

from distill.data.annotate import LICHESS_CENTIPAWN_SCALE
from distill.engine import EngineOptions, NeuralScorer, SearchlessEngine
from distill.model import MODEL_SIZES
from distill.predictors import PREDICTOR_NAMES, Predictor
from zerolab import UCIOption
from zerolab.frontends import MoveChoice, SearchBudget, UCIServer, main_loop

MAX_CENTIPAWNS = 10_000


def win_probability_to_centipawns(probability: float) -> int:
    """Inverse of ``sigmoid(0.00368208 · cp)``, clipped to ±10000."""
    probability = min(max(probability, 1e-9), 1 - 1e-9)
    centipawns = math.log(probability / (1 - probability)) / LICHESS_CENTIPAWN_SCALE
    return int(round(max(-MAX_CENTIPAWNS, min(MAX_CENTIPAWNS, centipawns))))


def make_server(engine: SearchlessEngine) -> UCIServer:
    """A UCI server around ``engine``."""

    def choose_move(board: chess.Board, budget: SearchBudget) -> MoveChoice:
        (move, score), = engine.decide([board])
        centipawns = (win_probability_to_centipawns(score)
                      if engine.scorer.predictor.scores_are_win_probabilities else None)
        return MoveChoice(move, score_centipawns=centipawns, depth=1)

    def set_repetition(value: bool) -> None:
        engine.options.repetition_workaround = bool(value)

    def set_decisive(value: str) -> None:
        engine.close()
        engine.options.decisive_engine = value.strip() or None

    options = [
        UCIOption("Repetition Workaround", "check", engine.options.repetition_workaround, on_change=set_repetition),
        UCIOption("Decisive Engine", "string", engine.options.decisive_engine or "", on_change=set_decisive),
    ]
    return UCIServer(engine.name, "zerolab distill", choose_move, options, on_new_game=engine.new_game)


def load_engine(checkpoint: str | None, random_init: bool, predictor: str, model_size: str,
                options: EngineOptions) -> SearchlessEngine:
    if random_init:
        scorer = NeuralScorer.random_init(Predictor(predictor), model_size)
        return SearchlessEngine(scorer, options, name=f"distill-{predictor}-random")
    from distill.train import load_trained_predictor

    trained = load_trained_predictor(checkpoint)
    scorer = NeuralScorer(trained.predictor, trained.model_config, trained.params)
    return SearchlessEngine(scorer, options, name=f"distill-{trained.predictor.name}-step{trained.step}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m distill.uci", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", help="run directory (newest checkpoint) or RUN/checkpoints/<step>")
    source.add_argument("--random-init", action="store_true", help="an untrained network (smoke tests)")
    parser.add_argument("--predictor", default="action_value", choices=PREDICTOR_NAMES,
                        help="with --random-init: which predictor")
    parser.add_argument("--model-size", default="test", choices=sorted(MODEL_SIZES),
                        help="with --random-init: which size")
    parser.add_argument("--decisive-engine", default=None,
                        help="Stockfish spec for the decisiveness workaround, e.g. stockfish:nodes=10000")
    parser.add_argument("--no-repetition-workaround", action="store_true")
    arguments = parser.parse_args(argv)
    options = EngineOptions(repetition_workaround=not arguments.no_repetition_workaround,
                            decisive_engine=arguments.decisive_engine)
    try:
        engine = load_engine(arguments.checkpoint, arguments.random_init, arguments.predictor,
                             arguments.model_size, options)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with engine:
        main_loop(make_server(engine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
