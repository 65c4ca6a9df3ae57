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

Variants (search-contempt, SAI) change the rules of the search, not its loop.  :class:`SearchRules` is the extension
point, in mctx's own style, over the compact tree's slots:

* ``root_action_selection_fn`` / ``interior_action_selection_fn`` — ``(key, tree, node_index[, depth]) -> slot``
  over one unbatched tree (``tree.children_actions[node_index, slot]`` is the action); they may read per-node state
  from ``tree.extra_data.node_state``.
* ``init_node_state(tree) -> pytree`` with leaves ``[B, N, ...]`` and
  ``update_node_state(tree, parent_index [B], slot [B], leaf_index [B]) -> pytree``, called after every simulation.
* ``backup_fn(tree, leaf_index) -> tree`` over one unbatched tree: how a new leaf's value reaches its ancestors
  (the default is mctx's running mean of ``v <- r + discount * v``; SAI gives each ancestor its own value).
* ``summary_fn(tree) -> {name: [B]}`` over the batched tree after the search: per-search statistics that appear in
  :attr:`SearchOutput.summary` and, averaged, in self-play's metrics.

Rules are chosen from the config like networks are: ``search.rules = "package.module:factory"`` with
``search.rule_options`` (a dict of keyword arguments), and ``factory(search_config, **rule_options) -> SearchRules``.
Every consumer of a :class:`SearchConfig` (self-play, checkpoint agents, the UCI and GTP engines, ``zerolab bench``)
gets the rules through :meth:`SearchConfig.make_rules`.  :func:`selection_functions` gives the standard root and
interior selection functions of a config, for rules that wrap them.
"""

from __future__ import annotations

import dataclasses
import functools
import difflib
from collections.abc import Callable, Iterable, Mapping
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

from zerolab.config import check_at_least, check_choice, field_value, load_factory, parse_value, section_dataclass
from zerolab.games import Game
from zerolab.networks.network import NetworkInputs, apply_network
from zerolab.search import selection
from zerolab.search.tree import (
    RecurrentFn, RecurrentOutput, Tree, expand, gather_slots, instantiate_tree, root_prior_logits, root_visit_counts, scatter_slots,
    simulate, standard_backup,
)

SEARCH_KINDS = ("gumbel", "muzero")
SELECTIONS = ("mctx", "lc0")
"""PUCT's rule (``kind="muzero"``): mctx's ``muzero_action_selection`` or lc0's
(:func:`zerolab.search.selection.lc0_action_selection`)."""

RootActionSelectionFn = Callable[[jax.Array, Tree, chex.Numeric], chex.Numeric]
"""``(key, tree, node_index) -> slot``: the root's rule, over one unbatched :class:`~zerolab.search.tree.Tree`."""
InteriorActionSelectionFn = Callable[[jax.Array, Tree, chex.Numeric, chex.Numeric], chex.Numeric]
"""``(key, tree, node_index, depth) -> slot``: the interior rule, over one unbatched tree."""
InitNodeStateFn = Callable[[Tree], Any]
"""``(batched tree) -> pytree`` of per-node state with leaves ``[B, N, ...]``, made before the first simulation."""
UpdateNodeStateFn = Callable[[Tree, jax.Array, jax.Array, jax.Array], Any]
"""``(batched tree, parent_index [B], slot [B], leaf_index [B]) -> node state``, after every simulation's backup."""
BackupFn = Callable[[Tree, chex.Numeric], Tree]
"""``(unbatched tree, leaf_index) -> tree``: carries a new leaf's value to its ancestors."""
SummaryFn = Callable[[Tree], Mapping[str, jax.Array]]
"""``(batched tree) -> {name: [B]}``: statistics of each finished search."""


RULE_OPTION_PREFIX = "rule_options."
"""``rule_options.NAME=VALUE`` sets one option of the search rules in :meth:`SearchConfig.with_overrides`."""
FORMER_SEARCH_KEYS = {"simulations": "num_simulations", "considered": "max_num_considered_actions"}
"""Keys that agent specs once used, named with their field in the error that rejects them (they are not accepted)."""


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """How to search.  ``kind`` is ``gumbel`` (Gumbel MuZero) or ``muzero`` (PUCT with root Dirichlet noise).

    ``selection`` is PUCT's rule: ``mctx`` (mctx's ``muzero_action_selection``: Q min-max rescaled over the node and
    its visited children, unvisited children at the minimum, ``pb_c_init``/``pb_c_base``) or ``lc0`` (lc0's classic
    PUCT: raw Q in [−1, 1], c(N) = ``lc0_cpuct`` + ``lc0_cpuct_factor`` · ln((N + ``lc0_cpuct_base``) /
    ``lc0_cpuct_base``), U over √(children's visits), unvisited children at the node's value minus
    ``lc0_fpu_reduction`` · √(visited policy); :func:`zerolab.search.selection.lc0_puct_scores`), the same at the
    root and below.  ``lc0`` needs ``kind="muzero"`` and the project's loop (not ``mctx_loop=True``).

    ``rules`` names a rules factory (``"package.module:factory"``, empty for the standard search) and
    ``rule_options`` its keyword arguments, as a sorted tuple of ``(name, value)`` pairs so that the config stays
    hashable (it is a static argument of jitted searches).
    """

    kind: str = "gumbel"
    num_simulations: int = 32
    max_depth: int | None = None
    # Gumbel MuZero
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    # MuZero / AlphaZero PUCT
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    selection: str = "mctx"
    # lc0's PUCT (selection="lc0"), lc0's defaults (src/search/classic/params.cc): CPuct, CPuctBase, CPuctFactor,
    # FpuValue with FpuStrategy=reduction
    lc0_cpuct: float = 1.745
    lc0_cpuct_base: float = 38739.0
    lc0_cpuct_factor: float = 3.894
    lc0_fpu_reduction: float = 0.330
    # Search variants
    rules: str = ""
    rule_options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        check_choice("search.kind", self.kind, SEARCH_KINDS)
        check_choice("search.selection", self.selection, SELECTIONS)
        if self.selection != "mctx" and self.kind != "muzero":
            raise ValueError(f"search selection={self.selection!r} is a PUCT rule: it needs kind='muzero' "
                             f"(kind={self.kind!r} selects with its own rule; set selection='mctx')")
        check_at_least("search.num_simulations", self.num_simulations, 1)
        check_at_least("search.max_num_considered_actions", self.max_num_considered_actions, 1)
        if self.max_depth is not None:
            check_at_least("search.max_depth", self.max_depth, 1)
        if isinstance(self.rule_options, Mapping) or hasattr(self.rule_options, "to_dict"):
            options = self.rule_options.to_dict() if hasattr(self.rule_options, "to_dict") else self.rule_options
            object.__setattr__(self, "rule_options", tuple(sorted(dict(options).items())))
        if self.rule_options and not self.rules:
            raise ValueError(f"search.rule_options {dict(self.rule_options)} given without search.rules")

    @classmethod
    def from_config(cls, config: Any) -> SearchConfig:
        """From a ConfigDict (or mapping) with any subset of this dataclass's fields
        (:func:`zerolab.config.section_dataclass`)."""
        return section_dataclass(cls, config, "search")

    def with_overrides(self, overrides: Mapping[str, str], *, what: str = "search key",
                       other_keys: Iterable[str] = ()) -> SearchConfig:
        """This config with ``{KEY: TEXT}`` overrides: the one reading of search settings given as text (agent specs,
        ``python -m zerolab uci|bench``, launchers).

        ``KEY`` is a field name (``num_simulations``, ``max_num_considered_actions``, ``kind``, ``gumbel_scale``,
        ``rules``, ... every field) or ``rule_options.NAME`` for one option of the rules.  TEXT becomes the field's
        type (:func:`zerolab.config.field_value`: ``int``, ``float``, ``str``; ``true``/``false`` for ``bool``); other
        fields and rule options take a Python literal, else the string (:func:`zerolab.config.parse_value`).  Naming other ``rules`` than this
        config's drops this config's rule options (they were its rules'), unless ``rule_options`` is given too.
        Raises ValueError naming an unknown key, the valid keys and, for a former or misspelt key, the key meant;
        ``what`` is what the message calls a key (``"agent option"``) and ``other_keys`` are the caller's own keys,
        listed among the valid ones.
        """
        fields = {field.name: field for field in dataclasses.fields(self)}
        changes: dict[str, Any] = {}
        rule_options: dict[str, Any] = {}
        for key, text in overrides.items():
            if key.startswith(RULE_OPTION_PREFIX) and len(key) > len(RULE_OPTION_PREFIX):
                rule_options[key[len(RULE_OPTION_PREFIX):]] = parse_value(text)
                continue
            if key not in fields:
                raise ValueError(self._unknown_key_message(key, overrides, what, other_keys))
            try:
                changes[key] = field_value(fields[key].type, text)
            except ValueError as error:
                raise ValueError(f"{what} {key}={text}: {error}") from None
        rules = changes.get("rules", self.rules)
        if "rule_options" not in changes:
            kept = dict(self.rule_options) if rules == self.rules else {}
            changes["rule_options"] = {**kept, **rule_options}
        elif rule_options:
            changes["rule_options"] = {**dict(changes["rule_options"] or {}), **rule_options}
        return dataclasses.replace(self, **changes)

    def _unknown_key_message(self, key: str, overrides: Mapping[str, str], what: str, other_keys: Iterable[str]) -> str:
        valid = sorted({*(field.name for field in dataclasses.fields(self)), *other_keys})
        if key in FORMER_SEARCH_KEYS:
            meant = FORMER_SEARCH_KEYS[key]
        elif key.startswith("rule."):
            meant = RULE_OPTION_PREFIX + key[len("rule."):]
        elif close := difflib.get_close_matches(key, valid, n=1, cutoff=0.8):
            meant = close[0]
        elif overrides.get("rules", self.rules):
            meant = RULE_OPTION_PREFIX + key
        else:
            meant = None
        hint = f"; did you mean {meant!r}?" if meant else ""
        return (f"unknown {what} {key!r}{hint} (valid: {', '.join(valid)} and {RULE_OPTION_PREFIX}NAME, "
                f"an option of the rules)")

    def make_rules(self) -> SearchRules | None:
        """The rules named by ``rules`` built with ``rule_options``; None for the standard search.  Built once for
        each config (:func:`built_rules`), so a run's components, its agents and its searches share one rules object
        (and the programs compiled for it)."""
        if not self.rules:
            return None
        try:
            hash(self)
        except TypeError:  # rule options of unhashable values: built each time
            return build_rules(self)
        return built_rules(self)


@functools.lru_cache(maxsize=64)
def built_rules(config: SearchConfig) -> SearchRules:
    """:func:`build_rules`, once for each config."""
    return build_rules(config)


def build_rules(config: SearchConfig) -> SearchRules:
    """The rules ``config.rules`` names, built with ``config.rule_options``; a ValueError names a bad option."""
    factory = load_factory(config.rules, "search.rules")
    try:
        rules = factory(config, **dict(config.rule_options))
    except TypeError as error:  # an option the factory does not take, or a missing one
        raise ValueError(f"search.rules={config.rules!r} with options {dict(config.rule_options)}: {error}") from None
    if not isinstance(rules, SearchRules):
        raise TypeError(f"search.rules={config.rules!r} returned {type(rules).__name__}, expected SearchRules")
    return rules


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


@dataclasses.dataclass(frozen=True)
class SearchRules:
    """The hooks a search variant may replace; ``None`` keeps the standard behaviour of the chosen policy.

    Every hook works on the slots of :class:`~zerolab.search.tree.Tree` (``tree.children_actions`` names each slot's
    action): selection functions return a slot, node state is ``[B, N, ...]``.
    """

    root_action_selection_fn: RootActionSelectionFn | None = None
    interior_action_selection_fn: InteriorActionSelectionFn | None = None
    init_node_state: InitNodeStateFn | None = None
    update_node_state: UpdateNodeStateFn | None = None
    backup_fn: BackupFn = standard_backup
    summary_fn: SummaryFn | None = None
    project_loop: bool = False

    @property
    def changes_simulations(self) -> bool:
        """Whether these rules change what the simulations do (any hook but ``summary_fn`` replaced), or
        ``project_loop`` is set.  Every search runs in the project's loop over the compact tree; only the standard
        rules can also run in mctx's own dense search (``mctx_loop=True``), the reference of tests and benchmarks."""
        return self.project_loop or (
            self.root_action_selection_fn, self.interior_action_selection_fn, self.init_node_state,
            self.update_node_state, self.backup_fn) != (None, None, None, None, standard_backup)


STANDARD_RULES = SearchRules()


def project_loop_rules(search_config: SearchConfig) -> SearchRules:
    """The standard rules, named (``search.rules=zerolab.search.mcts:project_loop_rules``): every search runs in the
    project's loop over the compact tree, so this is the default search under another name (configs that set it keep
    working)."""
    del search_config
    return SearchRules(project_loop=True)


def selection_functions(config: SearchConfig) -> tuple[RootActionSelectionFn, InteriorActionSelectionFn]:
    """The standard ``(root, interior)`` selection functions of ``config.kind`` over a tree's slots.

    Gumbel: sequential halving at the root, Gumbel's deterministic interior rule; MuZero: PUCT at both (the root's
    Dirichlet noise is in the root's priors), mctx's or lc0's as ``config.selection`` says.  Rules wrap these.
    """
    if config.kind == "gumbel":
        root_selection = functools.partial(
            selection.gumbel_muzero_root_action_selection,
            num_simulations=config.num_simulations,
            max_num_considered_actions=config.max_num_considered_actions,
        )
        return root_selection, selection.gumbel_muzero_interior_action_selection
    if config.selection == "lc0":
        interior_selection = functools.partial(
            selection.lc0_action_selection, cpuct=config.lc0_cpuct, cpuct_base=config.lc0_cpuct_base,
            cpuct_factor=config.lc0_cpuct_factor, fpu_reduction=config.lc0_fpu_reduction)
    else:
        interior_selection = functools.partial(
            selection.muzero_action_selection, pb_c_base=config.pb_c_base, pb_c_init=config.pb_c_init)
    return functools.partial(interior_selection, depth=0), interior_selection


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
    root_selection = rules.root_action_selection_fn or root_action_selection_fn
    interior_selection = rules.interior_action_selection_fn or interior_action_selection_fn

    def select_root(key, tree, node_index, depth):
        del depth
        return root_selection(key, tree, node_index)

    backup = jax.vmap(rules.backup_fn)
    depth_limit = num_simulations if max_depth is None else max_depth
    batch_size = root.value.shape[0]
    tree = instantiate_tree(root.prior_logits, root.value, root.embedding, legal_action_mask, num_simulations,
                            num_slots)
    if root_gumbel is not None:
        root_gumbel = gather_slots(root_gumbel, tree.children_actions[:, tree.ROOT_INDEX], 0.0)
    tree = tree.replace(extra_data=SearchExtraData(root_gumbel=root_gumbel, node_state=None))
    if rules.init_node_state is not None:
        tree = tree.replace(extra_data=tree.extra_data.replace(node_state=rules.init_node_state(tree)))
    batch_range = jnp.arange(batch_size)

    def simulation(index, loop_state):
        key, tree = loop_state
        key, simulate_key, expand_key = jax.random.split(key, 3)
        simulate_keys = jax.random.split(simulate_key, batch_size)
        parent_index, slot = jax.vmap(simulate, in_axes=(0, 0, None, None, None))(
            simulate_keys, tree, select_root, interior_selection, depth_limit)
        leaf_index = tree.children_index[batch_range, parent_index, slot]
        leaf_index = jnp.where(leaf_index == tree.UNVISITED, index + 1, leaf_index)
        tree = expand(params, expand_key, tree, recurrent_fn, parent_index, slot, leaf_index)
        tree = backup(tree, leaf_index)
        if rules.update_node_state is not None:
            node_state = rules.update_node_state(tree, parent_index, slot, leaf_index)
            tree = tree.replace(extra_data=tree.extra_data.replace(node_state=node_state))
        return key, tree

    _, tree = jax.lax.fori_loop(0, num_simulations, simulation, (key, tree))
    return tree


def check_mctx_loop_rules(config: SearchConfig, rules: SearchRules | None) -> None:
    """Raises ValueError where ``rules`` replace what the simulations do, or ``config`` selects with lc0's PUCT:
    mctx's own search cannot run them."""
    if config.selection != "mctx":
        raise ValueError(f"mctx_loop=True runs mctx's own simulations with mctx's PUCT; search.selection="
                         f"{config.selection!r} runs only in the project's loop: search with mctx_loop=False")
    if rules is not None and rules.changes_simulations and not rules.project_loop:
        raise ValueError("mctx_loop=True runs mctx's own simulations; these search rules replace them "
                         f"({config.rules!r}): search with mctx_loop=False")


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
