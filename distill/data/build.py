"""Build the record files from finished annotations: split by game, keep test boards out of training.

Each game goes to the test split with probability ``test_fraction`` (a hash of the seed and the game id, so the
split is stable as games are added).  A board seen in several games belongs to the training split if any of them
is a training game, so no test board is ever trained on; the annotation step already removed duplicate boards.
The files are written to a temporary directory and renamed when complete; ``dataset.json`` records the counts and
the annotation they came from, and a build whose inputs have not changed is not redone.

``mirror_train`` (not in the paper, which had billions of boards) adds to the training split each training board's
colour mirror (python-chess's ``Board.mirror``: ranks flipped, colours, side to move, castling rights and en passant
swapped) with its moves mirrored and the same action values — Stockfish's values are from the side to move, so the
mirror has exactly the same ones.  The paper's tokeniser never flips the board, so a mirror is a new input with a
known answer; it doubles the boards a small run trains on.  A mirror that is itself an annotated board (of either
split) is left out, so no test board enters training this way.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import shutil
from collections.abc import Iterator
from typing import Any

import chess

from distill.data.annotate import read_annotations
from distill.data.chunks import write_atomically
from distill.data.pgn import board_key
from distill.data.records import SPLITS, record_path, write_records

DATASET_FILE = "dataset.json"


def is_test_game(game_id: str, test_fraction: float, seed: int) -> bool:
    digest = hashlib.sha256(f"{seed}:{game_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < test_fraction


def split_of(record: dict[str, Any], test_fraction: float, seed: int) -> str:
    """``train`` if any of the board's games is a training game, else ``test``."""
    return "test" if all(is_test_game(game, test_fraction, seed) for game in record["games"]) else "train"


def mirrored_move(uci: str) -> str:
    """A UCI move with both squares mirrored across the middle of the board (e2e4 → e7e5), promotion kept."""
    move = chess.Move.from_uci(uci)
    return chess.Move(chess.square_mirror(move.from_square), chess.square_mirror(move.to_square), move.promotion).uci()


def mirrored_position(record: dict[str, Any]) -> dict[str, Any]:
    """A position record's colour mirror: the board mirrored, each move mirrored, values unchanged."""
    return {**record, "fen": chess.Board(record["fen"]).mirror().fen(),
            "moves": [mirrored_move(move) for move in record["moves"]]}


def with_mirrors(train: list[dict[str, Any]], annotated_keys: set[str]) -> list[dict[str, Any]]:
    """``train`` followed by the mirror of each of its boards that is not already an annotated board."""
    mirrors = [mirrored_position(record) for record in train]
    return train + [mirror for mirror in mirrors if board_key(mirror["fen"]) not in annotated_keys]


def build(annotation_directory: str | pathlib.Path, dataset_directory: str | pathlib.Path,
          test_fraction: float = 0.1, seed: int = 0, mirror_train: bool = False) -> dict[str, Any]:
    """Write the train/test record files and ``dataset.json``; returns the dataset description."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    annotation_directory = pathlib.Path(annotation_directory)
    dataset_directory = pathlib.Path(dataset_directory)
    source = json.loads((annotation_directory / "progress.json").read_text())
    settings = {"test_fraction": test_fraction, "seed": seed, "mirror_train": mirror_train,
                "annotation_fingerprint": source["fingerprint"]}
    existing = _read_description(dataset_directory)
    if existing is not None and existing.get("settings") == settings:
        return existing
    records, problems = read_annotations(annotation_directory)
    by_split: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    for record in records:
        by_split[split_of(record, test_fraction, seed)].append(
            {key: record[key] for key in ("fen", "value", "moves", "action_values", "games")})
    for split in SPLITS:
        if not by_split[split]:
            raise ValueError(f"the {split} split is empty ({len(records)} boards, test_fraction={test_fraction}): "
                             "annotate more games")
    annotated_boards = len(by_split["train"])
    if mirror_train:
        by_split["train"] = with_mirrors(by_split["train"], {board_key(record["fen"]) for record in records})
    temporary = dataset_directory.with_name(dataset_directory.name + ".tmp")
    shutil.rmtree(temporary, ignore_errors=True)
    counts: dict[str, dict[str, int]] = {}
    for split in SPLITS:
        counts[split] = {
            "positions": write_records(record_path(temporary, split, "positions"), by_split[split]),
            "action_values": write_records(record_path(temporary, split, "action_values"),
                                           _action_values(by_split[split])),
            "games": len({game for record in by_split[split] for game in record["games"]
                          if is_test_game(game, test_fraction, seed) == (split == "test")}),
        }
    counts["train"]["mirrored_positions"] = len(by_split["train"]) - annotated_boards
    description = {"settings": settings, "counts": counts, "skipped_positions": len(problems)}
    write_atomically(temporary / DATASET_FILE, json.dumps(description, indent=1))
    shutil.rmtree(dataset_directory, ignore_errors=True)
    temporary.rename(dataset_directory)
    return description


def _action_values(positions: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for position in positions:
        for move, action_value in zip(position["moves"], position["action_values"]):
            yield {"fen": position["fen"], "move": move, "action_value": action_value}


def _read_description(dataset_directory: pathlib.Path) -> dict[str, Any] | None:
    path = dataset_directory / DATASET_FILE
    return json.loads(path.read_text()) if path.exists() else None


def read_description(dataset_directory: str | pathlib.Path) -> dict[str, Any]:
    description = _read_description(pathlib.Path(dataset_directory))
    if description is None:
        raise FileNotFoundError(f"no {DATASET_FILE} in {dataset_directory}; run `python -m distill.data build`")
    return description


__all__ = ["build", "is_test_game", "mirrored_move", "mirrored_position", "read_description", "split_of",
           "with_mirrors"]
