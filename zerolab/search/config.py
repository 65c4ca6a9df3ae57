"""Search settings and rules: :class:`SearchConfig` (how to search, read from a config or from text), the
:class:`SearchRules` a variant replaces and how they are built from a config, and the standard selection functions.

Variants (search-contempt, SAI) change the rules of the search, not its loop (:mod:`zerolab.search.mcts`).
:class:`SearchRules` is the extension point, in mctx's own style, over the compact tree's slots:

* ``interior_action_selection_fn`` — ``(key, tree, node_index, depth) -> slot`` over one unbatched tree
  (``tree.children_actions[node_index, slot]`` is the action), below the root; it may read per-node state from
  ``tree.extra_data.node_state``.  The root keeps the search kind's own rule (Gumbel's sequential halving, PUCT).
* ``init_node_state(tree) -> pytree`` with leaves ``[B, N, ...]`` and
  ``update_node_state(tree, parent_index [B], slot [B], leaf_index [B]) -> pytree``, called after every simulation.
* ``backup_fn(tree, leaf_index) -> tree`` over one unbatched tree: how a new leaf's value reaches its ancestors
  (the default is mctx's running mean of ``v <- r + discount * v``; SAI gives each ancestor its own value).
* ``summary_fn(tree) -> {name: [B]}`` over the batched tree after the search: per-search statistics that appear in
  :attr:`zerolab.search.mcts.SearchOutput.summary` and, averaged, in self-play's metrics.

Rules are chosen from the config like networks are: ``search.rules = "package.module:factory"`` with
``search.rule_options`` (a dict of keyword arguments), and ``factory(search_config, **rule_options) -> SearchRules``.
Every consumer of a :class:`SearchConfig` (self-play, checkpoint agents, the UCI and GTP engines, ``zerolab bench``)
gets the rules through :meth:`SearchConfig.make_rules`.  :func:`selection_functions` gives the standard root and
interior selection functions of a config, for rules that wrap them.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import chex
import jax

from zerolab.config import check_at_least, check_choice, field_value, load_factory, parse_value, section_dataclass
from zerolab.search import selection
from zerolab.search.tree import Tree, standard_backup

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
RETIRED_RULES = {"zerolab.search.mcts:project_loop_rules": ""}
"""``search.rules`` values the code has retired (old → what it names now), read as their new value wherever a config
is read or a recorded one compared: ``project_loop_rules`` named the standard search for the search-contempt
experiments' plain arm (run configs before it was removed record it)."""


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
        object.__setattr__(self, "rules", RETIRED_RULES.get(self.rules, self.rules))
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

    def with_overrides(self, overrides: Mapping[str, Any], *, what: str = "search key",
                       other_keys: Iterable[str] = ()) -> SearchConfig:
        """This config with ``{KEY: TEXT or value}`` overrides: the one reading of search settings given as text
        (agent specs, ``python -m zerolab uci|bench``) or as typed values (launchers: ``{"num_simulations": 16}``,
        never turned into text first).

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
                rule_options[key[len(RULE_OPTION_PREFIX):]] = parse_value(text) if isinstance(text, str) else text
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

    def _unknown_key_message(self, key: str, overrides: Mapping[str, Any], what: str, other_keys: Iterable[str]) -> str:
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


@dataclasses.dataclass(frozen=True)
class SearchChanges:
    """What an agent changes in the search its network was trained with: an agent's ``search`` section (a training
    run's evaluation, ``evaluation.search``; a head-to-head match, ``match.search``; a launcher's own agents,
    ``search``), written with :class:`SearchConfig`'s keys (``num_simulations``, ``kind``, ``selection``, ``rules``,
    ``rule_options.NAME`` …) so that a search's simulations are always ``….search.num_simulations``.

    ``items`` are sorted ``(key, value)`` pairs, each value of its field's type (hashable, as a jitted search's static
    arguments must be); :meth:`from_section` reads a config section, :meth:`apply` makes the agent's search
    (:meth:`SearchConfig.with_overrides`).
    """

    items: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, **changes: Any) -> SearchChanges:
        """``SearchChanges.of(num_simulations=16)``: the changes, read as :meth:`from_section` reads a section."""
        return cls.from_section(changes)

    @classmethod
    def from_section(cls, section: Any, name: str = "search") -> SearchChanges:
        """From a config section ``name`` (a ConfigDict or mapping; ``rule_options`` a mapping or ``rule_options.NAME``
        keys), each value read as its field's type and checked as :class:`SearchConfig` checks it on its own (the
        checks between fields, e.g. lc0's selection needing PUCT, are made where the changes meet a search).  Raises
        ValueError naming ``name.KEY``: an unknown key (with the key meant), a value of another type or out of
        range."""
        values = section.to_dict() if hasattr(section, "to_dict") else dict(section)
        for option, value in dict(values.pop("rule_options", None) or {}).items():
            values[RULE_OPTION_PREFIX + option] = value
        fields = {field.name: field for field in dataclasses.fields(SearchConfig)}
        changes = {}
        for key, value in values.items():
            if key.startswith(RULE_OPTION_PREFIX) and len(key) > len(RULE_OPTION_PREFIX):
                changes[key] = parse_value(value) if isinstance(value, str) else value
                continue
            if key not in fields or key == "rule_options":
                raise ValueError(SearchConfig()._unknown_key_message(key, values, f"{name} key", ()))
            try:
                changes[key] = field_value(fields[key].type, value)
            except ValueError as error:
                raise ValueError(f"{name}.{key}: {error}") from None
            try:
                SearchConfig(**{"kind": "muzero"} if key == "selection" else {}, **{key: changes[key]})
            except ValueError as error:  # SearchConfig's own check, which names ``search.KEY``
                raise ValueError(str(error).replace("search.", f"{name}.", 1)) from None
        return cls(tuple(sorted(changes.items())))

    @staticmethod
    def names_a_key(dotted_key: str) -> bool:
        """Whether ``dotted_key`` names a search's key inside a ``search`` section (``evaluation.search.kind``,
        ``search.rule_options.sc_limit``): such a key may be given on a command line though the section's preset
        does not list it (:func:`zerolab.config.apply_overrides`)."""
        *sections, leaf = dotted_key.split(".")
        if sections[-2:-1] == ["search"] and sections[-1:] == ["rule_options"]:
            return bool(leaf)
        fields = {field.name for field in dataclasses.fields(SearchConfig)} - {"rule_options"}
        return sections[-1:] == ["search"] and leaf in fields

    def get(self, key: str, default: Any = None) -> Any:
        """The value this changes ``key`` to, else ``default``."""
        return dict(self.items).get(key, default)

    def apply(self, search: SearchConfig) -> SearchConfig:
        """``search`` with these changes (:meth:`SearchConfig.with_overrides`; rules named here drop ``search``'s
        rule options unless options are named too)."""
        return search.with_overrides(dict(self.items))

    def to_section(self) -> dict[str, Any]:
        """The changes as the config section they are read from (``rule_options`` a mapping of its own):
        :func:`zerolab.config.section_dict` writes a typed config's ``search`` sections with it."""
        section: dict[str, Any] = {}
        for key, value in self.items:
            if key.startswith(RULE_OPTION_PREFIX):
                section.setdefault("rule_options", {})[key[len(RULE_OPTION_PREFIX):]] = value
            else:
                section[key] = value
        return section


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


