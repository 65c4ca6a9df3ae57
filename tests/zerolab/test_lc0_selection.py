"""lc0's PUCT (``search.selection=lc0``) over the compact tree's slots: scores and choices against the formulas computed
here with numpy, a case where first-play urgency makes it choose otherwise than mctx's PUCT, the config field, and
its use by search-contempt's rules and the project's loop."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from zerolab.search import mcts as search_lib
from zerolab.search.config import SearchConfig, selection_functions
from zerolab.search.selection import lc0_action_selection, lc0_puct_scores, masked_argmax, muzero_action_selection
from zerolab.search.slots import EMPTY_SLOT
from zerolab.search.tree import RecurrentOutput, Tree

# lc0's defaults (src/search/classic/params.cc): CPuct, CPuctBase, CPuctFactor, FpuValue (FpuStrategy=reduction)
CPUCT, CPUCT_BASE, CPUCT_FACTOR, FPU_REDUCTION = 1.745, 38739.0, 3.894, 0.330


def expected_scores(logits, visits, qvalues, node_visits, node_value):
    """[K] lc0's Q + U from its formulas, in float64 (empty slots: logit None): P = softmax over the occupied slots;
    c = CPuct + CPuctFactor · ln((N + CPuctBase) / CPuctBase); U = c · P · √max(Σ n, 1) / (1 + n); an unvisited
    child's Q = V − FpuValue · √(Σ P over the visited children); empty slots −inf."""
    occupied = np.array([logit is not None for logit in logits])
    raw = np.array([logit if logit is not None else -np.inf for logit in logits], np.float64)
    prior = np.where(occupied, np.exp(raw - raw[occupied].max()), 0.0)
    prior /= prior.sum()
    visits = np.asarray(visits, np.float64)
    c = CPUCT + CPUCT_FACTOR * math.log((node_visits + CPUCT_BASE) / CPUCT_BASE)
    u = c * prior * math.sqrt(max(visits.sum(), 1.0)) / (1.0 + visits)
    first_play = node_value - FPU_REDUCTION * math.sqrt(prior[visits > 0].sum())
    q = np.where(visits > 0, np.asarray(qvalues, np.float64), first_play)
    return np.where(occupied, q + u, -np.inf)


def one_node_tree(actions, logits, visits, child_values, node_visits, node_value, num_actions=8):
    """A tree of one node (the root) whose slots hold ``actions`` (``EMPTY_SLOT`` after them) with prior ``logits``,
    ``visits`` and children's values (each child's own view: discount −1, reward 0, so Q = −value)."""
    minimum = float(jnp.finfo(jnp.float32).min)
    slots = len(actions)
    return Tree(
        node_visits=jnp.array([node_visits], jnp.int32), raw_values=jnp.array([0.2]),
        node_values=jnp.array([node_value], jnp.float32), parents=jnp.array([-1]), action_from_parent=jnp.array([-1]),
        slot_from_parent=jnp.array([-1]), children_actions=jnp.array([actions], jnp.int32),
        children_index=jnp.full((1, slots), -1, jnp.int32),
        children_prior_logits=jnp.array([[minimum if logit is None else logit for logit in logits]], jnp.float32),
        children_visits=jnp.array([visits], jnp.int32), children_values=jnp.array([child_values], jnp.float32),
        children_rewards=jnp.zeros((1, slots)), children_discounts=jnp.full((1, slots), -1.0),
        embeddings=jnp.zeros(1), num_actions=num_actions)


@jax.jit
def lc0_choice(tree):
    return lc0_action_selection(jax.random.key(0), tree, 0, 0), lc0_puct_scores(tree, 0)


ACTIONS = [0, 2, 3, 6, EMPTY_SLOT]
LEAF_VALUES = np.array([-0.1, 0.25, 0.3, -0.05, 0.0])  # each child's value to its own player: Q = −value
FRESH = ([0.2, 1.0, -0.5, 0.6, None], [0, 0, 0, 0, 0], [1, 3, 3, 1, 3, 0, 0, 1, 0, 3, 3, 0])
# 7,593 visits: c(N) = 2.44 (1.745 without CPuctFactor, which then keeps to slot 0); slot 2 unvisited, prior 1e-6
DEEP = ([0.2, 1.0, -12.0, 0.6, None], [4000, 2500, 0, 1092, 0], [3, 3, 3, 3, 3, 3, 0, 0, 0, 3, 0, 0])


