"""Search: the project's one doorway to tree search.

``run_search(config, game, network, variables, key, states)`` evaluates a batch of pgx states with the network,
searches with mctx's ``gumbel_muzero_policy`` or ``muzero_policy`` (Dirichlet noise at the root) and returns the
chosen action, the policy target and the root value.  The simulations run in the project's loop
(:func:`make_search_loop`) with mctx's own selection and expansion: the result is mctx's bit for bit, but the backup
(:func:`standard_backup`) writes the tree once per simulation.  mctx's ``backward`` carries the whole batched tree
through a vmapped ``while_loop``, so every level of every backup selects and copies all [B, N, A] arrays: on an
H100 that was 83 % of the device time of 8×8 ResNet self-play (50 % ``select`` fusions, 33 % ``memcpy``;
``scripts/gpu/profile.py``), and on CPU it makes deep (PUCT) searches slow.

Variants (search-contempt, SAI) change the rules of the search, not its loop.  :class:`SearchRules` is the extension
point, in mctx's own style:

* ``root_action_selection_fn`` / ``interior_action_selection_fn`` — mctx's signatures
  ``(key, tree, node_index[, depth]) -> action`` over one unbatched tree; they may read per-node state from
  ``tree.extra_data.node_state``.
* ``init_node_state(tree) -> pytree`` with leaves ``[B, N, ...]`` and
  ``update_node_state(tree, parent_index [B], action [B], leaf_index [B]) -> pytree``, called after every simulation.
* ``backup_fn(tree, leaf_index) -> tree`` over one unbatched tree: how a new leaf's value reaches its ancestors
  (the default is mctx's running mean of ``v <- r + discount * v``; SAI gives each ancestor its own value).
* ``summary_fn(tree) -> {name: [B]}`` over the batched tree after the search: per-search statistics that appear in
  :attr:`SearchOutput.summary` and, averaged, in self-play's metrics.

Rules are chosen from the config like networks are: ``search.rules = "package.module:factory"`` with
``search.rule_options`` (a dict of keyword arguments), and ``factory(search_config, **rule_options) -> SearchRules``.
Every consumer of a :class:`SearchConfig` (self-play, checkpoint agents, the UCI and GTP engines, ``zerolab bench``)
gets the rules through :meth:`SearchConfig.make_rules`.  :func:`selection_functions` gives the standard root and
interior selection functions of a config, for rules that wrap them.

A policy with rules runs the project's own small simulation loop (:func:`make_search_loop`), passed to the mctx
policy as its ``loop_fn``: mctx still draws the root noise, builds the tree and turns visits into the action and the
policy target, so with :data:`STANDARD_RULES` the result equals mctx's own search exactly (a test checks this).
"""

from __future__ import annotations

import dataclasses
import functools
import difflib
import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import chex
import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import mctx
import pgx
# mctx's simulate/expand and its root/interior switch are not exported; mctx is pinned (==0.0.71) and the
# equivalence test in tests/zerolab/test_search.py guards this use.
from mctx._src import action_selection as mctx_action_selection
from mctx._src import search as mctx_search

from zerolab.config import parse_value
from zerolab.games import Game
from zerolab.networks.network import NetworkInputs, apply_network

SEARCH_KINDS = ("gumbel", "muzero")

RootActionSelectionFn = mctx.RootActionSelectionFn
"""``(key, tree, node_index) -> action``: mctx's root rule, over one unbatched tree."""
InteriorActionSelectionFn = mctx.InteriorActionSelectionFn
"""``(key, tree, node_index, depth) -> action``: mctx's interior rule, over one unbatched tree."""
InitNodeStateFn = Callable[[mctx.Tree], Any]
"""``(batched tree) -> pytree`` of per-node state with leaves ``[B, N, ...]``, made before the first simulation."""
UpdateNodeStateFn = Callable[[mctx.Tree, jax.Array, jax.Array, jax.Array], Any]
"""``(batched tree, parent_index [B], action [B], leaf_index [B]) -> node state``, after every simulation's backup."""
BackupFn = Callable[[mctx.Tree, chex.Numeric], mctx.Tree]
"""``(unbatched tree, leaf_index) -> tree``: carries a new leaf's value to its ancestors."""
SummaryFn = Callable[[mctx.Tree], Mapping[str, jax.Array]]
"""``(batched tree) -> {name: [B]}``: statistics of each finished search."""