@dataclasses.dataclass(frozen=True)
class SearchRules:
    """The hooks a search variant may replace; ``None`` keeps the standard behaviour of the chosen policy.

    Every hook works on the slots of :class:`~zerolab.search.tree.Tree` (``tree.children_actions`` names each slot's
    action): selection functions return a slot, node state is ``[B, N, ...]``.
    """

    interior_action_selection_fn: InteriorActionSelectionFn | None = None
    init_node_state: InitNodeStateFn | None = None
    update_node_state: UpdateNodeStateFn | None = None
    backup_fn: BackupFn = standard_backup
    summary_fn: SummaryFn | None = None

    @property
    def changes_simulations(self) -> bool:
        """Whether these rules change what the simulations do (any hook but ``summary_fn`` replaced).  Every search
        runs in the project's loop over the compact tree; only the standard rules can also run in mctx's own dense
        search (``mctx_loop=True``), the reference of tests and benchmarks."""
        return (self.interior_action_selection_fn, self.init_node_state, self.update_node_state,
                self.backup_fn) != (None, None, None, standard_backup)


STANDARD_RULES = SearchRules()


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


def check_mctx_loop_rules(config: SearchConfig, rules: SearchRules | None) -> None:
    """Raises ValueError where ``rules`` replace what the simulations do, or ``config`` selects with lc0's PUCT:
    mctx's own search cannot run them."""
    if config.selection != "mctx":
        raise ValueError(f"mctx_loop=True runs mctx's own simulations with mctx's PUCT; search.selection="
                         f"{config.selection!r} runs only in the project's loop: search with mctx_loop=False")
    if rules is not None and rules.changes_simulations:
        raise ValueError("mctx_loop=True runs mctx's own simulations; these search rules replace them "
                         f"({config.rules!r}): search with mctx_loop=False")