@pytest.mark.parametrize("logits, start_visits, by_hand", [FRESH, DEEP], ids=["fresh", "deep"])
def test_a_selection_sequence_follows_lc0s_formulas(logits, start_visits, by_hand):
    """Twelve selections at one node, each chosen child then visited once more with its fixed value (a bandit
    with the node's value the running mean of its raw value 0.2 and the children's Q): every step's scores and choice
    are lc0's formulas computed here in float64.  From a fresh node (c(N) ≈ CPuct; the unvisited children enter
    by first-play urgency) and from one of 7,593 visits (c(N) ≈ 2.44), where slots 0 and 3 trade places."""
    visits = np.array(start_visits)
    qvalues = -LEAF_VALUES
    node_visits = 1 + int(visits.sum())
    node_value = (0.2 + float((visits * qvalues).sum())) / node_visits
    chosen, expected_chosen = [], []
    for _ in range(12):
        tree = one_node_tree(ACTIONS, logits, visits, np.where(visits > 0, LEAF_VALUES, 0.0), node_visits,
                             node_value)
        slot, scores = jax.device_get(lc0_choice(tree))
        expected = expected_scores(logits, visits, qvalues, node_visits, node_value)
        np.testing.assert_allclose(scores[:4], expected[:4], rtol=2e-6, atol=1e-7)
        chosen.append(int(slot))
        expected_chosen.append(int(np.argmax(expected)))
        visits[expected_chosen[-1]] += 1
        node_value = (node_value * node_visits + qvalues[expected_chosen[-1]]) / (node_visits + 1)
        node_visits += 1
    assert chosen == expected_chosen == by_hand


def test_ties_go_to_the_first_slot():
    """``masked_argmax`` is ``jnp.argmax`` (mctx's): the first of equal maxima among the valid slots, the first NaN,
    slot 0 when none is valid.  An lc0 node whose children have equal priors and no visits has equal scores: slot 0."""
    assert int(masked_argmax(jnp.array([1.0, 3.0, 3.0]), jnp.array([True, True, True]))) == 1
    assert int(masked_argmax(jnp.array([3.0, 2.0, 3.0, 3.0]), jnp.array([False, True, True, True]))) == 2
    assert int(masked_argmax(jnp.array([1.0, jnp.nan, 3.0, jnp.nan]), jnp.array([True] * 4))) == 1
    assert int(masked_argmax(jnp.array([1.0, 2.0]), jnp.array([False, False]))) == 0
    tree = one_node_tree(ACTIONS, [0.5, 0.5, 0.5, 0.5, None], [0, 0, 0, 0, 0], np.zeros(5), 1, 0.2)
    slot, scores = jax.device_get(lc0_choice(tree))
    assert len(set(scores[:4].tolist())) == 1 and int(slot) == 0


def test_first_play_urgency_makes_lc0_choose_otherwise_than_mctx():
    """One child visited once and bad for the node's player (Q = −0.95, prior 0.7), one unvisited (prior 0.3); the
    node's value is the mean of its raw value 0.2 and −0.95.  mctx's PUCT rescales Q over [−0.95, −0.375] and gives
    the unvisited child the minimum, 0 — the visited child's rescaled Q too — so the prior decides and it visits the
    bad child again.  lc0 values the unvisited child at −0.375 − 0.33 · √0.7 = −0.651, above −0.95, and tries it."""
    node_value = (0.2 - 0.95) / 2
    logits = [math.log(0.7), math.log(0.3)]
    tree = one_node_tree([1, 4], logits, [1, 0], [0.95, 0.0], 2, node_value)
    slot, scores = jax.device_get(lc0_choice(tree))
    c = CPUCT + CPUCT_FACTOR * math.log((2 + CPUCT_BASE) / CPUCT_BASE)
    by_hand = [-0.95 + c * 0.7 * 1 / 2, node_value - FPU_REDUCTION * math.sqrt(0.7) + c * 0.3 * 1 / 1]
    np.testing.assert_allclose(scores, by_hand, rtol=2e-6)
    np.testing.assert_allclose(scores, expected_scores(logits, [1, 0], [-0.95, 0.0], 2, node_value), rtol=2e-6)
    assert int(slot) == 1
    assert int(jax.jit(muzero_action_selection)(jax.random.key(0), tree, 0, 0)) == 0


