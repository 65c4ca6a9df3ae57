"""Chess as a graph: squares are nodes, AlphaZero moves that stay on the board are edges.

One static :class:`BoardGraph` per board size (8×8 chess, 5×5 Gardner chess) lists the edges once, with numpy, from
the pgx action table (:func:`zerolab.games.chess.move_table`): every action whose destination is on the board is
one directed edge ``source square → destination square``.  That gives exactly

* 8×8: 1792 queen/knight moves + 66 under-promotions = **1858** edges (lc0's policy size);
* 5×5: 416 queen/knight moves + 39 under-promotions = **455** edges.

An under-promotion is its own edge, parallel to the queen-move edge with the same squares; a queen promotion is the
ordinary pawn move onto the last rank (as in pgx), so it is not a separate edge.  ``BoardGraph.action_edge`` maps an
action id to its edge (-1 for the 4672 − 1858 actions that leave the board, which are never legal) and
``BoardGraph.edge_action`` maps back, which turns one logit per edge into the ``[B, A]`` policy.

**Frame.** pgx shows every position from the side to move: squares are numbered ``file * n + rank`` with rank 0 the
mover's first rank (a vertical mirror for Black: files keep their letters), the mover's pawns always move up and its
pieces are planes 0–5 of the observation.  The graph lives in the same frame, so its static edge features need no
colour: the paper's "white pawn / white king" flags are the **mover's** pawn and king (moving up, castling from
rank 0) and "black pawn / black king" the **opponent's** (moving down, castling from the last rank).  When White is
to move this is exactly the paper's definition; when Black is to move it is its mirror image, which is what a network
that sees every position from the mover's side needs.  The mover's colour stays available as node feature 112.

**Node features** ``[N, 119]``: the observation planes of the square.  8×8 chess has 119 planes (112 history,
colour, total move count, 4 castling rights, no-progress count); Gardner chess has 115 (no castling planes), so four
zero planes are inserted before its no-progress plane and every channel means the same thing on both boards.

**Edge features** ``[E, 15]`` (paper, Table 2), in :data:`EDGE_FEATURE_NAMES` order:

====  ===================================  ==========================================================
 0    ``legal``                            1 if the action is legal in this position (the only
                                           feature that depends on the position)
 1-2  ``files_left``, ``ranks_up``         squares moved toward the a-file / toward the opponent,
                                           divided by 7 (the longest move on the largest board, so a
                                           one-square step has the same value on 5×5 and 8×8)
 3-6  ``promotion_knight`` … ``_queen``     the move promotes to that piece (queen: a mover's pawn
                                           move onto the last rank; the others: the under-promotion
                                           edges)
 7-8  ``mover_pawn``, ``opponent_pawn``    a pawn of that side could make this move (steps, double
                                           steps on 8×8, captures, promotions)
 9-12 ``knight`` … ``queen``               that piece could make this move
13-14 ``mover_king``, ``opponent_king``    that king could make it (8×8: castling from its home
                                           square included; Gardner chess has no castling)
====  ===================================  ==========================================================

The network reads a batch as dense arrays, nodes [B, N, 119] and edges [B, E, 15] (:func:`graph_features`), with the
board's fixed :class:`~alphagateau.topology.Topology` (``BoardGraph.topology``): message passing is gathers with
constant tables and dense products, and the policy's edge → action map is a :class:`~alphagateau.topology.FixedGather`
too, so neither the forward pass nor its gradient holds a scatter.  :func:`graph_features` reads only what a replay
frame stores (observation and legal-action mask), so the network builds its graph inside ``__call__``.
:func:`alphagateau.graph_tools.build_graphs` gives the same batch as one :class:`jraph.GraphsTuple` (the tools' and
tests' view; its command line prints the legal moves a FEN's graph encodes).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from alphagateau.topology import FixedGather, Topology
from zerolab.games import move_table

BOARD_SIZES = (5, 8)
NUM_NODE_FEATURES = 119
"""Node features per square on every board (the 8×8 observation layout)."""

GARDNER_NUM_PLANES = 115
NO_PROGRESS_PLANE = 118
"""Index of the no-progress-count plane in the shared 119-plane layout (114 in Gardner's own 115 planes)."""
COLOR_PLANE = 112
"""Node feature that is 1 on every square when Black is to move."""
MOVER_PAWN_PLANE = 0
"""Node feature that is 1 on squares holding a pawn of the side to move."""

EDGE_FEATURE_NAMES = (
    "legal",
    "files_left",
    "ranks_up",
    "promotion_knight",
    "promotion_bishop",
    "promotion_rook",
    "promotion_queen",
    "mover_pawn",
    "opponent_pawn",
    "knight",
    "bishop",
    "rook",
    "queen",
    "mover_king",
    "opponent_king",
)
NUM_EDGE_FEATURES = len(EDGE_FEATURE_NAMES)
LEGAL_FEATURE = EDGE_FEATURE_NAMES.index("legal")

MAX_MOVE_DISTANCE = 7
"""Displacements are divided by this (the longest move on 8×8) so that they mean the same on every board."""

NON_EDGE_LOGIT = -1e9
"""Logit given to actions that are not edges (they leave the board and are never legal).

Finite on purpose: ``0 * NON_EDGE_LOGIT`` is 0 in a cross-entropy, where ``-inf`` or ``finfo.min`` could give NaN."""

_UNDERPROMOTION_FEATURE = {0: "promotion_rook", 1: "promotion_bishop", 2: "promotion_knight"}
_HAS_DOUBLE_STEP_AND_CASTLING = {8: True, 5: False}  # Gardner chess: single pawn steps, no castling


@dataclasses.dataclass(frozen=True, eq=False)
class BoardGraph:
    """The fixed move graph of one board size, in the mover's frame (numpy arrays, built once).

    Attributes:
      board_size: n (8 or 5).
      num_actions: A, the size of pgx's action space (4672 or 1225).
      senders: [E] source square of each edge (``file * n + rank``).
      receivers: [E] destination square of each edge.
      edge_action: [E] pgx action id of each edge.
      action_edge: [A] edge id of each action, -1 for actions that leave the board.
      underpromotion: [E] 0 rook, 1 bishop, 2 knight, -1 for edges that are not under-promotions.
      static_edge_features: [E, 15] the edge features with the ``legal`` column left at 0.
    """

    board_size: int
    num_actions: int
    senders: np.ndarray
    receivers: np.ndarray
    edge_action: np.ndarray
    action_edge: np.ndarray
    underpromotion: np.ndarray
    static_edge_features: np.ndarray

    @property
    def num_nodes(self) -> int:
        return self.board_size**2

    @property
    def num_edges(self) -> int:
        return int(self.senders.shape[0])

    def edge_feature(self, name: str) -> np.ndarray:
        """[E] the static edge feature called ``name`` (see :data:`EDGE_FEATURE_NAMES`)."""
        return self.static_edge_features[:, EDGE_FEATURE_NAMES.index(name)]

    @functools.cached_property
    def topology(self) -> Topology:
        """The move graph's :class:`~alphagateau.topology.Topology` (its gathers and incoming-edge slots)."""
        return Topology(self.senders, self.receivers, self.num_nodes)

    @functools.cached_property
    def edges_to_actions(self) -> FixedGather:
        """[B, E] per-edge values → [B, A] per-action values (actions that are not edges read the fill)."""
        return FixedGather(self.action_edge, self.num_edges)

    @functools.cached_property
    def slots_to_actions(self) -> FixedGather:
        """[B, N·D] values in the topology's slot layout → [B, A] per-action values (non-edges read the fill)."""
        topology = self.topology
        index = np.where(self.action_edge >= 0, topology.edge_slot[np.maximum(self.action_edge, 0)], -1)
        return FixedGather(index.astype(np.int32), self.num_nodes * topology.slots_per_node)

    @functools.cached_property
    def actions_to_edges(self) -> FixedGather:
        """[B, A] per-action values → [B, E] the values of the edges."""
        return FixedGather(self.edge_action, self.num_actions)


@functools.cache
def board_graph(board_size: int) -> BoardGraph:
    """The :class:`BoardGraph` of an ``board_size`` × ``board_size`` board (8: chess, 5: Gardner chess)."""
    if board_size not in BOARD_SIZES:
        raise ValueError(f"board_size must be one of {BOARD_SIZES}, got {board_size}")
    table = move_table(board_size)
    edge_action = np.flatnonzero(table.to_square >= 0).astype(np.int32)
    senders = table.from_square[edge_action].astype(np.int32)
    receivers = table.to_square[edge_action].astype(np.int32)
    underpromotion = table.underpromotion[edge_action].astype(np.int32)
    action_edge = -np.ones(table.num_actions, dtype=np.int32)
    action_edge[edge_action] = np.arange(edge_action.size, dtype=np.int32)
    features = _static_edge_features(board_size, senders, receivers, underpromotion)
    return BoardGraph(
        board_size=board_size,
        num_actions=table.num_actions,
        senders=senders,
        receivers=receivers,
        edge_action=edge_action,
        action_edge=action_edge,
        underpromotion=underpromotion,
        static_edge_features=features,
    )


def _static_edge_features(
    board_size: int, senders: np.ndarray, receivers: np.ndarray, underpromotion: np.ndarray
) -> np.ndarray:
    """[E, 15] float32 edge features that depend only on the edge (``legal`` left at 0)."""
    last_rank = board_size - 1
    special_rules = _HAS_DOUBLE_STEP_AND_CASTLING[board_size]
    from_file, from_rank = np.divmod(senders, board_size)
    to_file, to_rank = np.divmod(receivers, board_size)
    file_step, rank_step = to_file - from_file, to_rank - from_rank
    file_distance, rank_distance = np.abs(file_step), np.abs(rank_step)

    is_underpromotion = underpromotion >= 0
    ordinary = ~is_underpromotion  # edges that any piece may use; under-promotions are pawn-only
    pawn_rank = (from_rank >= 1) & (from_rank <= last_rank - 1)

    def pawn_move(direction: int, home_rank: int) -> np.ndarray:
        single = (rank_step == direction) & (file_distance <= 1)
        double = special_rules & (from_rank == home_rank) & (rank_step == 2 * direction) & (file_step == 0)
        return pawn_rank & (single | double)

    mover_pawn = pawn_move(+1, home_rank=1)
    opponent_pawn = ordinary & pawn_move(-1, home_rank=last_rank - 1)
    king_step = ordinary & (np.maximum(file_distance, rank_distance) == 1)

    def castling(home_rank: int) -> np.ndarray:
        return special_rules & ordinary & (from_rank == home_rank) & (from_file == 4) & (rank_step == 0) & (
            file_distance == 2
        )

    bishop = ordinary & (file_distance == rank_distance)
    rook = ordinary & ((file_step == 0) != (rank_step == 0))
    values = {
        "legal": np.zeros_like(mover_pawn),
        "files_left": -file_step / MAX_MOVE_DISTANCE,
        "ranks_up": rank_step / MAX_MOVE_DISTANCE,
        "promotion_queen": ordinary & mover_pawn & (to_rank == last_rank),
        "mover_pawn": mover_pawn,
        "opponent_pawn": opponent_pawn,
        "knight": ordinary & (np.minimum(file_distance, rank_distance) == 1) & (file_distance + rank_distance == 3),
        "bishop": bishop,
        "rook": rook,
        "queen": bishop | rook,
        "mover_king": king_step | castling(home_rank=0),
        "opponent_king": king_step | castling(home_rank=last_rank),
    }
    for code, name in _UNDERPROMOTION_FEATURE.items():
        values[name] = underpromotion == code
    return np.stack([np.asarray(values[name], dtype=np.float32) for name in EDGE_FEATURE_NAMES], axis=-1)


def board_size_of(observation_shape: Sequence[int]) -> int:
    """Board size of an observation shape ``[..., n, n, C]``; raises ``ValueError`` for non-chess shapes."""
    *_, rows, columns, channels = observation_shape
    expected = {8: NUM_NODE_FEATURES, 5: GARDNER_NUM_PLANES}
    if rows != columns or expected.get(rows) != channels:
        raise ValueError(
            f"observation shape {tuple(observation_shape)} is not a chess observation: expected [..., 8, 8, 119] "
            "(chess) or [..., 5, 5, 115] (gardner_chess)"
        )
    return rows


def node_features(observation: jax.Array) -> jax.Array:
    """Node features of one position.

    Args:
      observation: [n, n, C] pgx observation (C = 119 on 8×8, 115 on 5×5); ``observation[n - 1 - rank, file]`` is
        the square ``file * n + rank`` of the mover's frame.

    Returns:
      [N, 119] float32 features of the N = n² squares, in square order, Gardner planes padded to the 8×8 layout.
    """
    board_size = board_size_of(observation.shape)
    planes = observation.astype(jnp.float32)
    if board_size == 5:  # insert the 4 castling planes that Gardner chess does not have
        no_progress = GARDNER_NUM_PLANES - 1
        castling = jnp.zeros((*planes.shape[:-1], NO_PROGRESS_PLANE - no_progress), planes.dtype)
        planes = jnp.concatenate([planes[..., :no_progress], castling, planes[..., no_progress:]], axis=-1)
    by_file_then_rank = jnp.swapaxes(planes[::-1], 0, 1)  # [file, rank, C]
    return by_file_then_rank.reshape(board_size * board_size, NUM_NODE_FEATURES)


def edge_features(legal_action_mask: jax.Array) -> jax.Array:
    """Edge features of one position.

    Args:
      legal_action_mask: [A] bool legal actions (A = 4672 on 8×8, 1225 on 5×5).

    Returns:
      [E, 15] float32: the static features with the ``legal`` column filled in.
    """
    graph = graph_for_num_actions(legal_action_mask.shape[-1])
    legal = jnp.take(legal_action_mask, graph.edge_action, axis=-1).astype(jnp.float32)
    is_legal_column = np.arange(NUM_EDGE_FEATURES) == LEGAL_FEATURE
    return jnp.where(is_legal_column, legal[..., None], graph.static_edge_features)


def graph_features(observation: jax.Array, legal_action_mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A batch of positions as dense graph features, the network's view.

    Args:
      observation: [B, n, n, C] pgx observations (side to move's frame).
      legal_action_mask: [B, A] bool.

    Returns:
      ``(nodes [B, N, 119], edges [B, E, 15])`` float32; edge ``e`` is edge ``e`` of :func:`board_graph`, whose
      ``topology`` the batch shares.
    """
    graph = board_graph(board_size_of(observation.shape))
    batch_size = observation.shape[0]
    if legal_action_mask.shape != (batch_size, graph.num_actions):
        raise ValueError(
            f"legal_action_mask has shape {legal_action_mask.shape}, expected {(batch_size, graph.num_actions)} for "
            f"observations of shape {observation.shape}"
        )
    return jax.vmap(node_features)(observation), jax.vmap(edge_features)(legal_action_mask)


def slot_logits_to_action_logits(slot_logits: jax.Array) -> jax.Array:
    """[B, N, D] one logit per slot of the board's topology → [B, A] pgx action logits; actions that are not edges
    get :data:`NON_EDGE_LOGIT` (empty slots are read by no action)."""
    batch_size, num_nodes, _ = slot_logits.shape
    graph = board_graph({25: 5, 64: 8}[num_nodes])
    return graph.slots_to_actions(slot_logits.reshape(batch_size, -1), fill=NON_EDGE_LOGIT)


def edge_logits_to_action_logits(edge_logits: jax.Array) -> jax.Array:
    """[B, E] one logit per edge → [B, A] pgx action logits; actions that are not edges get :data:`NON_EDGE_LOGIT`."""
    graph = graph_for_num_edges(edge_logits.shape[-1])
    return graph.edges_to_actions(edge_logits, fill=NON_EDGE_LOGIT)


def action_values_to_edges(action_values: jax.Array) -> jax.Array:
    """[B, A] per-action values (a policy target, a mask) → [B, E] the values of the edges."""
    graph = graph_for_num_actions(action_values.shape[-1])
    return graph.actions_to_edges(action_values)


@functools.cache
def graph_for_num_actions(num_actions: int) -> BoardGraph:
    """The board graph whose game has ``num_actions`` actions (4672: 8×8 chess, 1225: Gardner chess)."""
    for board_size in BOARD_SIZES:
        if board_graph(board_size).num_actions == num_actions:
            return board_graph(board_size)
    raise ValueError(f"{num_actions} actions is neither chess (4672) nor gardner_chess (1225)")


@functools.cache
def graph_for_num_edges(num_edges: int) -> BoardGraph:
    """The board graph with ``num_edges`` edges (1858: 8×8 chess, 455: Gardner chess)."""
    for board_size in BOARD_SIZES:
        if board_graph(board_size).num_edges == num_edges:
            return board_graph(board_size)
    raise ValueError(f"{num_edges} edges per graph is neither chess (1858) nor gardner_chess (455)")
