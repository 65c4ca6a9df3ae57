"""The data pipeline: PGN problems, Stockfish annotation (and its resumption after a kill), build, loader."""

import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import chess
import grain.python as grain
import numpy as np
import pytest

from distill.data import records
from distill.data.annotate import (AnnotationSettings, annotate, annotate_board, collect_positions, read_annotations,
                                   win_probability)
from distill.data.build import build, is_test_game, mirrored_move, read_description, split_of
from distill.data.pgn import board_key
from distill.data.chunks import ChunkStore, FingerprintMismatchError
from distill.predictors import Predictor
from zerolab import UCIEngine

BAD_PGN = textwrap.dedent("""\
    [Event "good"]
    [White "A"]
    [Black "B"]

    1. e4 e5 2. Nf3 Nc6 1-0

    [Event "illegal"]
    [White "C"]
    [Black "D"]

    1. e4 e5 2. Ke3 Nc6 1-0

    [Event "also good"]
    [White "E"]
    [Black "F"]

    1. e4 e5 2. Nf3 d6 *
    """)


def test_unreadable_games_are_reported_with_their_location(tmp_path):
    path = tmp_path / "games.pgn"
    path.write_text(BAD_PGN)
    manifest = collect_positions([path])
    assert manifest.num_games == 2
    assert len(manifest.problems) == 1
    problem = manifest.problems[0]
    assert problem.location.startswith(f"{path}:7 (game 2, C vs D)") and "Ke3" in problem.message
    fens = [p["fen"] for p in manifest.positions]
    assert len(fens) == len(set(fens))  # the shared opening boards appear once, with both games
    start = next(p for p in manifest.positions if p["fen"] == chess.STARTING_FEN)
    assert start["games"] == ["games.pgn#1", "games.pgn#3"]


def test_win_probability_formula():
    assert win_probability(chess.engine.Cp(0)) == 0.5
    assert win_probability(chess.engine.Cp(100)) == pytest.approx(1 / (1 + np.exp(-0.368208)))
    assert win_probability(chess.engine.Mate(3)) == 1.0
    assert win_probability(chess.engine.Mate(-1)) == 0.0


def test_annotations_cover_every_legal_move(annotation_directory):
    annotated, problems = read_annotations(annotation_directory)
    positions = [json.loads(line) for line in (annotation_directory / "positions.jsonl").read_text().splitlines()]
    assert problems == [] and [r["index"] for r in annotated] == list(range(len(positions)))
    for record in annotated:
        board = chess.Board(record["fen"])
        assert record["moves"] == sorted(m.uci() for m in board.legal_moves)
        assert all(0.0 <= v <= 1.0 for v in record["action_values"])
        assert record["value"] == max(record["action_values"])  # the board is worth its best move, to the mover


@pytest.mark.parametrize("fen, mover_wins", [
    ("3qk3/8/8/8/8/8/8/4K3 b - - 0 1", True),  # Black to move, a queen up
    ("3qk3/8/8/8/8/8/8/4K3 w - - 0 1", False),  # the same board with White, a queen down, to move
    ("4k3/8/8/8/8/8/8/3QK3 w - - 0 1", True),  # White to move, a queen up
])
def test_annotated_values_are_from_the_movers_side(stockfish_path, fen, mover_wins):
    settings = AnnotationSettings(engine=stockfish_path, nodes_per_move=20)
    engine = UCIEngine(settings.engine_spec()).open()
    try:
        annotation = annotate_board(engine, fen, settings)
    finally:
        engine.close()
    board = chess.Board(fen)
    assert annotation["moves"] == sorted(move.uci() for move in board.legal_moves)
    assert annotation["value"] == max(annotation["action_values"])
    assert annotation["value"] > 0.75 if mover_wins else annotation["value"] < 0.25  # about ±600 cp