def test_selection_is_a_search_config_field():
    config = SearchConfig(kind="muzero")
    assert config.selection == "mctx"
    changed = config.with_overrides({"selection": "lc0", "lc0_cpuct": "2", "lc0_fpu_reduction": "0.5"})
    assert (changed.selection, changed.lc0_cpuct, changed.lc0_fpu_reduction) == ("lc0", 2.0, 0.5)
    assert (changed.lc0_cpuct_base, changed.lc0_cpuct_factor) == (CPUCT_BASE, CPUCT_FACTOR)
    from zerolab.training.runs import default_config

    assert SearchConfig.from_config(default_config().search) == SearchConfig()
    with pytest.raises(ValueError, match="search.selection must be one of 'mctx', 'lc0', got 'leela'"):
        config.with_overrides({"selection": "leela"})
    with pytest.raises(ValueError, match="selection='lc0' is a PUCT rule: it needs kind='muzero'"):
        SearchConfig(kind="gumbel", selection="lc0")
    root, interior = selection_functions(changed)
    assert interior.func is lc0_action_selection and root.keywords["depth"] == 0
    assert interior.keywords == {"cpuct": 2.0, "cpuct_base": CPUCT_BASE, "cpuct_factor": CPUCT_FACTOR,
                                 "fpu_reduction": 0.5}


def test_contempt_rules_select_with_the_configs_puct_at_nodes_not_frozen():
    """On the node where lc0 and mctx choose differently (above), search-contempt's interior rule picks lc0's slot
    when the config selects lc0 and mctx's otherwise, at even depth and at an odd depth not yet frozen; once frozen it
    draws the recorded slot."""
    from contempt_search.rules import ContemptNodeState, contempt_rules
    from zerolab.search.mcts import SearchExtraData

    tree = one_node_tree([1, 4], [math.log(0.7), math.log(0.3)], [1, 0], [0.95, 0.0], 2, (0.2 - 0.95) / 2)
    for selection, expected in (("lc0", 1), ("mctx", 0)):
        config = SearchConfig(kind="muzero", num_simulations=8, selection=selection)
        rules = contempt_rules(config, sc_limit=2)
        for depth, child_visits, recorded in ((0, 5, 0), (1, 1, 0), (1, 2, 0), (1, 2, 1)):
            state = ContemptNodeState(first_slots=jnp.array([[recorded, recorded]]),
                                      child_visits=jnp.array([child_visits]), depth=jnp.array([depth]))
            with_state = tree.replace(extra_data=SearchExtraData(root_gumbel=None, node_state=state))
            slot = int(rules.interior_action_selection_fn(jax.random.key(3), with_state, 0, depth))
            frozen = depth % 2 == 1 and child_visits >= 2
            assert slot == (recorded if frozen else expected), (selection, depth, child_visits)


TOY_ACTIONS = 6


def toy_recurrent_fn(params, key, action, state):
    """A toy game without pgx: every action legal, priors, values and rewards fixed functions of an integer state."""
    del params, key
    state = (state * 5 + action + 1) % 997
    logits = jnp.sin(0.41 * state[:, None] + 1.7 * jnp.arange(TOY_ACTIONS))
    legal = jnp.ones((state.shape[0], TOY_ACTIONS), bool)
    output = RecurrentOutput(reward=jnp.zeros(state.shape), discount=jnp.full(state.shape, -1.0), prior_logits=logits,
                             value=0.9 * jnp.cos(0.13 * state), legal_action_mask=legal)
    return output, state


def test_the_project_loop_runs_lc0s_puct_and_contempt_over_it_and_mctx_loop_refuses_it():
    """PUCT with root noise in the project's loop: lc0's rule gives other trees than mctx's; contempt over lc0 with an
    N_scl no node can reach is lc0's search bit for bit; mctx's own loop refuses lc0's rule."""
    from contempt_search.rules import contempt_rules

    state = jnp.array([3, 40], jnp.int32)
    legal = jnp.ones((2, TOY_ACTIONS), bool)
    root = mctx.RootFnOutput(prior_logits=jnp.cos(0.7 * state[:, None] + jnp.arange(TOY_ACTIONS)),
                             value=jnp.array([0.1, -0.3]), embedding=state)
    lc0 = SearchConfig(kind="muzero", num_simulations=12, selection="lc0")
    plain = dataclasses.replace(lc0, selection="mctx")

    @jax.jit
    def policies(key):
        def run(config, rules=None):
            return search_lib.search_policy(config, None, key, root, toy_recurrent_fn, legal, rules=rules)

        return run(lc0), run(lc0, contempt_rules(lc0, sc_limit=12)), run(plain)

    searched, contempt, mctx_puct = jax.device_get(policies(jax.random.key(5)))
    assert searched.visit_counts.sum() == 2 * 12
    for name in ("node_visits", "node_values", "children_visits", "children_actions", "parents"):
        np.testing.assert_array_equal(getattr(searched.search_tree, name), getattr(contempt.search_tree, name), name)
    assert not np.array_equal(searched.search_tree.children_visits, mctx_puct.search_tree.children_visits)
    with pytest.raises(ValueError, match="selection='lc0' runs only in the project's loop"):
        search_lib.search_policy(lc0, None, jax.random.key(0), root, toy_recurrent_fn, legal, mctx_loop=True)
