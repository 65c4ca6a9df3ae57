"""Action ↔ UCI maps and FEN handling, checked against python-chess (8×8) and Fairy-Stockfish's move generator (5×5)."""

import random

import chess
import jax
import numpy as np
import pytest

from zerolab.games import InvalidPositionError, make_game, move_table


def special_move_biased_positions(num_games: int, max_plies: int, seed: int) -> list[str]:
    """FENs from random games that prefer castling, en passant and promotions whenever they are legal."""
    rng = random.Random(seed)
    starts = [
        chess.STARTING_FEN,
        "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1",
        "k7/2PP4/8/8/8/8/2pp4/K7 w - - 0 1",
        "r3k2r/1P4P1/8/2pP4/8/8/1p4p1/R3K2R w KQkq c6 0 1",
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
        "rnbqkbnr/pppp1ppp/8/8/3PpP2/8/PPP1P1PP/RNBQKBNR b KQkq f3 0 3",
        "4k3/8/8/1pPpP3/8/8/8/4K3 w - b6 0 1",
    ]
    fens = []
    for game in range(num_games):
        board = chess.Board(starts[game % len(starts)])
        for _ in range(max_plies):
            if board.is_game_over():
                break
            fens.append(board.fen())
            moves = list(board.legal_moves)
            special = [m for m in moves if board.is_castling(m) or board.is_en_passant(m) or m.promotion]
            board.push(rng.choice(special) if special and rng.random() < 0.7 else rng.choice(moves))
    return fens




def test_move_tables_match_pgx_action_counts():
    assert move_table(8).num_actions == 4672
    assert move_table(5).num_actions == 1225
    assert make_game("go", go_size=7).num_actions == 50
    for name in ("chess", "gardner_chess", "go"):  # read off init's shapes, as pgx's own env.num_actions counts them
        game = make_game(name)
        assert game.num_actions == game.env.num_actions


def test_chess_legal_moves_and_steps_match_python_chess(chess_game):
    """A few hundred positions with castling, en passant and promotions, both sides to move."""
    fens = special_move_biased_positions(num_games=14, max_plies=30, seed=0)
    assert len(fens) >= 300
    step = chess_game.jitted_step
    counts = {"castling": 0, "en_passant": 0, "promotion": 0, "black_to_move": 0}
    for fen in fens:
        board = chess.Board(fen)
        state = chess_game.from_fen(fen)
        expected = sorted(move.uci() for move in board.legal_moves)
        assert chess_game.legal_moves_uci(state) == expected, fen
        counts["black_to_move"] += board.turn == chess.BLACK
        for move in board.legal_moves:
            action = chess_game.uci_to_action(move.uci(), state)
            assert chess_game.action_to_uci(action, state) == move.uci()
            counts["castling"] += board.is_castling(move)
            counts["en_passant"] += board.is_en_passant(move)
            counts["promotion"] += move.promotion is not None
        # Playing one move through pgx lands on python-chess's position.
        move = sorted(board.legal_moves, key=lambda m: (m.promotion is None, not board.is_castling(m)))[0]
        next_state = step(state, chess_game.uci_to_action(move.uci(), state))
        board.push(move)
        assert chess_game.to_fen(next_state).split()[:3] == board.fen().split()[:3], fen
    minimum = {"castling": 10, "en_passant": 5, "promotion": 20, "black_to_move": 100}
    assert all(counts[kind] >= minimum[kind] for kind in minimum), counts


def test_gardner_legal_moves_match_fairy_stockfish(gardner_game):
    import pyffish  # Fairy-Stockfish's move generator, a test dependency

    assert pyffish.start_fen("gardner") == gardner_game.start_fen
    step = gardner_game.jitted_step
    rng = random.Random(1)
    positions = promotions = 0
    for _ in range(8):
        state = gardner_game.from_fen(gardner_game.start_fen)
        for _ in range(60):
            if bool(state.terminated):
                break
            fen = gardner_game.to_fen(state)
            ours = gardner_game.legal_moves_uci(state)
            assert ours == sorted(pyffish.legal_moves("gardner", fen, [])), fen
            positions += 1
            promotions += sum(len(m) == 5 for m in ours)
            for uci in ours:
                assert gardner_game.action_to_uci(gardner_game.uci_to_action(uci, state), state) == uci
            state = step(state, gardner_game.uci_to_action(rng.choice(ours), state))
    assert positions >= 300
    assert promotions > 0


