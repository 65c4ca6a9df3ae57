"""SAI's search: PUCT (or Gumbel) through the core's rules and loop, with a per-node α, β and komi and the λ backup.

Every node of the tree carries a :class:`SaiEmbedding`: its pgx state (compact, :meth:`zerolab.games.Game.pack_state`),
the network's α and β there (exact values at
finished games, :data:`TERMINAL_BETA`), who is to move and the game's komi.  Rewards are 0 and discounts −1, so a
node's value is always from its own mover's view, in [−1, 1] (``2·winrate − 1``).

The λ agent (:func:`lambda_rules`) values a node r from a node s by the mean of r's winrate over the bonuses between
0 and ``x̄_s`` (:func:`sai_go.value.lambda_bonus`), an interval fixed at s.  The Q of a child c seen by its parent s
is the mean of that value over every node r in c's subtree, c included; so when a new leaf is added, each ancestor
c on its path takes the leaf's value at the interval of **c's parent** (the root at its own, for reporting).  That
is :func:`lambda_backup`, a :data:`~zerolab.search.config.BackupFn`; mctx's own backup carries one scalar up the path,
which cannot give each ancestor its own value.  At λ = 0 every interval is empty and the backup equals mctx's with the
value ``2ρ(0) − 1``, bit for bit.
"""

from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import mctx
import pgx

from zerolab import (
    GoGame,
    NetworkInputs,
    SearchConfig,
    SearchRules,
    Tree,
    masked_logits,
)
from zerolab.networks import apply_network
from zerolab.search import RecurrentFn, RecurrentOutput, search_policy
from sai_go.network import SigmoidValue, sigmoid_value
from sai_go.scoring import terminal_alpha
from sai_go.value import lambda_bonus, mean_winrate, signed_komi

#: β of a finished game: its α is exact, so its winrate is a near step at the margin.
TERMINAL_BETA = 10.0


@flax.struct.dataclass
class SaiEmbedding:
    """A search node, batched ``[B, ...]`` (``[B, N, ...]`` inside the tree).

    Attributes:
      state: the pgx state, compact (:meth:`zerolab.games.Game.pack_state`; a finished game's copies below it keep
        its state).
      alpha, beta: the sigmoid's parameters for the node's mover (exact at finished games).
      black_to_move: the node's mover is Black (alternates with depth, also below finished games).
      komi: the game's komi, to White.
    """

    state: pgx.State
    alpha: jax.Array
    beta: jax.Array
    black_to_move: jax.Array
    komi: jax.Array

    @property
    def signed_komi(self) -> jax.Array:
        return signed_komi(self.komi, self.black_to_move)


@flax.struct.dataclass
class SaiSearchOutput:
    """One SAI search over a batch of B positions.

    Attributes:
      action: [B] most visited legal move (PUCT) or Gumbel's choice.
      policy_target: [B, A] the policy to train on.
      visit_counts: [B, A] root visits.
      root_value: [B] the root's searched value for its mover, at its own λ interval, in [−1, 1].
      root_prior_logits: [B, A] the network's prior logits at the root (illegal moves at the dtype's minimum).
      alpha, beta: [B] the network's α, β at the root (mover's view).
      black_to_move: [B] the root's mover is Black.
      score_estimate: [B] Black's expected margin at the game's komi, ``α^B − k`` from the root's network output.
      searched_score_estimate: [B] the same from the root's children, weighted by their visits.
      tree: the search tree when asked for (:class:`zerolab.search.Tree`; mctx's with ``mctx_loop=True``).
    """

    action: jax.Array
    policy_target: jax.Array
    visit_counts: jax.Array
    root_value: jax.Array
    root_prior_logits: jax.Array
    alpha: jax.Array
    beta: jax.Array
    black_to_move: jax.Array
    score_estimate: jax.Array
    searched_score_estimate: jax.Array
    tree: Any = None


