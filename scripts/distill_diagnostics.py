"""Where an action-value run's accuracy comes from: captures against quiet moves, and what the action token reads.

    python scripts/distill_diagnostics.py RUN_DIRECTORY [--boards 1500]

On the run's test boards (its config's ``data.directory``, else ``RUN/data``; or ``--dataset``) it prints

- action accuracy of the network and of the one-ply material policy, their difference with its standard error
  (paired over the same boards), and both split by whether Stockfish's best move is a capture or a quiet move;
- how often the network's top move is a capture on boards that have one, against how often Stockfish's is;
- for every layer and head, the attention weight of the last token (the action) on the board tokens of the
  move's origin and destination squares, next to the uniform weight 1/78.

It answers "does the model look up what stands on the square its move goes to?" — the first step towards valuing
a capture — which the metrics of ``distill.evaluate`` cannot show.
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np

from distill.data.records import read_all, record_path
from distill.engine import NeuralScorer
from distill.evaluate import board_and_moves, expected_accuracy, material_scores, score_records
from distill.model import Transformer, board_token_of_square
from distill.pipeline import data_directory_of
from distill.train import load_trained_predictor
from zerolab.config import from_json


def capture_breakdown(scorer: NeuralScorer, records: list[dict]) -> dict[str, float]:
    network_scores, material = score_records(scorer, records), score_records(material_scores, records)
    rows = []
    for record, scores, material_scores_of_board in zip(records, network_scores, material):
        board, moves = board_and_moves(record)
        values = np.asarray(record["action_values"])
        captures = np.array([board.is_capture(move) for move in moves])
        rows.append((expected_accuracy(scores, values), expected_accuracy(material_scores_of_board, values),
                     captures[int(np.argmax(values))], captures[int(np.argmax(scores))], captures.any()))
    accuracy, material_accuracy, best_captures, chosen_captures, any_capture = map(np.array, zip(*rows))
    return {
        "boards": len(rows),
        "accuracy": accuracy.mean(), "material_accuracy": material_accuracy.mean(),
        "accuracy_minus_material": (accuracy - material_accuracy).mean(),
        "standard_error_of_that_difference": (accuracy - material_accuracy).std(ddof=1) / np.sqrt(len(rows)),
        "accuracy_when_best_is_capture": accuracy[best_captures].mean(),
        "material_accuracy_when_best_is_capture": material_accuracy[best_captures].mean(),
        "accuracy_when_best_is_quiet": accuracy[~best_captures].mean(),
        "material_accuracy_when_best_is_quiet": material_accuracy[~best_captures].mean(),
        "network_top_move_is_capture_when_one_exists": chosen_captures[any_capture].mean(),
        "stockfish_best_move_is_capture_when_one_exists": best_captures[any_capture].mean(),
    }


def action_attention(scorer: NeuralScorer, records: list[dict]) -> list[tuple[int, int, float, float]]:
    """``(layer, head, mean weight on the origin square, on the destination square)`` of the action token."""
    inputs, origins, destinations = [], [], []
    for record in records:
        board, moves = board_and_moves(record)
        inputs.append(scorer.predictor.inputs(board, moves))
        origins += [move.from_square for move in moves]
        destinations += [move.to_square for move in moves]
    tokens = np.concatenate(inputs)
    index = np.arange(len(tokens))
    origin_tokens = board_token_of_square(np.array(origins))
    destination_tokens = board_token_of_square(np.array(destinations))
    config = scorer.model_config
    _, state = Transformer(config).apply({"params": scorer.params}, tokens, mutable=["intermediates"])
    rows = []
    for layer in range(config.num_layers):
        [weights] = state["intermediates"][f"block_{layer}"]["attention"]["attention_weights"]  # [B, H, T, T]
        of_action = np.asarray(weights[:, :, -1])  # the last token's weights on every token: [B, H, T]
        for head in range(config.num_heads):
            rows.append((layer, head, float(of_action[index, head, origin_tokens].mean()),
                         float(of_action[index, head, destination_tokens].mean())))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=pathlib.Path, help="a distill run directory (its newest checkpoint is used)")
    parser.add_argument("--dataset", type=pathlib.Path,
                        help="dataset directory (default: the run config's data.directory, else RUN/data; + /dataset)")
    parser.add_argument("--boards", type=int, default=1500, help="test boards to look at")
    parser.add_argument("--attention-boards", type=int, default=100, help="test boards for the attention weights")
    arguments = parser.parse_args()
    trained = load_trained_predictor(arguments.run)
    if trained.predictor.name != "action_value":
        parser.error(f"{arguments.run} holds a {trained.predictor.name} predictor; this looks at action values")
    scorer = NeuralScorer(trained.predictor, trained.model_config, trained.params)
    dataset = arguments.dataset or data_directory_of(from_json((arguments.run / "config.json").read_text()),
                                                     arguments.run) / "dataset"
    records = read_all(record_path(dataset, "test", "positions"))[:arguments.boards]
    for name, value in capture_breakdown(scorer, records).items():
        print(f"{name:>48}: {value:.3f}" if isinstance(value, float) else f"{name:>48}: {value}")
    print(f"attention of the action token (uniform: {1 / scorer.model_config.sequence_length:.3f})")
    for layer, head, origin, destination in action_attention(scorer, records[:arguments.attention_boards]):
        print(f"  layer {layer} head {head}: origin square {origin:.3f}, destination square {destination:.3f}")


if __name__ == "__main__":
    main()