RULE_OPTION_PREFIX = "rule_options."
"""``rule_options.NAME=VALUE`` sets one option of the search rules in :meth:`SearchConfig.with_overrides`."""
FORMER_SEARCH_KEYS = {"simulations": "num_simulations", "considered": "max_num_considered_actions"}
"""Keys that agent specs once used, named with their field in the error that rejects them (they are not accepted)."""
FIELD_TYPES = {"int": int, "float": float, "str": str}


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """How to search.  ``kind`` is ``gumbel`` (Gumbel MuZero) or ``muzero`` (PUCT with root Dirichlet noise).

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
    # Search variants
    rules: str = ""
    rule_options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        if self.kind not in SEARCH_KINDS:
            raise ValueError(f"search kind must be one of {SEARCH_KINDS}, got {self.kind!r}")
        if self.num_simulations < 1:
            raise ValueError(f"num_simulations must be at least 1, got {self.num_simulations}")
        if isinstance(self.rule_options, Mapping) or hasattr(self.rule_options, "to_dict"):
            options = self.rule_options.to_dict() if hasattr(self.rule_options, "to_dict") else self.rule_options
            object.__setattr__(self, "rule_options", tuple(sorted(dict(options).items())))
        if self.rule_options and not self.rules:
            raise ValueError(f"search.rule_options {dict(self.rule_options)} given without search.rules")

    @classmethod
    def from_config(cls, config: Any) -> SearchConfig:
        """From a ConfigDict (or mapping) with any subset of this dataclass's fields."""
        values = dict(config.items()) if hasattr(config, "items") else dict(config)
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown search keys {unknown}; valid keys: {sorted(known)}")
        return cls(**values)

    def with_overrides(self, overrides: Mapping[str, str], *, what: str = "search key",
                       other_keys: Iterable[str] = ()) -> SearchConfig:
        """This config with ``{KEY: TEXT}`` overrides: the one reading of search settings given as text (agent specs,
        ``python -m zerolab uci|bench``, launchers).

        ``KEY`` is a field name (``num_simulations``, ``max_num_considered_actions``, ``kind``, ``gumbel_scale``,
        ``rules``, ... every field) or ``rule_options.NAME`` for one option of the rules.  TEXT becomes the field's
        type (``int``, ``float``, ``str``; ``true``/``false`` for ``bool``); other fields and rule options take a
        Python literal, else the string (:func:`zerolab.config.parse_value`).  Naming other ``rules`` than this
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
                changes[key] = self._field_value(fields[key], text)
            except ValueError as error:
                raise ValueError(f"{what} {key}={text}: {error}") from None
        rules = changes.get("rules", self.rules)
        if "rule_options" not in changes:
            kept = dict(self.rule_options) if rules == self.rules else {}
            changes["rule_options"] = {**kept, **rule_options}
        elif rule_options:
            changes["rule_options"] = {**dict(changes["rule_options"] or {}), **rule_options}
        return dataclasses.replace(self, **changes)

    @staticmethod
    def _field_value(field: dataclasses.Field, text: str) -> Any:
        if field.type == "bool":
            if text.strip().lower() not in ("true", "false"):
                raise ValueError("expected true or false")
            return text.strip().lower() == "true"
        if field.type in FIELD_TYPES:
            return FIELD_TYPES[field.type](text)
        return parse_value(text)

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
        """The rules named by ``rules`` built with ``rule_options``; None for the standard search."""
        if not self.rules:
            return None
        factory = load_factory(self.rules, "search.rules")
        try:
            rules = factory(self, **dict(self.rule_options))
        except TypeError as error:  # an option the factory does not take, or a missing one
            raise ValueError(f"search.rules={self.rules!r} with options {dict(self.rule_options)}: {error}") from None
        if not isinstance(rules, SearchRules):
            raise TypeError(f"search.rules={self.rules!r} returned {type(rules).__name__}, expected SearchRules")
        return rules


def load_factory(path: str, key: str) -> Callable:
    """The callable named by ``"package.module:name"`` (config key ``key``), or a ValueError saying what is wrong."""
    module_name, separator, attribute = path.partition(":")
    if not separator or not module_name or not attribute:
        raise ValueError(f"{key}={path!r} must name a callable as 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise ValueError(f"{key}={path!r}: cannot import {module_name} ({error})") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"{key}={path!r}: module {module_name} has no callable {attribute}")
    return factory


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
      tree: the mctx search tree (dropped by callers that do not need it).
    """

    action: jax.Array
    policy_target: jax.Array
    visit_counts: jax.Array
    root_value: jax.Array
    summary: dict = flax.struct.field(default_factory=dict)
    tree: Any = None


