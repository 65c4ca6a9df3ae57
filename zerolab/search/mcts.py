"""Search: the project's one doorway to tree search.

``run_search(config, game, network, variables, key, states)`` evaluates a batch of pgx states with the network,
searches with Gumbel MuZero or PUCT (with Dirichlet noise at the root) and returns the chosen action, the policy target
and the root value.  The search runs in the project's loop (:func:`search`) over a tree of legal moves
(:class:`zerolab.search.tree.Tree`: K slots a node, K the game's most legal actions, where mctx keeps one per action
of the space) with mctx's selection rules written over slots (:mod:`zerolab.search.selection`): its actions, visit
counts and policy targets are mctx's, with the same keys (tests/zerolab/test_compact_tree.py compares the two on
held-out positions).  PUCT may select with lc0's rule instead (``selection="lc0"``: raw Q, lc0's c(N) and first-play
urgency; tests/zerolab/test_lc0_selection.py), which only the project's loop runs.  Node embeddings are the game's
compact states (no observation planes, no legal mask: ``step`` recomputes both).
``mctx_loop=True`` runs mctx's own dense search instead, the reference for tests and ``zerolab bench``.

How to search (:class:`~zerolab.search.config.SearchConfig`) and the rules a variant replaces
(:class:`~zerolab.search.config.SearchRules`, built from ``search.rules``) are in :mod:`zerolab.search.config`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import chex
import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import mctx
import pgx
# Sequential halving's score is not exported; mctx is pinned (==0.0.71) and the equivalence tests in
# tests/zerolab/test_compact_tree.py guard this use.
from mctx._src import seq_halving

from zerolab.games import Game
from zerolab.networks.network import NetworkInputs, apply_network
from zerolab.search import selection
from zerolab.search.config import (
    STANDARD_RULES, InteriorActionSelectionFn, RootActionSelectionFn, SearchConfig, SearchRules, check_mctx_loop_rules,
    selection_functions,
)
from zerolab.search.slots import gather_slots, scatter_slots
from zerolab.search.tree import (
    RecurrentFn, RecurrentOutput, Tree, expand, instantiate_tree, root_prior_logits, root_visit_counts, simulate,
)


@flax.struct.dataclass
class SearchOutput:
    """Result of one search over a batch.

    Attributes:
      action: [B] the search's choice (Gumbel: the best considered action; MuZero: the most visited).
      policy_target: [B, A] the improved policy to train on (Gumbel: softmax of completed Q + logits; MuZero:
        visit distribution).
      visit_counts: [B, A] root visit counts.
      root_value: [B] the root's searched value, from the side to move.
      summary: ``{name: [B]}`` from the rules' ``summary_fn`` (empty without one).
      tree: the search tree (:class:`~zerolab.search.tree.Tree`; mctx's with ``mctx_loop=True``), when asked for.
    """

    action: jax.Array
    policy_target: jax.Array
    visit_counts: jax.Array
    root_value: jax.Array
    summary: dict = flax.struct.field(default_factory=dict)
    tree: Any = None


@flax.struct.dataclass
class SearchExtraData:
    """``tree.extra_data``: Gumbel MuZero's root noise [B, K] (None for PUCT) and the rules' per-node state."""

    root_gumbel: Any
    node_state: Any


@flax.struct.dataclass
class PolicyOutput:
    """A policy's result (mctx's ``PolicyOutput`` with the root's visits over the action space).

    Attributes:
      action: [B] the policy's action (Gumbel: the best considered one; MuZero: sampled from the visits).
      action_weights: [B, A] the policy target.
      visit_counts: [B, A] float root visit counts.
      root_prior_logits: [B, A] the root's priors as searched (PUCT: with the Dirichlet noise; illegal actions at the
        dtype's minimum).
      search_tree: the :class:`~zerolab.search.tree.Tree` (mctx's dense tree from :func:`mctx_policy`).
    """

    action: jax.Array
    action_weights: jax.Array
    visit_counts: jax.Array
    root_prior_logits: jax.Array
    search_tree: Any


def search(
    params: Any,
    key: jax.Array,
    root: mctx.RootFnOutput,
    legal_action_mask: jax.Array,
    recurrent_fn: RecurrentFn,
    root_action_selection_fn: RootActionSelectionFn,
    interior_action_selection_fn: InteriorActionSelectionFn,
    num_simulations: int,
    num_slots: int,
    rules: SearchRules = STANDARD_RULES,
    max_depth: int | None = None,
    root_gumbel: jax.Array | None = None,
) -> Tree:
    """The simulations over a compact tree (mctx's ``search`` with ``rules``).

    Each simulation selects down the tree with the rules' functions (the root's at depth 0), expands one slot with
    ``recurrent_fn``, backs up with ``rules.backup_fn`` and then updates the rules' node state.  Random keys are split
    as in ``mctx.search``, so the standard rules give mctx's search (the module docstring of
    :mod:`zerolab.search.selection` says how exactly).  ``root_gumbel`` [B, A] becomes the root's noise per slot.
    """
    batch_size = root.value.shape[0]
    tree = instantiate_tree(root.prior_logits, root.value, root.embedding, legal_action_mask, num_simulations,
                            num_slots)
    if root_gumbel is not None:
        root_gumbel = gather_slots(root_gumbel, tree.children_actions[:, tree.ROOT_INDEX], 0.0)
    tree = tree.replace(extra_data=SearchExtraData(root_gumbel=root_gumbel, node_state=None))
    if rules.init_node_state is not None:
        tree = tree.replace(extra_data=tree.extra_data.replace(node_state=rules.init_node_state(tree)))
    return simulate_into(params, key, tree, jnp.ones(batch_size, jnp.int32), recurrent_fn, root_action_selection_fn,
                         interior_action_selection_fn, num_simulations, rules,
                         num_simulations if max_depth is None else max_depth)


def simulate_into(
    params: Any,
    key: jax.Array,
    tree: Tree,
    first_node: jax.Array,
    recurrent_fn: RecurrentFn,
    root_action_selection_fn: RootActionSelectionFn,
    interior_action_selection_fn: InteriorActionSelectionFn,
    num_simulations: int,
    rules: SearchRules = STANDARD_RULES,
    max_depth: int | None = None,
) -> Tree:
    """``num_simulations`` more simulations in ``tree`` (the loop of :func:`search`): simulation ``i`` writes the node
    it expands at ``first_node + i`` ([B]; 1 in a new tree), so one tree can be searched again and again — a search
    that goes on (``go infinite``), a tree kept from the last move (:func:`zerolab.search.tree.subtree`) — while it
    has room: ``first_node + num_simulations`` must not exceed its nodes.  The depth limit is ``max_depth``, else the
    tree's size."""
    interior_selection = rules.interior_action_selection_fn or interior_action_selection_fn

    def select_root(key, tree, node_index, depth):
        del depth
        return root_action_selection_fn(key, tree, node_index)

    backup = jax.vmap(rules.backup_fn)
    depth_limit = tree.num_simulations if max_depth is None else max_depth
    batch_size = tree.node_visits.shape[0]
    batch_range = jnp.arange(batch_size)

    def simulation(index, loop_state):
        key, tree = loop_state
        key, simulate_key, expand_key = jax.random.split(key, 3)
        simulate_keys = jax.random.split(simulate_key, batch_size)
        parent_index, slot = jax.vmap(simulate, in_axes=(0, 0, None, None, None))(
            simulate_keys, tree, select_root, interior_selection, depth_limit)
        leaf_index = tree.children_index[batch_range, parent_index, slot]
        leaf_index = jnp.where(leaf_index == tree.UNVISITED, first_node + index, leaf_index)
        tree = expand(params, expand_key, tree, recurrent_fn, parent_index, slot, leaf_index)
        tree = backup(tree, leaf_index)
        if rules.update_node_state is not None:
            node_state = rules.update_node_state(tree, parent_index, slot, leaf_index)
            tree = tree.replace(extra_data=tree.extra_data.replace(node_state=node_state))
        return key, tree

    _, tree = jax.lax.fori_loop(0, num_simulations, simulation, (key, tree))
    return tree


def search_policy(
    config: SearchConfig,
    params: Any,
    key: jax.Array,
    root: mctx.RootFnOutput,
    recurrent_fn: RecurrentFn,
    legal_action_mask: jax.Array,
    rules: SearchRules | None = None,
    num_slots: int | None = None,
    mctx_loop: bool = False,
) -> PolicyOutput:
    """The policy named by ``config.kind`` over a compact tree of ``num_slots`` slots a node (A when None): mctx's
    ``gumbel_muzero_policy`` or ``muzero_policy`` with the same key splits, noise and outputs.

    ``root.prior_logits`` [B, A] and ``legal_action_mask`` [B, A] describe the root; ``recurrent_fn`` returns
    :class:`~zerolab.search.tree.RecurrentOutput` (the new node's legal moves with its priors).  ``mctx_loop=True``
    runs :func:`mctx_policy` instead (standard rules only).
    """
    if mctx_loop:
        check_mctx_loop_rules(config, rules)
        return mctx_policy(config, params, key, root, recurrent_fn, legal_action_mask)
    rules = rules if rules is not None else STANDARD_RULES
    num_actions = root.prior_logits.shape[-1]
    num_slots = num_actions if num_slots is None else min(num_slots, num_actions)
    root_selection, interior_selection = selection_functions(config)
    run = functools.partial(search, params, recurrent_fn=recurrent_fn, legal_action_mask=legal_action_mask,
                            root_action_selection_fn=root_selection, interior_action_selection_fn=interior_selection,
                            num_simulations=config.num_simulations, num_slots=num_slots, rules=rules,
                            max_depth=config.max_depth)
    root_index = Tree.ROOT_INDEX
    if config.kind == "gumbel":
        root = root.replace(prior_logits=masked_logits(root.prior_logits, legal_action_mask))
        key, gumbel_key = jax.random.split(key)
        gumbel = config.gumbel_scale * jax.random.gumbel(gumbel_key, root.prior_logits.shape, root.prior_logits.dtype)
        tree = run(key, root, root_gumbel=gumbel)
        visits = tree.children_visits[:, root_index]
        considered_visit = jnp.max(visits, axis=-1, keepdims=True)
        completed_qvalues = jax.vmap(selection.qtransform_completed_by_mix_value, in_axes=(0, None))(tree, root_index)
        priors, valid = tree.children_prior_logits[:, root_index], tree.children_valid[:, root_index]
        to_argmax = seq_halving.score_considered(considered_visit, tree.extra_data.root_gumbel, priors,
                                                 completed_qvalues, visits)
        slot = selection.masked_argmax(to_argmax, valid)
        action = jnp.take_along_axis(tree.children_actions[:, root_index], slot[:, None], axis=-1)[:, 0]
        weights = jax.nn.softmax(masked_logits(priors + completed_qvalues, valid))
        action_weights = scatter_slots(weights, tree.children_actions[:, root_index], num_actions)
        return PolicyOutput(action=action, action_weights=action_weights, visit_counts=root_visit_counts(tree),
                            root_prior_logits=root_prior_logits(tree), search_tree=tree)
    key, dirichlet_key, search_key = jax.random.split(key, 3)
    noise = jax.random.dirichlet(dirichlet_key, jnp.full([num_actions], config.dirichlet_alpha),
                                 shape=(root.prior_logits.shape[0],))
    probs = jax.nn.softmax(root.prior_logits)
    noisy_probs = (1 - config.dirichlet_fraction) * probs + config.dirichlet_fraction * noise
    noisy_logits = jnp.log(jnp.maximum(noisy_probs, jnp.finfo(noisy_probs.dtype).tiny))
    root = root.replace(prior_logits=masked_logits(noisy_logits, legal_action_mask))
    tree = run(search_key, root)
    visit_counts = root_visit_counts(tree)
    total = jnp.sum(visit_counts, axis=-1, keepdims=True)
    action_weights = jnp.where(total > 0, visit_counts / jnp.maximum(total, 1), 1 / num_actions)
    logits = jnp.log(jnp.maximum(action_weights, jnp.finfo(action_weights.dtype).tiny))
    action = jax.random.categorical(key, logits - jnp.max(logits, axis=-1, keepdims=True))
    return PolicyOutput(action=action, action_weights=action_weights, visit_counts=visit_counts,
                        root_prior_logits=root_prior_logits(tree), search_tree=tree)


def mctx_policy(config: SearchConfig, params: Any, key: jax.Array, root: mctx.RootFnOutput,
                recurrent_fn: RecurrentFn, legal_action_mask: jax.Array) -> PolicyOutput:
    """mctx's own dense search (its policy, loop and ``[B, N, A]`` tree) with the standard rules: the reference that
    the compact search is tested and benchmarked against (mctx's PUCT only: ``selection="lc0"`` is refused)."""
    check_mctx_loop_rules(config, None)

    def mctx_recurrent_fn(params, key, action, embedding):
        step, embedding = recurrent_fn(params, key, action, embedding)
        return mctx.RecurrentFnOutput(reward=step.reward, discount=step.discount, prior_logits=step.prior_logits,
                                      value=step.value), embedding

    common = dict(params=params, rng_key=key, root=root, recurrent_fn=mctx_recurrent_fn,
                  num_simulations=config.num_simulations, invalid_actions=~legal_action_mask,
                  max_depth=config.max_depth)
    if config.kind == "gumbel":
        output = mctx.gumbel_muzero_policy(**common, max_num_considered_actions=config.max_num_considered_actions,
                                           gumbel_scale=config.gumbel_scale)
    else:
        output = mctx.muzero_policy(**common, dirichlet_fraction=config.dirichlet_fraction,
                                    dirichlet_alpha=config.dirichlet_alpha, pb_c_init=config.pb_c_init,
                                    pb_c_base=config.pb_c_base)
    tree = output.search_tree
    return PolicyOutput(action=output.action, action_weights=output.action_weights,
                        visit_counts=tree.summary().visit_counts, root_prior_logits=tree.children_prior_logits[:, 0],
                        search_tree=tree)


def masked_logits(logits: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """[B, A] logits with illegal actions at the dtype's minimum (finite, so all-illegal rows stay NaN-free)."""
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    return jnp.where(legal_action_mask, logits, jnp.finfo(logits.dtype).min)


def evaluate(network: nn.Module, variables: Any, states: pgx.State) -> tuple[jax.Array, jax.Array]:
    """``(masked policy logits [B, A], value [B])`` of a batch of pgx states, in evaluation mode."""
    output, _ = apply_network(network, variables, NetworkInputs.from_states(states), train=False)
    return masked_logits(output.policy_logits, states.legal_action_mask), output.value


def make_recurrent_fn(game: Game, network: nn.Module) -> RecurrentFn:
    """The search's recurrent function for a perfect simulator: the embedding is the game's state, kept in the tree
    in its compact form (:meth:`zerolab.games.Game.pack_state`: no observation planes and no legal mask, which ``step`` recomputes).

    Rewards are from the view of the player who moved; the discount is −1 (the next node belongs to the opponent)
    and 0 once the game has ended, where the value is 0 too.
    """

    def recurrent_fn(variables, key, action, packed_states):
        del key
        states = game.unpack_state(packed_states)
        mover = states.current_player
        states = jax.vmap(game.step)(states, action)
        logits, value = evaluate(network, variables, states)
        reward = states.rewards[jnp.arange(states.rewards.shape[0]), mover]
        value = jnp.where(states.terminated, 0.0, value)
        discount = jnp.where(states.terminated, 0.0, -1.0)
        output = RecurrentOutput(reward=reward, discount=discount, prior_logits=logits, value=value,
                                 legal_action_mask=states.legal_action_mask)
        return output, game.pack_state(states)

    return recurrent_fn


def run_search(
    config: SearchConfig,
    game: Game,
    network: nn.Module,
    variables: Any,
    key: jax.Array,
    states: pgx.State,
    rules: SearchRules | None = None,
    keep_tree: bool = False,
    mctx_loop: bool = False,
    num_slots: int | None = None,
) -> SearchOutput:
    """Searches from each of the batched ``states`` (jittable; ``config``, ``game``, ``network`` are static).

    The tree keeps ``num_slots`` slots a node, the game's most legal actions by default
    (:attr:`zerolab.games.Game.max_legal_actions`).  ``rules`` default to those named by ``config``
    (:meth:`SearchConfig.make_rules`); pass them to override.  ``mctx_loop=True`` runs mctx's own dense search
    instead — the same result with the standard rules (up to float summation order), slower and ``[B, N, A]`` in
    memory: the reference for tests and benchmarks (rules that change the simulations cannot run there).
    """
    if rules is None:
        rules = config.make_rules()
    if mctx_loop:
        check_mctx_loop_rules(config, rules)  # before anything is evaluated
    logits, value = evaluate(network, variables, states)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=game.pack_state(states))
    output = search_policy(config, variables, key, root, make_recurrent_fn(game, network), states.legal_action_mask,
                    rules=rules, num_slots=game.max_legal_actions if num_slots is None else num_slots,
                    mctx_loop=mctx_loop)
    summary = {}
    if rules is not None and rules.summary_fn is not None and not mctx_loop:
        summary = dict(rules.summary_fn(output.search_tree))
        for name, value_array in summary.items():
            chex.assert_shape(value_array, (states.legal_action_mask.shape[0],))
    if config.kind == "gumbel":
        action = output.action
    else:
        action = jnp.argmax(jnp.where(states.legal_action_mask, output.visit_counts, -1), axis=-1).astype(jnp.int32)
    return SearchOutput(
        action=action,
        policy_target=output.action_weights,
        visit_counts=output.visit_counts,
        root_value=output.search_tree.node_values[:, Tree.ROOT_INDEX],
        summary=summary,
        tree=output.search_tree if keep_tree else None,
    )


# --- a tree that grows: searches that go on, trees kept between moves ----------------------------------------------


def growing_config(config: SearchConfig) -> SearchConfig:
    """The PUCT search a growing tree runs: ``config`` with ``kind="muzero"`` (its ``selection``, mctx's or lc0's,
    and its constants).  Gumbel MuZero's sequential halving is planned for a fixed budget from a fresh root, so a
    search that goes on, or starts from kept visits, selects with PUCT, as lc0 does."""
    return config if config.kind == "muzero" else dataclasses.replace(config, kind="muzero")


def start_tree(config: SearchConfig, game: Game, network: nn.Module, variables: Any, states: pgx.State,
               num_nodes: int, rules: SearchRules | None = None, num_slots: int | None = None) -> Tree:
    """A tree of ``num_nodes`` nodes with only the root of each of ``states`` evaluated (no root noise), for
    :func:`grow_tree`; jittable (``num_nodes`` static)."""
    rules = (config.make_rules() if rules is None else rules) or STANDARD_RULES
    logits, value = evaluate(network, variables, states)
    tree = instantiate_tree(masked_logits(logits, states.legal_action_mask), value, game.pack_state(states),
                            states.legal_action_mask, num_nodes - 1,
                            game.max_legal_actions if num_slots is None else num_slots)
    tree = tree.replace(extra_data=SearchExtraData(root_gumbel=None, node_state=None))
    if rules.init_node_state is not None:
        tree = tree.replace(extra_data=tree.extra_data.replace(node_state=rules.init_node_state(tree)))
    return tree


def grow_tree(config: SearchConfig, game: Game, network: nn.Module, variables: Any, key: jax.Array, tree: Tree,
              first_node: jax.Array, num_simulations: int, rules: SearchRules | None = None) -> Tree:
    """``num_simulations`` more PUCT simulations (:func:`growing_config`) in ``tree``, new nodes from ``first_node``
    [B] on (:func:`simulate_into`; the caller keeps ``first_node + num_simulations`` within the tree's nodes);
    jittable (``num_simulations`` static)."""
    config = growing_config(config)
    rules = (config.make_rules() if rules is None else rules) or STANDARD_RULES
    root_selection, interior_selection = selection_functions(config)
    return simulate_into(variables, key, tree, first_node, make_recurrent_fn(game, network), root_selection,
                         interior_selection, num_simulations, rules, config.max_depth)
