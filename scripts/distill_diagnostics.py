"""Where an action-value run's accuracy comes from: captures against quiet moves, and what the action token reads.

    python scripts/distill_diagnostics.py RUN_DIRECTORY [--boards 1500]

On the run's test boards (its config's ``data.directory``, else ``RUN/data``; or ``--dataset``) it prints

- action accuracy and Kendall's τ of the network and of the one-ply material policy, their difference with its
  standard error (paired over the same boards: ``distill.evaluate.compare_policies``, the function the experiments'
  summaries use), all boards and split by whether Stockfish's best move is a capture or a quiet move;
- how often the network's top move is a capture on boards that have one, against how often Stockfish's is;
- for every layer and head, the attention weight of the last token (the action) on the board tokens of the
  move's origin and destination squares, next to the uniform weight 1/78.

It answers "does the model look up what stands on the square its move goes to?" — the first step towards valuing
a capture — which the metrics of ``distill.evaluate`` cannot show.
"""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

import numpy as np

from distill.data.records import read_all, record_path
from distill.engine import NeuralScorer
from distill.evaluate import (
    best_move_is_capture,
    board_and_moves,
    board_groups,
    board_metrics,
    compare_policies,
    material_scores,
    score_records,
)
from distill.model import Transformer, board_token_of_square
from distill.pipeline import data_directory_of
from distill.train import load_trained_predictor
from zerolab import from_json


def capture_breakdown(scorer: NeuralScorer, records: list[dict]) -> dict[str, Any]:
    """The network against the material policy on the same boards (``distill.evaluate.compare_policies``: means and
    the paired difference ± its standard error, for all boards and split by Stockfish's best move being a capture or
    quiet), and how often the network's top move is a capture on boards that have one, against Stockfish's."""
    network_scores = score_records(scorer, records)
    per_board = {"network": board_metrics(records, network_scores),
                 "material": board_metrics(records, score_records(material_scores, records))}
    best_is_capture = best_move_is_capture(records)
    chosen_is_capture, has_capture = [], []
    for record, scores in zip(records, network_scores):
        board, moves = board_and_moves(record)
        captures = [board.is_capture(move) for move in moves]
        chosen_is_capture.append(captures[int(np.argmax(scores))])
        has_capture.append(any(captures))
    has_capture = np.array(has_capture)
    return {
        "comparisons": compare_policies(per_board, board_groups(records)),
        "network_top_move_is_capture_when_one_exists": float(np.mean(np.array(chosen_is_capture)[has_capture])),
        "stockfish_best_move_is_capture_when_one_exists": float(np.mean(best_is_capture[has_capture])),
    }


def format_comparisons(comparisons: dict[str, Any]) -> list[str]:
    """One line per group and metric: each policy's mean and the first pair's difference ± its standard error."""
    lines = []
    for group, comparison in comparisons.items():
        for metric in next(iter(comparison["policies"].values())):
            means = ", ".join(f"{name} {values[metric]:.3f}" for name, values in comparison["policies"].items())
            differences = ", ".join(f"{pair} {d[metric]['difference']:+.3f} ± {d[metric]['standard_error']:.3f}"
                                    for pair, d in comparison["differences"].items())
            lines.append(f"{group} ({comparison['boards']} boards) {metric}: {means}; {differences} (paired se)")
    return lines


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
    breakdown = capture_breakdown(scorer, records)
    print("\n".join(format_comparisons(breakdown.pop("comparisons"))))
    for name, value in breakdown.items():
        print(f"{name}: {value:.3f}")
    print(f"attention of the action token (uniform: {1 / scorer.model_config.sequence_length:.3f})")
    for layer, head, origin, destination in action_attention(scorer, records[:arguments.attention_boards]):
        print(f"  layer {layer} head {head}: origin square {origin:.3f}, destination square {destination:.3f}")


if __name__ == "__main__":
    main()