def check_lambda(lam: float | jax.Array, key: str = "lam") -> float | jax.Array:
    """``lam`` as a float in [0, 1], or a ValueError naming ``key``; a traced λ (one compiled search for every λ)
    is passed through unchecked."""
    if isinstance(lam, jax.core.Tracer):
        return lam
    try:
        value = float(lam)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be a number in [0, 1], got {lam!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{key} must be in [0, 1], got {value}")
    return value


def evaluate(network: nn.Module, variables: Any, states: pgx.State) -> tuple[jax.Array, SigmoidValue]:
    """``(masked policy logits [B, A], SigmoidValue [B])`` of a batch of states, in evaluation mode."""
    output, _ = apply_network(network, variables, NetworkInputs.from_states(states), train=False)
    return masked_logits(output.policy_logits, states.legal_action_mask), sigmoid_value(output)


def node_value(alpha: jax.Array, beta: jax.Array, signed_komi: jax.Array, bonus: jax.Array) -> jax.Array:
    """A node's value for its own mover, in [−1, 1]: ``2·mean(ρ over [0, bonus]) − 1``."""
    return 2.0 * mean_winrate(alpha, beta, signed_komi, 0.0, bonus) - 1.0


def root_output(game: GoGame, network: nn.Module, variables: Any, states: pgx.State, komi: jax.Array,
                lam: float) -> mctx.RootFnOutput:
    """mctx's root: the network's priors, the root's value at its own interval and :class:`SaiEmbedding` nodes."""
    logits, value = evaluate(network, variables, states)
    komi = jnp.broadcast_to(jnp.asarray(komi, jnp.float32), value.alpha.shape)
    embedding = SaiEmbedding(game.pack_state(states), value.alpha, value.beta, game.black_to_move(states), komi)
    bonus = lambda_bonus(value.alpha, value.beta, embedding.signed_komi, lam)
    return mctx.RootFnOutput(prior_logits=logits, value=node_value(value.alpha, value.beta, embedding.signed_komi,
                                                                    bonus), embedding=embedding)


def make_recurrent_fn(game: GoGame, network: nn.Module) -> RecurrentFn:
    """The search's recurrent function over :class:`SaiEmbedding` nodes: reward 0, discount −1, value ``2ρ(0) − 1``.

    A move into a finished game gets exact α (:func:`sai_go.scoring.terminal_alpha`) and β = :data:`TERMINAL_BETA`;
    below a finished game (pgx does not move any more) each copy is the finished game seen by the other side.
    """

    def recurrent_fn(variables, key, action, embedding: SaiEmbedding):
        del key
        previous = game.unpack_state(embedding.state)
        states = jax.vmap(game.step)(previous, action)
        logits, value = evaluate(network, variables, states)
        black_to_move = ~embedding.black_to_move
        was_over, now_over = previous.terminated, states.terminated
        exact_alpha = terminal_alpha(game, states, embedding.komi, black_to_move)
        alpha = jnp.where(was_over, -embedding.alpha, jnp.where(now_over, exact_alpha, value.alpha))
        beta = jnp.where(was_over, embedding.beta, jnp.where(now_over, TERMINAL_BETA, value.beta))
        child = SaiEmbedding(game.pack_state(states), alpha, beta, black_to_move, embedding.komi)
        zeros = jnp.zeros_like(alpha)
        output = RecurrentOutput(reward=zeros, discount=zeros - 1.0, prior_logits=logits,
                                 value=node_value(alpha, beta, child.signed_komi, zeros),
                                 legal_action_mask=states.legal_action_mask)
        return output, child

    return recurrent_fn


def lambda_backup(lam: float):
    """The λ agent's :data:`~zerolab.search.config.BackupFn` (see the module docstring), over one unbatched tree."""

    def backup(tree: Tree, leaf_index: chex.Numeric) -> Tree:
        nodes: SaiEmbedding = tree.embeddings
        node_signed_komi = nodes.signed_komi
        bonus = lambda_bonus(nodes.alpha, nodes.beta, node_signed_komi, lam)  # [N] each node's own interval end
        leaf = jnp.asarray(leaf_index, jnp.int32)
        leaf_mover = nodes.black_to_move[leaf]

        def leaf_value_at_interval_of(node):
            """The leaf's value for its own mover over ``node``'s interval (a bonus to ``node``'s mover)."""
            same_mover = nodes.black_to_move[node] == leaf_mover
            leaf_bonus = jnp.where(same_mover, bonus[node], -bonus[node])
            return node_value(nodes.alpha[leaf], nodes.beta[leaf], node_signed_komi[leaf], leaf_bonus)

        def interval_owner(node):
            parent = tree.parents[node]
            return jnp.where(parent == Tree.NO_PARENT, node, parent)

        tree = tree.replace(node_values=tree.node_values.at[leaf].set(leaf_value_at_interval_of(interval_owner(leaf))))

        def has_parent(loop_state):
            _, index = loop_state
            return index != Tree.ROOT_INDEX

        def back_up_one_level(loop_state):
            tree, index = loop_state
            parent = tree.parents[index]
            value = leaf_value_at_interval_of(interval_owner(parent))
            value = jnp.where(nodes.black_to_move[parent] == leaf_mover, value, -value)
            count = tree.node_visits[parent]
            slot = tree.slot_from_parent[index]
            tree = tree.replace(
                node_values=tree.node_values.at[parent].set((tree.node_values[parent] * count + value) / (count + 1.0)),
                node_visits=tree.node_visits.at[parent].set(count + 1),
                children_values=tree.children_values.at[parent, slot].set(tree.node_values[index]),
                children_visits=tree.children_visits.at[parent, slot].add(1),
            )
            return tree, parent

        tree, _ = jax.lax.while_loop(has_parent, back_up_one_level, (tree, leaf))
        return tree

    return backup


def lambda_rules(search_config: SearchConfig | None = None, lam: float = 0.0) -> SearchRules:
    """The λ agent's rules (``search.rules = "sai_go.search:lambda_rules"``, ``search.rule_options.lam``)."""
    del search_config
    return SearchRules(backup_fn=lambda_backup(check_lambda(lam, "search.rule_options.lam")))


def root_score_estimates(tree: Tree) -> tuple[jax.Array, jax.Array]:
    """``([B] root network's α^B − k, [B] the same averaged over the root's children by visits)``."""
    nodes: SaiEmbedding = tree.embeddings
    black_sign = jnp.where(nodes.black_to_move, 1.0, -1.0)
    black_alpha = black_sign * nodes.alpha  # [B, N]
    root_estimate = black_alpha[:, 0] - nodes.komi[:, 0]
    children = tree.children_index[:, 0]  # [B, K]
    visits = tree.children_visits[:, 0].astype(jnp.float32)
    child_alpha = jnp.take_along_axis(black_alpha, jnp.maximum(children, 0), axis=1)
    weighted = (visits * child_alpha).sum(-1) / jnp.maximum(visits.sum(-1), 1.0)
    searched = jnp.where(visits.sum(-1) > 0, weighted, black_alpha[:, 0]) - nodes.komi[:, 0]
    return root_estimate, searched


def sai_search(config: SearchConfig, game: GoGame, network: nn.Module, variables: Any, key: jax.Array,
               states: pgx.State, komi: jax.Array, lam: float = 0.0, rules: SearchRules | None = None,
               keep_tree: bool = False, mctx_loop: bool = False) -> SaiSearchOutput:
    """SAI's search from each of the batched ``states`` at its game's ``komi`` [B] (jittable; config, game and network
    static, λ a number or a traced scalar).

    ``rules`` default to :func:`lambda_rules` at ``lam``; like the core's ``run_search``, every search runs in the
    project's simulation loop.  ``mctx_loop=True`` runs mctx's own loop and backup instead (value ``2ρ(0) − 1``, the
    same search as λ = 0): the reference for the λ = 0 equivalence test and the benchmark; it refuses ``rules`` that
    change the simulations and needs ``lam`` = 0 (the root's value is taken at the root's own λ interval).
    """
    lam = check_lambda(lam)
    if mctx_loop:
        if rules is not None and rules.changes_simulations:
            raise ValueError("mctx_loop=True runs mctx's own simulations and backup; these search rules replace "
                             "them: search with mctx_loop=False")
        if not isinstance(lam, jax.core.Tracer) and lam != 0.0:
            raise ValueError(f"mctx_loop=True is mctx's backup, the λ = 0 search; got lam={lam}")
    root = root_output(game, network, variables, states, komi, lam)
    if rules is None:
        rules = lambda_rules(config, lam)
    output = search_policy(config, variables, key, root, make_recurrent_fn(game, network), states.legal_action_mask,
                           rules=None if mctx_loop else rules, num_slots=game.max_legal_actions, mctx_loop=mctx_loop)
    tree = output.search_tree
    visit_counts = output.visit_counts
    if config.kind == "gumbel":
        action = output.action
    else:
        action = jnp.argmax(jnp.where(states.legal_action_mask, visit_counts, -1), axis=-1).astype(jnp.int32)
    root_estimate, searched_estimate = root_score_estimates(tree)
    return SaiSearchOutput(
        action=action,
        policy_target=output.action_weights,
        visit_counts=visit_counts,
        root_value=tree.node_values[:, Tree.ROOT_INDEX],
        root_prior_logits=output.root_prior_logits,
        alpha=root.embedding.alpha,
        beta=root.embedding.beta,
        black_to_move=root.embedding.black_to_move,
        score_estimate=root_estimate,
        searched_score_estimate=searched_estimate,
        tree=tree if keep_tree else None,
    )