@flax.struct.dataclass
class SearchExtraData:
    """``tree.extra_data`` when rules keep per-node state; ``root_gumbel`` keeps Gumbel MuZero's root noise."""

    root_gumbel: Any
    node_state: Any


def standard_backup(tree: mctx.Tree, leaf_index: chex.Numeric) -> mctx.Tree:
    """mctx's backup on one unbatched tree: each ancestor's value is the running mean of ``r + discount * v``.

    The same arithmetic as mctx's ``backward``, in the same order, but the tree is written once: the loop climbs the
    path computing each ancestor's new value into small per-level buffers, and one scatter per array writes them (a
    node appears at most once on a path).  mctx writes the whole tree at every level of its loop, which on CPU copies
    the [N, A] arrays each time: this is what made PUCT searches (deep paths) slow.
    """
    leaf_index = jnp.asarray(leaf_index, dtype=jnp.int32)
    num_nodes = tree.parents.shape[0]  # a path has fewer levels; index num_nodes marks unused ones (dropped)

    def has_parent(loop_state):
        return loop_state[0] != mctx.Tree.ROOT_INDEX

    def climb(loop_state):
        index, node_value, leaf_value, level, path = loop_state
        parent = tree.parents[index]
        count = tree.node_visits[parent]
        action = tree.action_from_parent[index]
        leaf_value = tree.children_rewards[parent, action] + tree.children_discounts[parent, action] * leaf_value
        parent_value = (tree.node_values[parent] * count + leaf_value) / (count + 1.0)
        parents, actions, parent_values, child_values = path
        path = (parents.at[level].set(parent), actions.at[level].set(action),
                parent_values.at[level].set(parent_value), child_values.at[level].set(node_value))
        return parent, parent_value, leaf_value, level + 1, path

    value = tree.node_values[leaf_index]
    empty_path = (jnp.full(num_nodes, num_nodes, jnp.int32), jnp.zeros(num_nodes, jnp.int32),
                  jnp.zeros(num_nodes, tree.node_values.dtype), jnp.zeros(num_nodes, tree.node_values.dtype))
    *_, (parents, actions, parent_values, child_values) = jax.lax.while_loop(
        has_parent, climb, (leaf_index, value, value, 0, empty_path))
    return tree.replace(
        node_values=tree.node_values.at[parents].set(parent_values, mode="drop"),
        node_visits=tree.node_visits.at[parents].add(1, mode="drop"),
        children_values=tree.children_values.at[parents, actions].set(child_values, mode="drop"),
        children_visits=tree.children_visits.at[parents, actions].add(1, mode="drop"),
    )


@dataclasses.dataclass(frozen=True)
class SearchRules:
    """The hooks a search variant may replace; ``None`` keeps the standard behaviour of the chosen policy."""

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
        ``project_loop`` is set.  :func:`run_search` runs every search in the project's loop either way (the standard
        rules there give mctx's result bit for bit, faster: see :func:`standard_backup`); :func:`policy` with
        ``rules=None`` runs mctx's own loop, the reference the equivalence tests compare against."""
        return self.project_loop or (
            self.root_action_selection_fn, self.interior_action_selection_fn, self.init_node_state,
            self.update_node_state, self.backup_fn) != (None, None, None, None, standard_backup)


STANDARD_RULES = SearchRules()


def project_loop_rules(search_config: SearchConfig) -> SearchRules:
    """The standard rules in the project's simulation loop (``search.rules=zerolab.search.mcts:project_loop_rules``):
    mctx's search bit for bit, with the backup that writes the tree once per simulation (on a 2-core CPU a third
    to a half of mctx's own time for 64 simulations: ``python -m contempt_search.bench``).  :func:`run_search` now
    uses that loop for every search, so this names the default explicitly (configs that set it keep working)."""
    del search_config
    return SearchRules(project_loop=True)


