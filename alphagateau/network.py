"""The AlphaGateau network: chess graph → ResGATEAU tower → edge policy and attention-pooled value.

A zerolab network (``(inputs, train) -> (policy_logits [B, A], value [B])``) chosen with
``config.model.name = "alphagateau.network:make_alphagateau"``.  It reads only the :class:`NetworkInputs` a replay
frame stores and builds the graph itself (:func:`alphagateau.graph.graph_features`), so it drops into self-play,
training and search unchanged.  Nothing in the parameters depends on the board size: the same variables run on
5×5 Gardner chess and 8×8 chess.

Command line: ``python -m alphagateau.network --count`` prints the parameter counts of AlphaGateau and of the
zerolab AlphaZero ResNet; ``--benchmark`` times graph building against the network's forward pass.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from alphagateau.graph import board_graph, board_size_of, graph_features, slot_logits_to_action_logits
from alphagateau.layers import BLOCKS, POOLINGS, AttentionPooling, GraphBatch, ResGATEAU, SlotBatchNorm
from zerolab import AlphaZeroResNet, NetworkInputs, NetworkOutput, check_at_least, check_choice, section_dataclass
from zerolab.networks import count_parameters


#: ``model.heads`` values: the paper's heads (Figures 3 and 4) and the single linear layers trained with before.
HEADS = ("paper", "linear")
#: The paper's architecture (the experiments' presets use it); a config without these keys gets the architecture
#: checkpoints were written with before the keys existed (:data:`LEGACY_ARCHITECTURE`).
PAPER_ARCHITECTURE = {"block": "pre_activation", "heads": "paper", "pooling": "paper"}
LEGACY_ARCHITECTURE = {"block": "post_activation", "heads": "linear", "pooling": "projected"}


class AlphaGateau(nn.Module):
    """AlphaGateau (paper, Figures 2–4).

    Node features [B, N, 119] and edge features [B, E, 15] are embedded by one linear layer each into
    ``channels`` H and go through ``num_blocks`` :class:`ResGATEAU` blocks (``block``); then, with ``heads``:

    * ``'paper'`` — policy head (Figure 4): edges → BNR → Linear H → BNR → Linear 1, one logit per edge; value head
      (Figure 3): nodes → BNR → Linear H → BNR → :class:`AttentionPooling` → ReLU → Linear 1 → tanh;
    * ``'linear'`` — policy: Linear 1 on the edges; value: :class:`AttentionPooling` → Linear 1 → tanh.

    Edge logits [B, E] are mapped to the [B, A] action logits (actions that are not edges get
    :data:`alphagateau.graph.NON_EDGE_LOGIT`; illegal edges are left to the caller's mask, as with the ResNet).
    ``BNR(x) = ReLU(BatchNorm(x))``.

    Attributes:
      channels: H, the size of node and edge features inside the tower.
      num_blocks: number of ResGATEAU blocks L.
      negative_slope: LeakyReLU slope of the GATEAU attention (and of the paper's pooling scores).
      batch_norm_momentum: momentum of the BatchNorm running statistics.
      block: the residual block, one of :data:`alphagateau.layers.BLOCKS`.
      heads: one of :data:`HEADS`.
      pooling: the value head's pooling, one of :data:`alphagateau.layers.POOLINGS`.
      dtype: the computation dtype (``model.dtype``); parameters stay float32 and the outputs are float32.
    """

    channels: int = 128
    num_blocks: int = 5
    negative_slope: float = 0.2
    batch_norm_momentum: float = 0.9
    block: str = LEGACY_ARCHITECTURE["block"]
    heads: str = LEGACY_ARCHITECTURE["heads"]
    pooling: str = LEGACY_ARCHITECTURE["pooling"]
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, inputs: NetworkInputs, train: bool = False) -> NetworkOutput:
        """``(policy_logits [B, A], value [B])`` of a batch of chess (8×8) or Gardner chess (5×5) positions."""
        if self.heads not in HEADS:
            raise ValueError(f"model.heads must be one of {HEADS}, got {self.heads!r}")
        topology = board_graph(board_size_of(inputs.observation.shape)).topology
        nodes, edges = graph_features(inputs.observation, inputs.legal_action_mask)

        def dense(features: int, name: str) -> nn.Dense:
            return nn.Dense(features, dtype=self.dtype, name=name)

        def last_layer(name: str, features: jax.Array) -> jax.Array:
            """The heads' last linear layer, one output, in float32 (the core's mixed-precision rule)."""
            return nn.Dense(1, dtype=jnp.float32, name=name)(features.astype(jnp.float32))[..., 0]

        graphs = GraphBatch(nodes=dense(self.channels, "node_embedding")(nodes),
                            edges=dense(self.channels, "edge_embedding")(topology.to_slots(edges)))
        for index in range(self.num_blocks):
            graphs = ResGATEAU(self.channels, self.negative_slope, self.batch_norm_momentum, self.block,
                               self.dtype, name=f"block_{index}")(graphs, topology, train)

        def bnr(features: jax.Array, name: str) -> jax.Array:
            """ReLU(BatchNorm(features)): nodes [B, N, H] or edges in the slot layout [B, N, D, H]."""
            if features.ndim == 4:
                return nn.relu(SlotBatchNorm(not train, self.batch_norm_momentum, dtype=self.dtype, name=name)(
                    features, topology))
            norm = nn.BatchNorm(use_running_average=not train, momentum=self.batch_norm_momentum, dtype=self.dtype,
                                name=name)
            return nn.relu(norm(features))

        pooling = AttentionPooling(self.channels, self.pooling, self.negative_slope, self.dtype,
                                   name="value_pooling")
        if self.heads == "paper":
            edges = bnr(dense(self.channels, "policy_hidden")(bnr(graphs.edges, "policy_norm_1")),
                        "policy_norm_2")
            edge_logits = last_layer("policy_head", edges)
            nodes = bnr(dense(self.channels, "value_hidden")(bnr(graphs.nodes, "value_norm_1")),
                        "value_norm_2")
            pooled = nn.relu(pooling(nodes))
        else:
            edge_logits = last_layer("policy_head", graphs.edges)
            pooled = pooling(graphs.nodes)
        value = jnp.tanh(last_layer("value_head", pooled))
        return NetworkOutput(slot_logits_to_action_logits(edge_logits), value)


CHESS_GAMES = ("chess", "gardner_chess")
# AlphaGateau's width in configs recorded before it took ``channels``, the name every network's width has.
LEGACY_WIDTH_KEY = "embedding_size"


def make_alphagateau(model_config: Any, game: Any) -> AlphaGateau:
    """Factory for ``config.model.name = "alphagateau.network:make_alphagateau"``.

    Reads ``channels`` (H, 128 by default: the width key every network shares, so that a ResNet config switches with
    the one override ``model.name=alphagateau.network:make_alphagateau``; a run recorded before the rename names it
    :data:`LEGACY_WIDTH_KEY`, which then wins, as it did), ``num_blocks`` (5),
    ``negative_slope`` (0.2), ``batch_norm_momentum`` (0.9) and the architecture keys ``block``, ``heads`` and
    ``pooling`` from ``model_config``; ``game`` must be ``chess`` or ``gardner_chess``.  The experiments' configs set
    the architecture keys to the paper's (:data:`PAPER_ARCHITECTURE`); a config without them — every run written
    before they existed — gets :data:`LEGACY_ARCHITECTURE`, the one its checkpoints hold.
    """
    if getattr(game, "name", None) not in CHESS_GAMES:
        raise ValueError(f"AlphaGateau plays {' and '.join(CHESS_GAMES)}, not {getattr(game, 'name', game)!r}")
    section = dict(model_config.items())
    if LEGACY_WIDTH_KEY in section:  # a run recorded before the width was named channels
        section["channels"] = section.pop(LEGACY_WIDTH_KEY)
    # the module's own fields, typed; model.name and model.dtype are the core's (zerolab.networks.make_network)
    network = section_dataclass(AlphaGateau, section, "model", read_elsewhere=("name", "dtype"), shared=True)
    for key, allowed in (("block", BLOCKS), ("heads", HEADS), ("pooling", POOLINGS)):
        check_choice(f"model.{key}", getattr(network, key), allowed)
    check_at_least("model.channels", network.channels, 1)
    check_at_least("model.num_blocks", network.num_blocks, 0)
    return network


# --- parameter counts and timing -----------------------------------------------------------------------------------


def _abstract_inputs(board_size: int, batch_size: int = 1) -> NetworkInputs:
    channels, num_actions = {8: (119, 4672), 5: (115, 1225)}[board_size]
    return NetworkInputs(
        observation=jax.ShapeDtypeStruct((batch_size, board_size, board_size, channels), jnp.float32),
        legal_action_mask=jax.ShapeDtypeStruct((batch_size, num_actions), jnp.bool_),
    )


def parameter_counts(channels: int = 128, num_blocks: int = 5) -> dict[str, int]:
    """Parameters of AlphaGateau with the paper's architecture (``alphagateau``) and the earlier one
    (``alphagateau_legacy``), and of the zerolab AlphaZero ResNet (8×8, the same ``channels``).

    Counted from abstract shapes (``jax.eval_shape``), so nothing is computed.
    """
    networks = {
        "alphagateau": AlphaGateau(channels=channels, num_blocks=num_blocks, **PAPER_ARCHITECTURE),
        "alphagateau_legacy": AlphaGateau(channels=channels, num_blocks=num_blocks),
        "alphazero_resnet": AlphaZeroResNet(num_actions=4672, channels=channels, num_blocks=num_blocks),
    }
    counts = {}
    for name, network in networks.items():
        variables = jax.eval_shape(
            lambda key, inputs, network=network: network.init(key, inputs, train=False),
            jax.random.key(0),
            _abstract_inputs(8),
        )
        counts[name] = count_parameters(variables["params"])
    return counts


def _random_inputs(game: Any, batch_size: int, num_plies: int, key: jax.Array) -> NetworkInputs:
    """Positions after ``num_plies`` uniformly random legal moves from the start (for timing)."""

    def random_ply(state, key):
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.vmap(jax.random.categorical)(key, logits)
        return jax.vmap(game.step)(state, action), None

    @jax.jit
    def play(key):
        init_key, play_key = jax.random.split(key)
        states = jax.vmap(game.init)(jax.random.split(init_key, batch_size))
        keys = jax.random.split(play_key, (num_plies, batch_size))
        states, _ = jax.lax.scan(random_ply, states, keys)
        return NetworkInputs.from_states(states)

    return play(key)


def _milliseconds_per_call(function, *arguments, repeats: int) -> float:
    jax.block_until_ready(function(*arguments))  # compile
    start = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(function(*arguments))
    return 1000 * (time.perf_counter() - start) / repeats


def benchmark_graph_building(
    game_names: Sequence[str] = CHESS_GAMES,
    batch_size: int = 64,
    channels: int = 128,
    num_blocks: int = 5,
    repeats: int = 5,
) -> list[dict[str, Any]]:
    """Time graph building, the AlphaGateau forward pass and the AlphaZero ResNet's; print and return the rows.

    Inference mode, jitted, compile excluded; positions are 20 random plies deep.  The AlphaGateau forward pass
    includes its own graph building, so ``graph_share`` is the fraction of it spent building the graph.  The ResNet
    has the same ``channels`` and number of blocks.
    """
    from zerolab import make_game

    rows = []
    for game_name in game_names:
        game = make_game(game_name)
        inputs = _random_inputs(game, batch_size, num_plies=20, key=jax.random.key(0))
        networks = {
            "alphagateau": AlphaGateau(channels=channels, num_blocks=num_blocks),
            "resnet": AlphaZeroResNet(num_actions=game.num_actions, channels=channels, num_blocks=num_blocks),
        }
        row = {"game": game_name, "batch_size": batch_size}
        row["graph_ms"] = _milliseconds_per_call(
            jax.jit(graph_features), inputs.observation, inputs.legal_action_mask, repeats=repeats
        )
        for name, network in networks.items():
            variables = jax.jit(lambda key, network=network: network.init(key, inputs, train=False))(jax.random.key(1))
            forward = jax.jit(lambda variables, inputs, network=network: network.apply(variables, inputs, train=False))
            row[f"{name}_forward_ms"] = _milliseconds_per_call(forward, variables, inputs, repeats=repeats)
        row["graph_share"] = row["graph_ms"] / row["alphagateau_forward_ms"]
        print(
            f"{game_name:>13}  batch {batch_size}:  graph building {row['graph_ms']:8.2f} ms  "
            f"AlphaGateau forward {row['alphagateau_forward_ms']:8.2f} ms (graph {100 * row['graph_share']:.1f}%)  "
            f"ResNet forward {row['resnet_forward_ms']:8.2f} ms"
        )
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m alphagateau.network", description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", action="store_true", help="print parameter counts (AlphaGateau vs ResNet)")
    parser.add_argument("--benchmark", action="store_true", help="time graph building vs network forward")
    parser.add_argument("--channels", type=int, default=128)
    parser.add_argument("--num-blocks", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if not (args.count or args.benchmark):
        parser.error("nothing to do: give --count and/or --benchmark")
    if args.count:
        counts = parameter_counts(args.channels, args.num_blocks)
        print(f"AlphaGateau ({args.channels} channels, {args.num_blocks} blocks): {counts['alphagateau']:,} "
              f"(the paper's architecture; {counts['alphagateau_legacy']:,} with the earlier blocks and heads)")
        print(
            f"AlphaZero ResNet (8x8, {args.channels} channels, {args.num_blocks} blocks): "
            f"{counts['alphazero_resnet']:,}"
        )
    if args.benchmark:
        device = jax.devices()[0]
        print(f"{device.device_kind} ({jax.device_count()} device(s)), jax {jax.__version__}")
        benchmark_graph_building(
            batch_size=args.batch_size,
            channels=args.channels,
            num_blocks=args.num_blocks,
            repeats=args.repeats,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
