"""Writes ``selfplay_reference.npz`` and ``selfplay_reference.json`` next to this file: the scenario of
``tests/sai_go/test_selfplay_reference.py`` (SAI self-play frames and records, its metrics, one training update).

The stored files were written at commit bc9e941, by SAI's own self-play scan, before it moved onto the core's scan:

    git checkout bc9e941 -- sai_go zerolab   # the implementation to record (tests/ from a later commit)
    PYTHONPATH=. nice -n 15 .venv/bin/python tests/sai_go/data/make_selfplay_reference.py

(the script and the test only use ``make_sai_play_fn``'s public signature, which both implementations share).
Rerunning it at a later commit must write the same integers, booleans and discrete floats, and the network's floats
within the test's tolerances (another CPU rounds them differently; the test's docstring says which are which); the
test checks exactly that.  The parameters after the update (``update.params…``) were appended later, on another
machine, after the rest was checked (the test's docstring).
"""

from __future__ import annotations

import json

import numpy as np

from zerolab import GoGame
from tests.sai_go.conftest import make_tiny_network
from tests.sai_go.test_selfplay_reference import REFERENCE, reference_run


def main() -> None:
    game = GoGame(size=7, komi=9.5)  # the tests' go_game fixture
    arrays, numbers = reference_run(game, *make_tiny_network(game))
    np.savez_compressed(REFERENCE.with_suffix(".npz"), **arrays)
    REFERENCE.with_suffix(".json").write_text(json.dumps(numbers, indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE}.npz and .json: {json.dumps(numbers['metrics'])}")


if __name__ == "__main__":
    main()