def selection_functions(config: SearchConfig) -> tuple[RootActionSelectionFn, InteriorActionSelectionFn]:
    """The standard ``(root, interior)`` selection functions of ``config.kind``, as mctx's policies use them.

    Gumbel: sequential halving at the root, Gumbel's deterministic interior rule; MuZero: PUCT at both (the root's
    Dirichlet noise is in the root's priors, added by ``mctx.muzero_policy``).  Rules wrap these.
    """
    if config.kind == "gumbel":
        qtransform = mctx.qtransform_completed_by_mix_value
        root_selection = functools.partial(
            mctx.gumbel_muzero_root_action_selection,
            num_simulations=config.num_simulations,
            max_num_considered_actions=config.max_num_considered_actions,
            qtransform=qtransform,
        )
        interior_selection = functools.partial(mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform)
        return root_selection, interior_selection
    interior_selection = functools.partial(
        mctx.muzero_action_selection,
        pb_c_base=config.pb_c_base,
        pb_c_init=config.pb_c_init,
        qtransform=mctx.qtransform_by_parent_and_siblings,
    )
    return functools.partial(interior_selection, depth=0), interior_selection


def make_search_loop(
    params: Any,
    recurrent_fn: mctx.RecurrentFn,
    root_action_selection_fn: Callable,
    interior_action_selection_fn: Callable,
    rules: SearchRules,
    max_depth: int | None,
) -> Callable:
    """A ``loop_fn`` for mctx policies that runs the simulations under ``rules``.

    It has ``jax.lax.fori_loop``'s signature; mctx calls it as ``loop_fn(0, num_simulations, body, (key, tree))``.
    mctx's own ``body`` is not used: each simulation here selects with the rules' functions, expands with mctx,
    backs up with ``rules.backup_fn`` and then updates the per-node state.  Random keys are split exactly as in
    ``mctx.search``, so standard rules give mctx's result bit for bit.
    """
    select = mctx_action_selection.switching_action_selection_wrapper(
        root_action_selection_fn=rules.root_action_selection_fn or root_action_selection_fn,
        interior_action_selection_fn=rules.interior_action_selection_fn or interior_action_selection_fn,
    )
    backup = jax.vmap(rules.backup_fn)

    def loop_fn(lower: int, upper: int, _mctx_body: Callable, loop_state: tuple[jax.Array, mctx.Tree]):
        key, tree = loop_state
        num_simulations = upper - lower
        depth_limit = num_simulations if max_depth is None else max_depth
        batch_size = tree.node_visits.shape[0]
        batch_range = jnp.arange(batch_size)
        if rules.init_node_state is not None:
            root_gumbel = getattr(tree.extra_data, "root_gumbel", None)
            tree = tree.replace(extra_data=SearchExtraData(root_gumbel=root_gumbel, node_state=rules.init_node_state(tree)))

        def simulation(index, loop_state):
            key, tree = loop_state
            key, simulate_key, expand_key = jax.random.split(key, 3)
            simulate_keys = jax.random.split(simulate_key, batch_size)
            parent_index, action = mctx_search.simulate(simulate_keys, tree, select, depth_limit)
            leaf_index = tree.children_index[batch_range, parent_index, action]
            leaf_index = jnp.where(leaf_index == mctx.Tree.UNVISITED, index + 1, leaf_index)
            tree = mctx_search.expand(params, expand_key, tree, recurrent_fn, parent_index, action, leaf_index)
            tree = backup(tree, leaf_index)
            if rules.update_node_state is not None:
                node_state = rules.update_node_state(tree, parent_index, action, leaf_index)
                tree = tree.replace(extra_data=tree.extra_data.replace(node_state=node_state))
            return key, tree

        return jax.lax.fori_loop(lower, upper, simulation, (key, tree))

    return loop_fn


