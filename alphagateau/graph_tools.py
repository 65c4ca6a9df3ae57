"""The graphs as tools see them: a batch as one ``jraph.GraphsTuple``, the legal moves its edges encode, a command
line.

The network reads dense arrays (:func:`alphagateau.graph.graph_features`); :func:`build_graphs` flattens the same batch
into one :class:`jraph.GraphsTuple` (the tools' and tests' view), and :func:`graph_legal_moves_uci` reads back, from
the graph alone, the UCI moves of the edges flagged legal.

Command line: ``python -m alphagateau.graph_tools --game chess|gardner_chess --fens FILE [--stats]`` prints, for each
FEN line, the sorted UCI moves of the edges flagged legal.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import jraph
import numpy as np

from alphagateau.graph import (
    COLOR_PLANE, LEGAL_FEATURE, MOVER_PAWN_PLANE, NUM_EDGE_FEATURES, NUM_NODE_FEATURES, board_graph, board_size_of,
    graph_features, graph_for_num_edges,
)
from zerolab.games import PROMOTION_PIECES, square_name


@jax.jit
def build_graphs(observation: jax.Array, legal_action_mask: jax.Array) -> jraph.GraphsTuple:
    """A batch of position graphs as one ``jraph.GraphsTuple`` (:func:`graph_features` flattened, for tools).

    Args:
      observation: [B, n, n, C] pgx observations (side to move's frame).
      legal_action_mask: [B, A] bool.

    Returns:
      GraphsTuple with ``nodes`` [B * N, 119], ``edges`` [B * E, 15], ``senders`` / ``receivers`` [B * E] (graph b's
      squares are nodes ``b * N … b * N + N - 1``), ``n_node`` [B] = N, ``n_edge`` [B] = E and no globals.  Edge
      ``b * E + e`` is edge ``e`` of :func:`board_graph`.
    """
    nodes, edges = graph_features(observation, legal_action_mask)
    graph = board_graph(board_size_of(observation.shape))
    batch_size = observation.shape[0]
    offsets = (jnp.arange(batch_size, dtype=jnp.int32) * graph.num_nodes)[:, None]
    return jraph.GraphsTuple(
        nodes=nodes.reshape(batch_size * graph.num_nodes, NUM_NODE_FEATURES),
        edges=edges.reshape(batch_size * graph.num_edges, NUM_EDGE_FEATURES),
        senders=(jnp.asarray(graph.senders)[None, :] + offsets).reshape(-1),
        receivers=(jnp.asarray(graph.receivers)[None, :] + offsets).reshape(-1),
        n_node=jnp.full((batch_size,), graph.num_nodes, dtype=jnp.int32),
        n_edge=jnp.full((batch_size,), graph.num_edges, dtype=jnp.int32),
        globals=None,
    )


def graph_legal_moves_uci(graphs: jraph.GraphsTuple) -> list[list[str]]:
    """Sorted UCI moves of the edges flagged legal, for each graph of a batch (host side, for checks and tools).

    Reads only the graph: the side to move from node feature :data:`COLOR_PLANE`, the squares from the edge
    table, the promotion piece from the promotion flags (``q`` where a mover's pawn makes a queen-promotion edge).
    """
    nodes, edges = np.asarray(graphs.nodes), np.asarray(graphs.edges)
    num_graphs = int(np.asarray(graphs.n_node).shape[0])
    graph = graph_for_num_edges(edges.shape[0] // num_graphs)
    nodes = nodes.reshape(num_graphs, graph.num_nodes, -1)
    edges = edges.reshape(num_graphs, graph.num_edges, -1)
    promotion_queen = graph.edge_feature("promotion_queen") > 0
    moves = []
    for position_nodes, position_edges in zip(nodes, edges):
        color = int(position_nodes[0, COLOR_PLANE] > 0.5)
        mover_pawn_on = position_nodes[:, MOVER_PAWN_PLANE] > 0.5
        names = [square_name(square, graph.board_size, color) for square in range(graph.num_nodes)]
        position_moves = []
        for edge in np.flatnonzero(position_edges[:, LEGAL_FEATURE] > 0.5):
            sender, receiver = graph.senders[edge], graph.receivers[edge]
            uci = names[sender] + names[receiver]
            if graph.underpromotion[edge] >= 0:
                uci += PROMOTION_PIECES[graph.underpromotion[edge]]
            elif promotion_queen[edge] and mover_pawn_on[sender]:
                uci += "q"
            position_moves.append(uci)
        moves.append(sorted(position_moves))
    return moves


def _stack_states(states: Sequence) -> tuple[np.ndarray, np.ndarray]:
    observation = np.stack([np.asarray(state.observation) for state in states])
    legal_action_mask = np.stack([np.asarray(state.legal_action_mask) for state in states])
    return observation, legal_action_mask


def main(argv: Sequence[str] | None = None) -> int:
    """Print the legal moves the graph encodes for each FEN of a file; 1 if any line could not be read."""
    parser = argparse.ArgumentParser(
        prog="python -m alphagateau.graph_tools",
        description="For each FEN line, print the sorted UCI moves of the graph's edges flagged legal.",
    )
    parser.add_argument("--game", choices=("chess", "gardner_chess"), default="chess")
    parser.add_argument("--fens", required=True, type=pathlib.Path, help="file with one FEN per line")
    parser.add_argument("--stats", action="store_true", help="also print node, edge and feature counts")
    args = parser.parse_args(argv)

    from zerolab import make_game  # pgx import is slow: only for the command
    from zerolab.games import InvalidPositionError

    try:
        lines = args.fens.read_text().splitlines()
    except OSError as error:
        print(f"error: cannot read {args.fens}: {error.strerror}", file=sys.stderr)
        return 2
    game = make_game(args.game)
    graph = board_graph(game.board_size)
    if args.stats:
        print(
            f"# {args.game}: {graph.num_nodes} nodes, {graph.num_edges} edges, "
            f"{NUM_NODE_FEATURES} node features, {NUM_EDGE_FEATURES} edge features"
        )

    results: list[tuple[int, str | None, object]] = []  # (line number, error, state)
    for line_number, line in enumerate(lines, start=1):
        fen = line.strip()
        if not fen or fen.startswith("#"):
            continue
        try:
            results.append((line_number, None, game.from_fen(fen)))
        except (InvalidPositionError, ValueError) as error:
            results.append((line_number, str(error), None))

    states = [state for _, error, state in results if error is None]
    moves = iter(graph_legal_moves_uci(build_graphs(*_stack_states(states))) if states else [])
    failed = False
    for line_number, error, _ in results:
        if error is not None:
            failed = True
            print(f"error: line {line_number}: {error}")
            continue
        position_moves = next(moves)
        if args.stats:
            print(f"# line {line_number}: {len(position_moves)} legal edges")
        print(" ".join(position_moves))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["build_graphs", "graph_legal_moves_uci", "main"]
