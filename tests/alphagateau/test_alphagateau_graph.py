"""The chess graph: sizes, legal edges against python-chess and pgx, node/edge features, the command line."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alphagateau import graph as chess_graph
from alphagateau import graph_tools
from alphagateau.graph import (
    EDGE_FEATURE_NAMES,
    NON_EDGE_LOGIT,
    NUM_EDGE_FEATURES,
    NUM_NODE_FEATURES,
    action_values_to_edges,
    board_graph,
    edge_logits_to_action_logits,
)
from alphagateau.graph_tools import build_graphs, graph_legal_moves_uci
from zerolab.games.chess import move_table, parse_square


def test_graph_sizes():
    for board_size, num_edges, num_underpromotions in ((8, 1858, 66), (5, 455, 39)):
        graph = board_graph(board_size)
        table = move_table(board_size)
        assert graph.num_nodes == board_size**2
        assert graph.num_edges == num_edges
        assert graph.num_actions == table.num_actions
        assert (graph.underpromotion >= 0).sum() == num_underpromotions
        # every action that stays on the board is exactly one edge, and the two maps are inverse
        assert np.array_equal(np.sort(graph.edge_action), np.flatnonzero(table.to_square >= 0))
        assert np.array_equal(graph.action_edge[graph.edge_action], np.arange(num_edges))
        assert (graph.action_edge >= 0).sum() == num_edges
        # edges are distinct moves: (from, to, promotion piece)
        moves = set(zip(graph.senders.tolist(), graph.receivers.tolist(), graph.underpromotion.tolist()))
        assert len(moves) == num_edges
        assert graph.static_edge_features.shape == (num_edges, NUM_EDGE_FEATURES)
    assert NUM_EDGE_FEATURES == 15


def test_build_graphs_shapes_and_offsets(network_inputs):
    for name, (num_nodes, num_edges) in {"chess": (64, 1858), "gardner_chess": (25, 455)}.items():
        inputs = network_inputs[name]
        batch_size = inputs.observation.shape[0]
        graphs = build_graphs(inputs.observation, inputs.legal_action_mask)
        assert graphs.nodes.shape == (batch_size * num_nodes, NUM_NODE_FEATURES)
        assert graphs.edges.shape == (batch_size * num_edges, NUM_EDGE_FEATURES)
        assert graphs.senders.shape == graphs.receivers.shape == (batch_size * num_edges,)
        assert np.array_equal(graphs.n_node, [num_nodes] * batch_size)
        assert np.array_equal(graphs.n_edge, [num_edges] * batch_size)
        graph_of_sender = np.asarray(graphs.senders) // num_nodes
        assert np.array_equal(graph_of_sender, np.repeat(np.arange(batch_size), num_edges))
        assert np.array_equal(np.asarray(graphs.receivers) // num_nodes, graph_of_sender)


def test_legal_edges_match_python_chess(python_chess_positions, python_chess_positions_from_fen):
    """Positions reached by pgx stepping and the same positions read from FEN: legal edges = python-chess moves."""
    observations, masks, expected, fens = python_chess_positions
    assert len(expected) >= 400
    # the seeds and the move choice must really exercise the special moves
    all_moves = [(fen, move) for fen, moves in zip(fens, expected) for move in moves]
    assert sum(len(move) == 5 and move[-1] in "rbn" for _, move in all_moves) >= 20
    assert sum(fen.split()[3] != "-" for fen in fens) >= 10  # en passant available
    assert sum(move in ("e1g1", "e1c1", "e8g8", "e8c8") for _, move in all_moves) >= 20
    assert sum(fen.split()[1] == "b" for fen in fens) >= 100

    # actions that are not edges are never legal
    graph = board_graph(8)
    for observations, masks in (python_chess_positions[:2], python_chess_positions_from_fen):
        assert not masks[:, graph.action_edge < 0].any()
        got = graph_legal_moves_uci(build_graphs(jnp.asarray(observations), jnp.asarray(masks)))
        mismatches = [(fen, sorted(set(a) ^ set(b))) for fen, a, b in zip(fens, got, expected) if a != b]
        assert not mismatches, f"{len(mismatches)} positions differ, e.g. {mismatches[:3]}"


def test_legal_edges_match_pgx_gardner(gardner_game, gardner_history):
    num_plies, batch_size = gardner_history.terminated.shape
    observation = gardner_history.observation.reshape(num_plies * batch_size, 5, 5, -1)
    mask = gardner_history.legal_action_mask.reshape(num_plies * batch_size, -1)
    live = ~gardner_history.terminated.reshape(-1)  # pgx marks every action legal in a terminal state
    assert not mask[live][:, board_graph(5).action_edge < 0].any()
    got = graph_legal_moves_uci(build_graphs(jnp.asarray(observation), jnp.asarray(mask)))
    checked = 0
    for ply in range(num_plies):
        for index in range(batch_size):
            if gardner_history.terminated[ply, index]:
                continue
            state = jax.tree.map(lambda leaf: leaf[ply, index], gardner_history)
            assert got[ply * batch_size + index] == gardner_game.legal_moves_uci(state), gardner_game.to_fen(state)
            checked += 1
    assert checked >= 300


def test_node_features_are_the_observation_of_each_square(chess_game):
    graph = board_graph(8)
    board = chess_game.from_fen("r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R b KQkq - 7 1")
    nodes = np.asarray(build_graphs(board.observation[None], board.legal_action_mask[None]).nodes)
    mover_board = chess_game.mover_board(board)
    for square in range(graph.num_nodes):
        piece = mover_board[square]
        own = np.flatnonzero(nodes[square, 0:6])
        opponent = np.flatnonzero(nodes[square, 6:12])
        assert list(own) == ([piece - 1] if piece > 0 else [])
        assert list(opponent) == ([-piece - 1] if piece < 0 else [])
    assert np.all(nodes[:, chess_graph.COLOR_PLANE] == 1)  # Black to move
    assert np.allclose(nodes[:, chess_graph.NO_PROGRESS_PLANE], 0.07)
    # a black pawn on b2 is the mover's pawn on b7 of the mover's frame
    assert nodes[parse_square("b2", 8, color=1), chess_graph.MOVER_PAWN_PLANE] == 1


def test_gardner_node_features_are_padded_to_the_chess_layout(gardner_game):
    state = gardner_game.from_fen("k4/3P1/5/1p3/4K b - - 9 20")
    observation = np.asarray(state.observation)
    nodes = np.asarray(build_graphs(state.observation[None], state.legal_action_mask[None]).nodes)
    assert nodes.shape == (25, NUM_NODE_FEATURES)
    assert np.all(nodes[:, 114:118] == 0)  # castling rights: none
    assert np.allclose(nodes[:, 118], observation[0, 0, 114])  # no-progress count lands on the chess plane
    assert np.allclose(nodes[:, 112], 1)  # colour: Black to move
    square = parse_square("b2", 5, color=1)  # the black pawn, in the mover's frame
    assert nodes[square, chess_graph.MOVER_PAWN_PLANE] == 1
    file, rank = divmod(square, 5)
    assert np.array_equal(nodes[square, :114], observation[4 - rank, file, :114])


def _edge(board_size: int, origin: str, destination: str, underpromotion: int = -1) -> int:
    graph = board_graph(board_size)
    origin_square, destination_square = parse_square(origin, board_size, 0), parse_square(destination, board_size, 0)
    (edge,) = np.flatnonzero(
        (graph.senders == origin_square)
        & (graph.receivers == destination_square)
        & (graph.underpromotion == underpromotion)
    )
    return int(edge)


def _flags(board_size: int, edge: int) -> set[str]:
    features = board_graph(board_size).static_edge_features[edge]
    flags = {name for name, value in zip(EDGE_FEATURE_NAMES, features) if value}
    return flags - {"files_left", "ranks_up"}


def test_edge_features_sanity():
    chess_board_graph = board_graph(8)
    gardner_board_graph = board_graph(5)
    # a knight move: only the knight flag, displacement scaled the same on both boards
    for board_size in (8, 5):
        edge = _edge(board_size, "b1", "c3")
        assert _flags(board_size, edge) == {"knight"}
        features = board_graph(board_size).static_edge_features[edge]
        assert features[1] == pytest.approx(-1 / 7) and features[2] == pytest.approx(2 / 7)
    assert chess_board_graph.edge_feature("knight").sum() == 336
    # a pawn's first move: single and double steps of the mover's pawn; no double step in Gardner chess
    assert _flags(8, _edge(8, "e2", "e4")) == {"mover_pawn", "rook", "queen"}
    assert _flags(8, _edge(8, "e2", "e3")) == {"mover_pawn", "rook", "queen", "mover_king", "opponent_king"}
    assert _flags(8, _edge(8, "e7", "e5")) == {"opponent_pawn", "rook", "queen"}
    assert "mover_pawn" not in _flags(5, _edge(5, "b2", "b4"))
    # castling is a king move of the mover from e1 and of the opponent from e8 (8×8 only)
    assert _flags(8, _edge(8, "e1", "g1")) == {"mover_king", "rook", "queen"}
    assert _flags(8, _edge(8, "e8", "c8")) == {"opponent_king", "rook", "queen"}
    assert "mover_king" not in _flags(5, _edge(5, "c1", "e1"))
    # promotions: under-promotions are pawn-only edges; the queen flag is its own flag on the pawn's move
    for board_size, last in ((8, "8"), (5, "5")):
        before = "7" if board_size == 8 else "4"
        for code, piece in enumerate(("rook", "bishop", "knight")):
            assert _flags(board_size, _edge(board_size, "b" + before, "c" + last, code)) == {
                f"promotion_{piece}",
                "mover_pawn",
            }
        queen_promotion = _flags(board_size, _edge(board_size, "b" + before, "b" + last))
        assert {"promotion_queen", "mover_pawn", "rook", "queen"} <= queen_promotion
        assert not {"promotion_rook", "promotion_bishop", "promotion_knight"} & queen_promotion
    for graph, count in ((chess_board_graph, 22), (gardner_board_graph, 13)):
        for name in ("promotion_knight", "promotion_bishop", "promotion_rook", "promotion_queen"):
            assert graph.edge_feature(name).sum() == count
        assert not np.array_equal(graph.edge_feature("promotion_queen"), graph.edge_feature("promotion_rook"))


def test_legal_feature_is_the_mask(network_inputs):
    for inputs in network_inputs.values():
        graphs = build_graphs(inputs.observation, inputs.legal_action_mask)
        batch_size = inputs.observation.shape[0]
        legal = np.asarray(graphs.edges[:, 0]).reshape(batch_size, -1)
        assert np.array_equal(legal, np.asarray(action_values_to_edges(inputs.legal_action_mask)))
        assert legal.sum(axis=1).tolist() == np.asarray(inputs.legal_action_mask).sum(axis=1).tolist()


def test_edge_logits_to_action_logits():
    for board_size in (8, 5):
        graph = board_graph(board_size)
        edge_logits = jnp.asarray(np.random.default_rng(0).normal(size=(3, graph.num_edges)), jnp.float32)
        action_logits = np.asarray(edge_logits_to_action_logits(edge_logits))
        assert action_logits.shape == (3, graph.num_actions)
        assert np.array_equal(action_logits[:, graph.edge_action], np.asarray(edge_logits))
        assert np.all(action_logits[:, graph.action_edge < 0] == NON_EDGE_LOGIT)
        assert np.array_equal(np.asarray(action_values_to_edges(jnp.asarray(action_logits))), edge_logits)
    with pytest.raises(ValueError, match="neither chess"):
        edge_logits_to_action_logits(jnp.zeros((1, 100)))


def test_build_graphs_rejects_other_shapes():
    with pytest.raises(ValueError, match="not a chess observation"):
        build_graphs(jnp.zeros((1, 7, 7, 17)), jnp.zeros((1, 50), bool))
    with pytest.raises(ValueError, match="legal_action_mask"):
        build_graphs(jnp.zeros((1, 8, 8, 119)), jnp.zeros((1, 1225), bool))


def test_command_line(tmp_path, capsys, chess_game, gardner_game):
    fens = tmp_path / "fens.txt"
    fens.write_text(
        "\n".join(
            [
                "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
                "this is not a FEN",
                "",
                "8/P6k/8/8/8/8/6Kp/8 b - - 0 1",
            ]
        )
    )
    assert graph_tools.main(["--game", "chess", "--fens", str(fens), "--stats"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "# chess: 64 nodes, 1858 edges, 119 node features, 15 edge features"
    move_lines = [line for line in lines if not line.startswith("#")]
    assert move_lines[0] == " ".join(chess_game.legal_moves_uci(chess_game.from_fen(
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3")))
    assert "e5f6" in move_lines[0].split()
    assert move_lines[1].startswith("error: line 2:")
    assert move_lines[2] == "h2h1b h2h1n h2h1q h2h1r h7g6 h7g7 h7g8 h7h6 h7h8"

    gardner = tmp_path / "gardner.txt"
    gardner.write_text("rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1\nk4/3P1/5/1p3/4K w - - 0 1\n")
    assert graph_tools.main(["--game", "gardner_chess", "--fens", str(gardner)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "a2a3 b1a3 b1c3 b2b3 c2c3 d2d3 e2e3"
    assert lines[1] == " ".join(gardner_game.legal_moves_uci(gardner_game.from_fen("k4/3P1/5/1p3/4K w - - 0 1")))
    assert {"d4d5q", "d4d5n", "d4d5b", "d4d5r"} <= set(lines[1].split())
