"""The search doorway: the SearchRules extension point, search on real positions, the search config.  The compact tree's
equivalence with mctx's dense search is tested in test_compact_tree.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zerolab.search import mcts as search_lib
from zerolab.search.config import STANDARD_RULES, SearchConfig, SearchRules
from zerolab.search.tree import Tree
from zerolab.games import make_game
from zerolab.networks.network import AlphaZeroResNet, init_variables


@pytest.fixture(scope="module")
def gardner():
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    variables = init_variables(network, game, jax.random.key(0))
    return game, network, variables


def policies_with_and_without_rules(game, network, config, rules):
    """A jitted ``(variables, key, states) -> (standard search, search with rules)``, both over the compact tree."""

    @jax.jit
    def both(variables, key, states):
        plain = search_lib.run_search(config, game, network, variables, key, states, rules=STANDARD_RULES,
                                      keep_tree=True)
        through_rules = search_lib.run_search(config, game, network, variables, key, states, rules=rules,
                                              keep_tree=True)
        return plain, through_rules

    return both


def random_positions(game, count, plies, seed):
    keys = jax.random.split(jax.random.key(seed), count)
    states = game.batched_init(keys)
    step = game.batched_step
    rng = np.random.default_rng(seed)
    for _ in range(plies):
        legal = np.asarray(states.legal_action_mask)
        actions = [rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in legal]
        states = step(states, jnp.asarray(actions, jnp.int32))
    return states


def test_per_node_state_is_updated_after_every_simulation(gardner):
    """A rule that counts, per node, the simulations that passed through it ends equal to mctx's node visits."""
    game, network, variables = gardner

    def init_node_state(tree):
        return jnp.zeros_like(tree.node_visits).at[:, Tree.ROOT_INDEX].set(1)

    def count_path(tree, parent_index, slot, leaf_index):
        def one_tree(counts, parents, leaf):
            def climb(carry):
                counts, node = carry
                return counts.at[node].add(1), parents[node]

            counts, _ = jax.lax.while_loop(lambda carry: carry[1] != Tree.NO_PARENT, climb, (counts, leaf))
            return counts

        return jax.vmap(one_tree)(tree.extra_data.node_state, tree.parents, leaf_index)

    rules = SearchRules(init_node_state=init_node_state, update_node_state=count_path)
    config = SearchConfig(kind="gumbel", num_simulations=16, max_num_considered_actions=8)
    both = policies_with_and_without_rules(game, network, config, rules)
    plain, counted = both(variables, jax.random.key(1), random_positions(game, 4, 3, seed=5))
    np.testing.assert_array_equal(counted.tree.extra_data.node_state, plain.tree.node_visits)
    np.testing.assert_array_equal(plain.action, counted.action)  # state alone does not change the search


def test_backup_rule_changes_the_search(gardner):
    """A backup that never propagates values leaves every node at its network value: the extension point is live."""
    game, network, variables = gardner

    def visits_only_backup(tree, leaf_index):
        def climb(carry):
            tree, node = carry
            parent, slot = tree.parents[node], tree.slot_from_parent[node]
            tree = tree.replace(node_visits=tree.node_visits.at[parent].add(1),
                                children_visits=tree.children_visits.at[parent, slot].add(1))
            return tree, parent

        tree, _ = jax.lax.while_loop(lambda carry: carry[1] != Tree.ROOT_INDEX, climb, (tree, leaf_index))
        return tree

    config = SearchConfig(kind="muzero", num_simulations=16)
    both = policies_with_and_without_rules(game, network, config, SearchRules(backup_fn=visits_only_backup))
    plain, custom = both(variables, jax.random.key(2), random_positions(game, 4, 3, seed=6))
    np.testing.assert_array_equal(custom.tree.node_values, custom.tree.raw_values)
    assert not np.array_equal(plain.tree.node_values, custom.tree.node_values)
    np.testing.assert_array_equal(custom.tree.node_visits[:, 0], plain.tree.node_visits[:, 0])