def test_a_mate_in_one_is_worth_a_win_to_the_side_that_mates(stockfish_path):
    fen = "r5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1"  # Black mates with Ra1
    settings = AnnotationSettings(engine=stockfish_path, nodes_per_move=20)
    engine = UCIEngine(settings.engine_spec()).open()
    try:
        annotation = annotate_board(engine, fen, settings)
    finally:
        engine.close()
    values = dict(zip(annotation["moves"], annotation["action_values"], strict=True))
    board = chess.Board(fen)
    board.push_uci("a8a1")
    assert board.is_checkmate()
    assert values["a8a1"] == 1.0 and annotation["value"] == 1.0 == max(values.values())
    assert all(value < 1.0 for move, value in values.items() if move != "a8a1")


def test_a_job_directory_refuses_other_settings(tmp_path):
    ChunkStore(tmp_path, 3, {"nodes": 1}, "jsonl").commit(0, "x\n")
    with pytest.raises(FingerprintMismatchError, match="nodes"):
        ChunkStore(tmp_path, 3, {"nodes": 2}, "jsonl")


def chunk_files(directory) -> dict[str, tuple[int, bytes]]:
    """``{name: (modification time in ns, contents)}`` of a job directory's committed chunk files."""
    return {path.name: (path.stat().st_mtime_ns, path.read_bytes()) for path in sorted(directory.glob("chunk-*.jsonl"))}