def policy(
    config: SearchConfig,
    params: Any,
    key: jax.Array,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    invalid_actions: jax.Array,
    rules: SearchRules | None = None,
) -> mctx.PolicyOutput:
    """Runs the mctx policy named by ``config.kind``; with ``rules``, through the project's simulation loop."""
    root_selection, interior_selection = selection_functions(config)
    if config.kind == "gumbel":
        run_policy = functools.partial(
            mctx.gumbel_muzero_policy,
            max_num_considered_actions=config.max_num_considered_actions,
            gumbel_scale=config.gumbel_scale,
        )
    else:
        run_policy = functools.partial(
            mctx.muzero_policy,
            dirichlet_fraction=config.dirichlet_fraction,
            dirichlet_alpha=config.dirichlet_alpha,
            pb_c_init=config.pb_c_init,
            pb_c_base=config.pb_c_base,
        )
    loop_fn = jax.lax.fori_loop
    if rules is not None:
        loop_fn = make_search_loop(params, recurrent_fn, root_selection, interior_selection, rules, config.max_depth)
    return run_policy(
        params=params,
        rng_key=key,
        root=root,
        recurrent_fn=recurrent_fn,
        num_simulations=config.num_simulations,
        invalid_actions=invalid_actions,
        max_depth=config.max_depth,
        loop_fn=loop_fn,
    )


#: :func:`policy` under its public name (``zerolab.search.search_policy``): for methods whose search has its own root
#: and recurrent functions (SAI's per-node α, β and komi) but runs through the project's rules and loop.
search_policy = policy


def masked_logits(logits: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """[B, A] logits with illegal actions at the dtype's minimum (finite, so all-illegal rows stay NaN-free)."""
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    return jnp.where(legal_action_mask, logits, jnp.finfo(logits.dtype).min)


def evaluate(network: nn.Module, variables: Any, states: pgx.State) -> tuple[jax.Array, jax.Array]:
    """``(masked policy logits [B, A], value [B])`` of a batch of pgx states, in evaluation mode."""
    output, _ = apply_network(network, variables, NetworkInputs.from_states(states), train=False)
    return masked_logits(output.policy_logits, states.legal_action_mask), output.value


def make_recurrent_fn(game: Game, network: nn.Module) -> mctx.RecurrentFn:
    """mctx's ``recurrent_fn`` for a perfect simulator: the embedding is the pgx state itself.

    Rewards are from the view of the player who moved; the discount is −1 (the next node belongs to the opponent)
    and 0 once the game has ended, where the value is 0 too.
    """

    def recurrent_fn(variables, key, action, states):
        del key
        mover = states.current_player
        states = jax.vmap(game.step)(states, action)
        logits, value = evaluate(network, variables, states)
        reward = states.rewards[jnp.arange(states.rewards.shape[0]), mover]
        value = jnp.where(states.terminated, 0.0, value)
        discount = jnp.where(states.terminated, 0.0, -1.0)
        output = mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits, value=value)
        return output, states

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
) -> SearchOutput:
    """Searches from each of the batched ``states`` (jittable; ``config``, ``game``, ``network`` are static).

    ``rules`` default to those named by ``config`` (:meth:`SearchConfig.make_rules`); pass them to override.
    ``mctx_loop=True`` runs mctx's own simulation loop instead of the project's — the same result with the standard
    rules, only slower: the reference for benchmarks (rules that change the simulations cannot run there).
    """
    if rules is None:
        rules = config.make_rules()
    if mctx_loop:
        rules = dataclasses.replace(rules or STANDARD_RULES, project_loop=False)
        if rules.changes_simulations:
            raise ValueError("mctx_loop=True runs mctx's own simulations; these search rules replace them "
                             f"({config.rules!r}): search with mctx_loop=False")
    logits, value = evaluate(network, variables, states)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=states)
    loop_rules = rules if rules is not None else STANDARD_RULES  # the project's loop (module docstring)
    if mctx_loop:
        loop_rules = None
    output = policy(
        config, variables, key, root, make_recurrent_fn(game, network), ~states.legal_action_mask, rules=loop_rules
    )
    summary = {}
    if rules is not None and rules.summary_fn is not None:
        summary = dict(rules.summary_fn(output.search_tree))
        for name, value_array in summary.items():
            chex.assert_shape(value_array, (states.legal_action_mask.shape[0],))
    visit_counts = output.search_tree.summary().visit_counts
    if config.kind == "gumbel":
        action = output.action
    else:
        action = jnp.argmax(jnp.where(states.legal_action_mask, visit_counts, -1), axis=-1).astype(jnp.int32)
    return SearchOutput(
        action=action,
        policy_target=output.action_weights,
        visit_counts=visit_counts,
        root_value=output.search_tree.node_values[:, mctx.Tree.ROOT_INDEX],
        summary=summary,
        tree=output.search_tree if keep_tree else None,
    )