@pytest.mark.parametrize("kind", ["gumbel", "muzero"])
def test_search_gives_legal_policy_and_gumbel_finds_mate_in_one(gardner, kind):
    """Gumbel MuZero finds the mate.  mctx's PUCT completes unvisited children with the minimum Q, so with an
    untrained network it may keep to the first move it tried: for MuZero only the policy's legality is checked."""
    game, network, variables = gardner
    mate_in_one = game.from_fen("k4/5/1K3/5/4R w - - 0 1")  # Re5 is the only mate
    states = jax.tree.map(lambda x: jnp.stack([x, x]), mate_in_one)
    # Without root noise: Dirichlet noise may put nearly all prior mass on one move, by design.
    config = SearchConfig(kind=kind, num_simulations=64, max_num_considered_actions=16, dirichlet_fraction=0.0)
    run = jax.jit(lambda v, k, s: search_lib.run_search(config, game, network, v, k, s))
    output = run(variables, jax.random.key(0), states)
    if kind == "gumbel":
        assert [game.action_to_uci(int(a), mate_in_one) for a in output.action] == ["e1e5", "e1e5"]
    assert np.asarray(states.legal_action_mask)[np.arange(2), np.asarray(output.action)].all()
    policy = np.asarray(output.policy_target)
    legal = np.asarray(states.legal_action_mask)
    np.testing.assert_allclose(policy.sum(-1), 1.0, rtol=1e-5)
    assert policy[~legal].max() < 1e-6
    if kind == "gumbel":
        np.testing.assert_array_equal(policy.argmax(-1), np.asarray(output.action))  # the target favours the mate


def test_search_config_rejects_unknown_keys():
    with pytest.raises(ValueError, match="unknown search keys.*num_sims"):
        SearchConfig.from_config({"num_sims": 3})
    with pytest.raises(ValueError, match="kind"):
        SearchConfig(kind="alphabeta")


def test_search_config_reads_text_overrides_by_its_field_names():
    base = SearchConfig(num_simulations=8, rules="pkg.rules:factory", rule_options={"limit": 2})
    assert base.with_overrides({}) == base  # the config's own rules keep their options
    changed = base.with_overrides({
        "num_simulations": "3", "max_num_considered_actions": "4", "kind": "muzero", "gumbel_scale": "0",
        "dirichlet_fraction": "0.5", "max_depth": "6", "rule_options.limit": "5", "rule_options.mode": "fast"})
    assert (changed.num_simulations, changed.max_num_considered_actions, changed.kind) == (3, 4, "muzero")
    assert changed.max_depth == 6
    assert (changed.gumbel_scale, changed.dirichlet_fraction) == (0.0, 0.5) and isinstance(changed.gumbel_scale, float)
    assert changed.rule_options == (("limit", 5), ("mode", "fast"))  # options are Python literals, else text
    assert base.with_overrides({"rules": "other.rules:factory"}).rule_options == ()  # the options were base's rules'
    chosen = SearchConfig().with_overrides({"rules": "pkg.rules:factory", "rule_options.limit": "3"})
    assert (chosen.rules, chosen.rule_options) == ("pkg.rules:factory", (("limit", 3),))
    # typed values (a launcher's, never turned into text) read as their text does
    typed = base.with_overrides({"num_simulations": 3, "max_num_considered_actions": 4.0, "kind": "muzero",
                                 "gumbel_scale": 0, "dirichlet_fraction": 0.5, "max_depth": 6, "rule_options.limit": 5,
                                 "rule_options.mode": "fast"})
    assert typed == changed and isinstance(typed.gumbel_scale, float) and isinstance(typed.max_num_considered_actions, int)
    with pytest.raises(ValueError, match="search key num_simulations=2.5: expected int"):
        base.with_overrides({"num_simulations": 2.5})


@pytest.mark.parametrize("key, meant", [("simulations", "num_simulations"),
                                        ("considered", "max_num_considered_actions"),
                                        ("rule.limit", "rule_options.limit"), ("limit", "rule_options.limit"),
                                        ("gumbel_scal", "gumbel_scale")])
def test_search_overrides_name_the_key_meant_and_the_valid_keys(key, meant):
    base = SearchConfig(rules="pkg.rules:factory")
    with pytest.raises(ValueError, match=f"unknown agent option '{key}'; did you mean '{meant}'\\?.*valid: .*"
                                         "max_num_considered_actions.*num_simulations.*step.*rule_options.NAME"):
        base.with_overrides({key: "3"}, what="agent option", other_keys=("step", "name"))


def test_search_overrides_reject_bad_values_and_options_without_rules():
    search = SearchConfig()
    with pytest.raises(ValueError, match="unknown search key 'bogus' \\(valid: dirichlet_alpha"):
        search.with_overrides({"bogus": "1"})
    with pytest.raises(ValueError, match="search key num_simulations=many: expected int, got .many."):
        search.with_overrides({"num_simulations": "many"})
    with pytest.raises(ValueError, match="search.kind must be one of"):
        search.with_overrides({"kind": "alphabeta"})
    with pytest.raises(ValueError, match="given without search.rules"):
        search.with_overrides({"rule_options.limit": "3"})