def test_annotation_resumes_after_being_killed(stockfish_path, generated_games, annotation_directory, tmp_path):
    output = tmp_path / "annotations"
    command = [sys.executable, "-m", "distill.data", "annotate", *map(str, generated_games), "--output", str(output),
               "--engine", stockfish_path, "--nodes-per-move", "20", "--positions-per-chunk", "8", "--workers", "2"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    progress = output / "progress.json"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if progress.exists() and len(json.loads(progress.read_text())["completed_chunks"]) >= 3:
                break
            assert process.poll() is None, "annotation finished or failed before it could be interrupted"
            time.sleep(0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the annotator, its workers and anything else of its group
        process.wait()
    index = json.loads(progress.read_text())
    assert 3 <= len(index["completed_chunks"]) < index["num_chunks"], "the run was not interrupted midway"
    finished = chunk_files(output)  # the index's chunks, and any renamed after the last index write
    assert {f"chunk-{chunk:06d}.jsonl" for chunk in index["completed_chunks"]} <= set(finished)
    time.sleep(0.05)  # a chunk rewritten by the rerun gets a later modification time even on coarse clocks

    settings = AnnotationSettings(engine=stockfish_path, nodes_per_move=20, positions_per_chunk=8)
    annotate(generated_games, output, settings, num_workers=2, show_progress=False)
    resumed, problems = read_annotations(output)
    complete, _ = read_annotations(annotation_directory)
    assert problems == []
    assert [r["index"] for r in resumed] == list(range(len(complete)))  # none missing, none twice
    assert [r["fen"] for r in resumed] == [r["fen"] for r in complete]
    after = chunk_files(output)
    # finished chunks are left exactly as they were; only the missing ones were annotated, each once
    assert {name: after[name] for name in finished} == finished
    assert set(after) == {f"chunk-{chunk:06d}.jsonl" for chunk in range(index["num_chunks"])}
    assert all(after[name][0] > max(mtime for mtime, _ in finished.values()) for name in set(after) - set(finished))
    assert sorted(json.loads(progress.read_text())["completed_chunks"]) == list(range(index["num_chunks"]))


# A minimal UCI engine that scores every legal move 0 cp and dies (exit code 1) when sent the poisoned position.
CRASHING_ENGINE = textwrap.dedent("""\
    import sys
    import chess
    board = chess.Board()
    while line := sys.stdin.readline():
        words = line.split()
        if not words:
            continue
        if words[0] == "uci":
            for option in ("Threads type spin default 1 min 1 max 1", "Hash type spin default 16 min 1 max 64",
                           "MultiPV type spin default 1 min 1 max 500", "UCI_AnalyseMode type check default false"):
                print("option name " + option)
            print("id name crashing-engine", "uciok", sep="\\n", flush=True)
        elif words[0] == "isready":
            print("readyok", flush=True)
        elif words[0] == "position":
            if {poison!r} in line:
                sys.exit(1)
            fen = " ".join(words[2:8]) if words[1] == "fen" else chess.STARTING_FEN
            board = chess.Board(fen)
            for move in words[words.index("moves") + 1:] if "moves" in words else []:
                board.push_uci(move)
        elif words[0] == "go":
            moves = [move.uci() for move in board.legal_moves]
            for rank, move in enumerate(moves, 1):
                print(f"info depth 1 multipv {{rank}} score cp 0 pv {{move}}")
            print(f"bestmove {{moves[0]}}", flush=True)
        elif words[0] == "quit":
            break
    """)


def test_an_engine_crash_is_reported_and_the_rest_annotated(tmp_path):
    pgn = tmp_path / "game.pgn"
    pgn.write_text("[Event \"x\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 *\n")
    poison = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w"  # the board after 2... Nc6
    engine = tmp_path / "crashing-engine"
    engine.write_text(f"#!{sys.executable}\n" + CRASHING_ENGINE.format(poison=poison))
    engine.chmod(0o755)
    settings = AnnotationSettings(engine=str(engine), nodes_per_move=50, positions_per_chunk=4)
    report = annotate([pgn], tmp_path / "annotations", settings, num_workers=0, show_progress=False)
    annotated, problems = read_annotations(tmp_path / "annotations")
    assert len(problems) == 1 and problems[0]["fen"].startswith(poison)
    [reported] = report["position_problems_this_run"]
    assert poison in reported["location"] and "game.pgn#1" in reported["location"]
    assert len(annotated) == report["unique_boards"] - 1


def test_build_splits_by_game_without_leaks(dataset_directory):
    description = read_description(dataset_directory)
    train = records.read_all(records.record_path(dataset_directory, "train", "positions"))
    test = records.read_all(records.record_path(dataset_directory, "test", "positions"))
    assert train and test
    assert not {r["fen"] for r in train} & {r["fen"] for r in test}
    assert all(all(is_test_game(g, 0.3, 0) for g in r["games"]) for r in test)
    assert all(any(not is_test_game(g, 0.3, 0) for g in r["games"]) for r in train)
    action_values = records.data_source(records.record_path(dataset_directory, "train", "action_values"))
    assert len(action_values) == sum(len(r["moves"]) for r in train) == description["counts"]["train"]["action_values"]


def test_mirrored_training_boards_are_exact_mirrors_and_never_test_boards(annotation_directory, tmp_path):
    directory = tmp_path / "mirrored"
    description = build(annotation_directory, directory, test_fraction=0.3, seed=0, mirror_train=True)
    train = records.read_all(records.record_path(directory, "train", "positions"))
    test = records.read_all(records.record_path(directory, "test", "positions"))
    counts = description["counts"]["train"]
    assert 0 < counts["mirrored_positions"] <= counts["positions"] // 2
    originals = {board_key(r["fen"]): r for r in read_annotations(annotation_directory)[0]}
    mirrors = [r for r in train if board_key(r["fen"]) not in originals]
    assert len(mirrors) == counts["mirrored_positions"]
    assert not {board_key(r["fen"]) for r in train} & {board_key(r["fen"]) for r in test}
    for mirror in mirrors:
        board = chess.Board(mirror["fen"])
        original = originals[board_key(board.mirror().fen())]  # the mirror of a mirror is the original
        assert split_of(original, 0.3, 0) == "train"
        assert board.turn != chess.Board(original["fen"]).turn
        assert sorted(mirror["moves"]) == sorted(move.uci() for move in board.legal_moves)
        for move, value in zip(mirror["moves"], mirror["action_values"]):
            assert original["action_values"][original["moves"].index(mirrored_move(move))] == value
    action_values = records.data_source(records.record_path(directory, "train", "action_values"))
    assert len(action_values) == sum(len(r["moves"]) for r in train) == counts["action_values"]


def test_loader_shuffles_shards_and_restores_its_position(dataset_directory):
    predictor = Predictor("state_value", num_bins=1000)  # targets = value bins: nearly a record id
    source_size = len(records.data_source(records.record_path(dataset_directory, "train", "positions")))
    batch = 4
    shards = [grain.ShardOptions(shard_index=i, shard_count=2, drop_remainder=True) for i in range(2)]
    epochs = [records.make_loader(dataset_directory, predictor, batch, seed=3, shard_options=shard, num_epochs=1)
              for shard in shards]
    per_shard = [[row.tobytes() for b in loader for row in b["tokens"]] for loader in epochs]
    assert len(per_shard[0]) == len(per_shard[1]) == (source_size // 2) // batch * batch
    assert not set(per_shard[0]) & set(per_shard[1])  # hosts read disjoint records

    ordered = records.make_loader(dataset_directory, predictor, 1, seed=3, shuffle=False, num_epochs=1,
                                  shard_options=grain.NoSharding())
    shuffled = records.make_loader(dataset_directory, predictor, 1, seed=3, num_epochs=1,
                                   shard_options=grain.NoSharding())
    ordered_rows = [row.tobytes() for b in ordered for row in b["tokens"]]
    shuffled_rows = [row.tobytes() for b in shuffled for row in b["tokens"]]
    assert sorted(ordered_rows) == sorted(shuffled_rows) and ordered_rows != shuffled_rows

    loader = records.make_loader(dataset_directory, predictor, batch, seed=5, shard_options=grain.NoSharding())
    iterator = iter(loader)
    for _ in range(3):
        next(iterator)
    state = iterator.get_state()
    expected = [next(iterator) for _ in range(3)]
    restored = iter(loader)
    restored.set_state(state)
    for want in expected:
        got = next(restored)
        assert np.array_equal(got["tokens"], want["tokens"]) and np.array_equal(got["targets"], want["targets"])


def test_record_file_reads_what_array_record_wrote_and_survives_pickling(dataset_directory):
    """The loader's data source returns each record as array_record's own reader does, also after pickling
    (as grain worker processes receive it), and names the file when asked for a record it does not have."""
    from array_record.python import array_record_module

    path = records.record_path(dataset_directory, "train", "positions")
    source = records.data_source(path)
    reader = array_record_module.ArrayRecordReader(str(path), "readahead_buffer_size:0")
    expected = reader.read_all()
    assert len(source) == len(expected) > 0
    copy = pickle.loads(pickle.dumps(source))
    for index in (0, len(expected) // 2, len(expected) - 1):
        assert source[index] == copy[index] == expected[index]
    with pytest.raises(IndexError, match=str(path)):
        source[len(expected)]


def test_the_default_loader_gives_each_process_its_own_part(dataset_directory, monkeypatch):
    """With several JAX processes (index and count patched) every record is read by exactly one process."""
    import jax

    predictor = Predictor("state_value", num_bins=1000)
    source = records.data_source(records.record_path(dataset_directory, "train", "positions"))
    rows_of_process = []
    for index in range(3):
        monkeypatch.setattr(jax, "process_index", lambda index=index: index)
        monkeypatch.setattr(jax, "process_count", lambda: 3)
        loader = records.make_loader(dataset_directory, predictor, 1, seed=0, shuffle=False, num_epochs=1)
        rows_of_process.append([row.tobytes() for batch in loader for row in batch["tokens"]])
    assert [len(rows) for rows in rows_of_process] == [len(source) // 3] * 3  # the remainder is dropped evenly
    assert len(set().union(*map(set, rows_of_process))) == sum(map(len, rows_of_process))  # disjoint
    everything = records.make_loader(dataset_directory, predictor, 1, seed=0, shuffle=False, num_epochs=1,
                                     shard_options=grain.NoSharding())
    assert set().union(*map(set, rows_of_process)) <= {row.tobytes() for b in everything for row in b["tokens"]}


def test_the_loader_restores_its_position_with_worker_processes(dataset_directory):
    predictor = Predictor("action_value", num_bins=16)
    loader = records.make_loader(dataset_directory, predictor, 4, seed=7, worker_count=2,
                                 shard_options=grain.NoSharding())
    iterator = iter(loader)
    for _ in range(5):
        next(iterator)
    state = iterator.get_state()
    expected = [next(iterator) for _ in range(4)]
    restored = iter(loader)
    restored.set_state(state)
    for want in expected:
        got = next(restored)
        assert np.array_equal(got["tokens"], want["tokens"]) and np.array_equal(got["targets"], want["targets"])
    # grain's position is tied to the worker count: a run resumes with the loader_workers it was started with
    in_process = iter(records.make_loader(dataset_directory, predictor, 4, seed=7, shard_options=grain.NoSharding()))
    with pytest.raises(ValueError, match="[Ww]orker count"):
        in_process.set_state(state)


def test_chunk_store_edge_cases(tmp_path):
    fingerprint = {"nodes": 1}
    store = ChunkStore(tmp_path, 4, fingerprint, "jsonl")
    store.commit(0, "zero\n")
    with pytest.raises(IndexError, match=r"chunk 4 is outside \[0, 4\)"):
        store.commit(4, "four\n")
    with pytest.raises(IndexError, match="outside"):
        store.commit(-1, "minus one\n")
    # a chunk renamed into place after the last index write (a kill between the two steps) counts as done
    (tmp_path / "chunk-000002.jsonl").write_text("two\n")
    # a stray temporary file (a kill while writing) and a chunk id beyond the job do not
    (tmp_path / "chunk-000001.jsonl.tmp").write_text("half of one")
    (tmp_path / "chunk-000007.jsonl").write_text("seven\n")
    resumed = ChunkStore(tmp_path, 4, fingerprint, "jsonl")
    assert resumed.completed() == {0, 2} and resumed.pending() == [1, 3]
    assert json.loads((tmp_path / "progress.json").read_text())["completed_chunks"] == [0, 2]
    resumed.commit(1, "one\n")
    assert resumed.read(1) == "one\n" and resumed.read(2) == "two\n" and resumed.read(0) == "zero\n"
    assert not (tmp_path / "chunk-000001.jsonl.tmp").exists()
    # a chunk the index lists whose file is gone (renamed away) is an error naming it, not a silent redo
    (tmp_path / "chunk-000002.jsonl").rename(tmp_path / "chunk-2.jsonl")
    with pytest.raises(FileNotFoundError, match=r"lists chunks whose files are gone: \[2\]"):
        ChunkStore(tmp_path, 4, fingerprint, "jsonl")


def test_game_ids_stay_unique_for_files_of_the_same_name(tmp_path):
    for folder, opening in (("a", "1. e4 e5 *"), ("b", "1. d4 d5 *")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "games.pgn").write_text(f'[Event "{folder}"]\n\n{opening}\n')
    (tmp_path / "other.pgn").write_text('[Event "c"]\n\n1. c4 c5 *\n')
    paths = [tmp_path / "a" / "games.pgn", tmp_path / "b" / "games.pgn", tmp_path / "other.pgn"]
    manifest = collect_positions(paths)
    start = next(p for p in manifest.positions if p["fen"] == chess.STARTING_FEN)
    assert start["games"] == ["a/games.pgn#1", "b/games.pgn#1", "other.pgn#1"]
    # files with distinct names keep the plain file name as before (existing datasets keep their splits)
    assert next(p for p in collect_positions(paths[1:]).positions if p["fen"] == chess.STARTING_FEN)["games"] == [
        "games.pgn#1", "other.pgn#1"]