@pytest.mark.parametrize(
    "fen, message",
    [
        ("not a fen", "invalid FEN"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0 1", "invalid FEN"),
        ("8/8/8/8/8/8/8/8 w - - 0 1", "no white king"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1", "invalid FEN"),
    ],
)
def test_invalid_chess_fen_names_the_input(chess_game, fen, message):
    with pytest.raises(InvalidPositionError, match=message):
        chess_game.from_fen(fen)


@pytest.mark.parametrize(
    "fen",
    ["rnbqk/ppppp/5/PPPPP/RNBQ w - - 0 1", "rnbqk/ppppp/6/PPPPP/RNBQK w - - 0 1", "rnbqq/ppppp/5/PPPPP/RNBQK w - - 0 1",
     "rnbqk/ppppp/5/PPPPP/RNBQK x - - 0 1", "Pnbqk/ppppp/5/1PPPP/RNBQK w - - 0 1"],
)
def test_invalid_gardner_fen_is_rejected(gardner_game, fen):
    with pytest.raises(InvalidPositionError, match="Gardner FEN"):
        gardner_game.from_fen(fen)


def test_fen_round_trip(chess_game, gardner_game):
    for fen in special_move_biased_positions(num_games=3, max_plies=15, seed=2):
        assert chess_game.to_fen(chess_game.from_fen(fen)).split()[:3] == fen.split()[:3]
    fen = "2k2/1P3/5/3p1/K4 b - - 3 20"
    assert gardner_game.to_fen(gardner_game.from_fen(fen)) == fen


def test_illegal_and_malformed_uci_are_rejected(chess_game):
    state = chess_game.from_fen(chess.STARTING_FEN)
    with pytest.raises(ValueError, match="illegal"):
        chess_game.uci_to_action("e2e5", state)
    with pytest.raises(ValueError, match="malformed"):
        chess_game.uci_to_action("e2-e4", state)
    promotion = chess_game.from_fen("8/P7/8/8/8/8/8/k6K w - - 0 1")
    with pytest.raises(ValueError, match="promotion"):
        chess_game.uci_to_action("a7a8", promotion)


def test_legal_moves_cli_reports_bad_lines_and_goes_on(tmp_path, capsys):
    from zerolab.frontends.cli import main

    fens = tmp_path / "fens.txt"
    fens.write_text("rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1\nrnbqk/ppppp w\n2k2/1P3/5/3p1/K4 w - - 0 1\n")
    assert main(["legal-moves", "--game", "gardner_chess", "--fens", str(fens)]) == 1  # one line was bad
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "a2a3 b1a3 b1c3 b2b3 c2c3 d2d3 e2e3"
    assert lines[1].startswith("error: line 2:")
    assert "b4b5q" in lines[2].split() and "b4b5n" in lines[2].split()


def test_go_gtp_vertices_round_trip():
    go = make_game("go", go_size=7, komi=7.5)
    assert go.action_to_gtp(go.pass_action) == "pass"
    for action in range(go.num_actions):
        assert go.gtp_to_action(go.action_to_gtp(action)) == action
    assert go.action_to_gtp(0) == "A7" and go.action_to_gtp(48) == "G1"
    assert np.asarray(jax.jit(go.init)(jax.random.key(0)).legal_action_mask).sum() == 50


def test_equal_games_share_their_compiled_rules_and_count_plies(gardner_game):
    other = make_game("gardner_chess")
    assert other is not gardner_game
    assert other.batched_init is gardner_game.batched_init and other.batched_step is gardner_game.batched_step
    assert other.jitted_step is gardner_game.jitted_step
    assert make_game("chess").batched_step is not gardner_game.batched_step
    states = gardner_game.batched_init(jax.random.split(jax.random.key(0), 3))
    for ply in range(1, 4):
        states = gardner_game.batched_step(states, np.argmax(np.asarray(states.legal_action_mask), axis=1))
        np.testing.assert_array_equal(gardner_game.plies_played(states), [ply] * 3)
    state = gardner_game.from_fen("rnbqk/ppppp/5/PPPPP/RNBQK b - - 0 1")  # a FEN is a start: no plies behind it
    assert int(gardner_game.plies_played(gardner_game.jitted_step(state, np.argmax(state.legal_action_mask)))) == 1


def pgx_private_fields() -> set[str]:
    """The underscore fields of the pgx states of every game (pgx internals)."""
    import dataclasses

    names = set()
    for game in (make_game("chess"), make_game("gardner_chess"), make_game("go")):
        state = jax.eval_shape(game.init, jax.random.key(0))
        names |= {field.name for field in dataclasses.fields(state) if field.name.startswith("_")}
        for field in dataclasses.fields(state):
            value = getattr(state, field.name)
            if dataclasses.is_dataclass(value):
                names |= {inner.name for inner in dataclasses.fields(value) if inner.name.startswith("_")}
    return names


def test_only_the_games_layer_reads_pgx_internals():
    import ast
    import pathlib

    private = pgx_private_fields()
    assert {"_step_count", "_x"} <= private
    root = pathlib.Path(__file__).resolve().parents[2]
    offenders = []
    for package in ("zerolab", "alphagateau", "distill", "contempt_search", "sai_go", "skill_compat", "experiments"):
        for path in sorted((root / package).rglob("*.py")):
            if path.is_relative_to(root / "zerolab" / "games"):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr in private and not (
                        isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    offenders.append(f"{path.relative_to(root)}:{node.lineno} .{node.attr}")
    assert offenders == [], offenders


@pytest.mark.parametrize("name, options", [("chess", {}), ("chess", {"observation": "lc0"}), ("gardner_chess", {}),
                                           ("go", {})])
def test_the_declared_observation_planes_hold_in_played_positions(name, options):
    """``Game.observation_planes`` is what self-play stores frames by: over random games long enough to lose castling
    rights, run the half-move clock and repeat positions, every plane declared constant is constant over the board and
    every plane declared binary holds only 0 and 1 (the codec fitted to the positions is at least as narrow).  The
    declarations are also not vacuous: history planes are bits, the scalars one value a frame."""
    from zerolab.selfplay.frames import FrameCodec, frame_codec
    from zerolab.training.device_fit import random_positions

    game = make_game(name, **options)
    observation, _ = random_positions(game, num_games=8, plies=160, seed=3)
    declared = frame_codec(game)
    fitted = FrameCodec.of(observation, game.num_actions)
    assert declared.merge(fitted) == declared, [
        channel for channel in range(len(declared.constant))
        if (declared.constant[channel] and not fitted.constant[channel])
        or (declared.binary[channel] and not fitted.binary[channel])]
    planes = game.observation_planes
    expected_bits = {"chess": 104 if options else 112, "gardner_chess": 112, "go": observation.shape[-1]}[name]
    assert len(declared.bit_channels) == expected_bits
    assert len(declared.scalar_channels) == observation.shape[-1] - expected_bits
    assert len(planes.constant) == len(planes.binary) == observation.shape[-1]
