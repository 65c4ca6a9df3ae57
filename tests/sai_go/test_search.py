"""SAI's search: the λ backup on a hand-built chain, λ = 0 against mctx's own backup, and λ's effect in a real
endgame with two winning moves."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special

from zerolab import NetworkOutput, SearchConfig, Tree, init_variables
from sai_go.search import SaiEmbedding, lambda_backup, lambda_rules, sai_search
from sai_go.value import signed_komi
from tests.fast_compile import fast_jit
from tests.sai_go.conftest import played_random_games


def numpy_mean_winrate(alpha, beta, komi_for_mover, end):
    """Mean of σ(β (α + k̄ + y)) over y between 0 and ``end``, by quadrature (σ at 0 when end = 0)."""
    rho = lambda y: special.expit(beta * (alpha + komi_for_mover + y))  # noqa: E731
    if end == 0:
        return float(rho(0.0))
    return integrate.quad(rho, min(0.0, end), max(0.0, end), epsabs=1e-12)[0] / abs(end)


def numpy_lambda_bonus(alpha, beta, komi_for_mover, lam):
    now = special.expit(beta * (alpha + komi_for_mover))
    target = (1 - lam) * now + lam / 2
    return special.logit(target) / beta - alpha - komi_for_mover


def hand_built_chain(root_alpha: float):
    """An unbatched search tree root → c → g with only the root expanded yet; nodes: (α, β, Black to move, komi)."""
    alpha = jnp.array([root_alpha, -4.0, 3.0])
    beta = jnp.array([0.5, 0.3, 0.8])
    black_to_move = jnp.array([True, False, True])
    komi = jnp.full(3, 7.5)
    actions = 5
    embeddings = SaiEmbedding(state=jnp.zeros(3), alpha=alpha, beta=beta, black_to_move=black_to_move, komi=komi)
    zeros = jnp.zeros((3, actions))
    return Tree(  # the dense layout (K = A, as SAI's 7×7 Go): slot a holds action a
        node_visits=jnp.array([1, 0, 0], jnp.int32), raw_values=jnp.zeros(3), node_values=jnp.zeros(3),
        parents=jnp.array([-1, 0, 1], jnp.int32), action_from_parent=jnp.array([-1, 2, 4], jnp.int32),
        slot_from_parent=jnp.array([-1, 2, 4], jnp.int32),
        children_actions=jnp.tile(jnp.arange(actions, dtype=jnp.int32), (3, 1)),
        children_index=jnp.full((3, actions), -1, jnp.int32).at[0, 2].set(1).at[1, 4].set(2),
        children_prior_logits=zeros, children_visits=zeros.astype(jnp.int32), children_rewards=zeros,
        children_discounts=zeros - 1.0, children_values=zeros, embeddings=embeddings, extra_data=None,
        num_actions=actions)


def expand_and_back_up(tree, node, backup):
    tree = tree.replace(node_visits=tree.node_visits.at[node].set(1))
    return backup(tree, node)


def independent_chain_values(root_alpha: float, lam: float):
    """Node values of root, c, g after c and g were added, from the paper's definitions (numpy, quadrature)."""
    alpha, beta, black = [root_alpha, -4.0, 3.0], [0.5, 0.3, 0.8], [True, False, True]
    komi = [-7.5 if b else 7.5 for b in black]
    bonus = [numpy_lambda_bonus(alpha[i], beta[i], komi[i], lam) for i in range(3)]

    def value(s, r, view):
        """v(s, r) as a value in [−1, 1] for the mover at ``view``."""
        same = black[s] == black[r]
        winrate_r = numpy_mean_winrate(alpha[r], beta[r], komi[r], bonus[s] if same else -bonus[s])
        signed = 2 * winrate_r - 1
        return signed if black[view] == black[r] else -signed

    root = np.mean([value(0, 0, 0), value(0, 1, 0), value(0, 2, 0)])
    c = np.mean([value(0, 1, 1), value(0, 2, 1)])
    g = value(1, 2, 2)
    return np.array([root, c, g])


@pytest.mark.parametrize("lam", [0.5, 1.0])
def test_the_lambda_backup_of_a_hand_built_chain(lam):
    backup = fast_jit(lambda_backup(lam))
    results = {}
    for root_alpha in (6.0, 14.0):
        tree = hand_built_chain(root_alpha)
        # the root's initial value: its own interval (what sai_search's root function gives)
        root_value = 2 * numpy_mean_winrate(root_alpha, 0.5, -7.5, numpy_lambda_bonus(root_alpha, 0.5, -7.5, lam)) - 1
        tree = tree.replace(node_values=tree.node_values.at[0].set(root_value))
        tree = expand_and_back_up(tree, 1, backup)
        tree = expand_and_back_up(tree, 2, backup)
        expected = independent_chain_values(root_alpha, lam)
        np.testing.assert_allclose(tree.node_values, expected, atol=2e-5)
        np.testing.assert_array_equal(tree.node_visits, [3, 2, 1])
        assert int(tree.children_visits[0, 2]) == 2 and int(tree.children_visits[1, 4]) == 1
        np.testing.assert_allclose(tree.children_values[0, 2], tree.node_values[1])
        np.testing.assert_allclose(tree.children_values[1, 4], tree.node_values[2])
        results[root_alpha] = np.asarray(tree.node_values)
    # The root's α sets the interval c's subtree is valued at, so c's value moves; g is valued at c's interval.
    assert abs(results[6.0][1] - results[14.0][1]) > 1e-3
    assert results[6.0][2] == results[14.0][2]


@pytest.fixture(scope="module")
def midgame_positions():
    """Positions after 20 and 40 plies of random games (6 of each; the scoring tests' compiled random games)."""
    _, path = played_random_games(7.5, 5)
    positions = jax.tree.map(lambda leaf: jnp.concatenate([leaf[19, :6], leaf[39, 6:12]]), path)
    keep = ~np.asarray(positions.terminated)
    return jax.tree.map(lambda leaf: leaf[keep], positions)


def test_lambda_zero_is_the_standard_search_with_value_two_rho_minus_one(go_game, tiny_network, compiled_sai_search,
                                                                         midgame_positions):
    _, variables = tiny_network
    states = midgame_positions
    komi = jnp.linspace(-6.5, 12.5, states.terminated.shape[0])
    ours = compiled_sai_search(variables, jax.random.key(3), states, komi, lam=0.0)
    standard = compiled_sai_search(variables, jax.random.key(3), states, komi, lam=0.0, mctx_loop=True)  # mctx's own
    np.testing.assert_array_equal(ours.visit_counts, standard.visit_counts)
    np.testing.assert_array_equal(ours.tree.node_values, standard.tree.node_values)
    # The root value is ρ(0)'s tree average: the root network's own 2ρ(0) − 1 is where it starts.
    np.testing.assert_allclose(ours.tree.raw_values[:, 0],
                               np.tanh(0.5 * ours.beta * (ours.alpha + signed_komi(komi, ours.black_to_move))),
                               atol=1e-6)
    # With λ = 0.5 the same compiled search gives other values (the backup is really in use).
    half = compiled_sai_search(variables, jax.random.key(3), states, komi, lam=0.5)
    assert np.abs(np.asarray(half.tree.node_values) - np.asarray(ours.tree.node_values)).max() > 1e-3


def test_bad_lambda_is_refused():
    with pytest.raises(ValueError, match=r"search.rule_options.lam must be in \[0, 1\], got 1.5"):
        lambda_rules(None, lam=1.5)
    with pytest.raises(ValueError, match="lam must be a number"):
        lambda_rules(None, lam="high")
    # mctx's own loop is the λ = 0 reference: it refuses λ > 0 and rules that replace its simulations, before searching
    with pytest.raises(ValueError, match="mctx_loop=True is mctx's backup, the λ = 0 search; got lam=0.5"):
        sai_search(None, None, None, None, None, None, None, lam=0.5, mctx_loop=True)
    with pytest.raises(ValueError, match="mctx_loop=True runs mctx's own simulations"):
        sai_search(None, None, None, None, None, None, None, rules=lambda_rules(None, 0.0), mctx_loop=True)


# --- a real endgame with two winning moves ----------------------------------------------------------------------------

BLACK_STONES = ["C1", "C2", "C3", "C4", "C5", "C6", "C7", "A3", "B4"]
WHITE_STONES = ["E1", "E2", "E3", "E4", "E5", "E6", "E7", "A4", "F4"]
CAPTURE, DAME = "A5", "D4"  # Black's two best moves: capture A4 (margin 20.5 at komi −20.5) or fill a dame (13.5)
KOMI = -20.5
STUB_BETA = 3.0  # so sure that at λ = 0 both moves' winrates round to 1 in float32: only λ > 0 tells them apart


def tromp_taylor_from_observation(observation: jax.Array) -> jax.Array:
    """[B] area of the mover minus the opponent's from pgx observation planes 0 (mover) and 1 (opponent)."""
    stones = (observation[..., 0].astype(jnp.int32) - observation[..., 1].astype(jnp.int32))  # [B, N, N]

    def reaches(board, colour):
        empty = board == 0

        def grow(state):
            reached, _ = state
            padded = jnp.pad(reached, 1)
            near = padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]
            grown = reached | (empty & near)
            return grown, (grown != reached).any()

        return jax.lax.while_loop(lambda state: state[1], grow, (board == colour, jnp.bool_(True)))[0]

    def area(board):
        mine, theirs = reaches(board, 1), reaches(board, -1)
        empty = board == 0
        return ((board == 1).sum() + (empty & mine & ~theirs).sum() - (board == -1).sum()
                - (empty & theirs & ~mine).sum()).astype(jnp.float32)

    return jax.vmap(area)(stones)


class EndgameStub(nn.Module):
    """α = the position's Tromp–Taylor area difference, β = STUB_BETA; the policy prefers the two candidate moves at the
    endgame's root and passing everywhere else."""

    root_observation: np.ndarray
    candidate_actions: tuple[int, ...]
    num_actions: int

    @nn.compact
    def __call__(self, inputs, train=False):
        batch = inputs.observation.shape[0]
        self.param("unused", nn.initializers.zeros, (1,))
        at_root = (inputs.observation == self.root_observation).all(axis=(1, 2, 3))
        root_logits = jnp.zeros(self.num_actions).at[jnp.array(self.candidate_actions)].set(8.0)
        pass_logits = jnp.zeros(self.num_actions).at[self.num_actions - 1].set(8.0)
        logits = jnp.where(at_root[:, None], root_logits, pass_logits)
        alpha = tromp_taylor_from_observation(inputs.observation)
        beta = jnp.full(batch, STUB_BETA)
        return NetworkOutput(logits, jnp.tanh(0.5 * alpha), {"alpha": alpha, "beta": beta})


@pytest.mark.parametrize("mover", ["black", "white"])
def test_lambda_one_prefers_the_larger_winning_margin(go_game, mover):
    """Black to move, or the same position with the colours swapped and White to move (Black passes first) at the
    komi that gives White what −KOMI gave Black: λ's bonus is the mover's, whichever colour moves."""
    step = fast_jit(go_game.step)
    state = go_game.init(jax.random.key(0))
    if mover == "white":
        state = step(state, go_game.gtp_to_action("pass"))
    for black, white in zip(BLACK_STONES, WHITE_STONES):
        state = step(step(state, go_game.gtp_to_action(black)), go_game.gtp_to_action(white))
    komi = KOMI if mover == "black" else -KOMI
    sign = 1.0 if mover == "black" else -1.0  # area_difference is Black's
    assert bool(go_game.black_to_move(state)) == (mover == "black")
    margins = {}
    for move in (CAPTURE, DAME, "pass"):
        after = step(state, go_game.gtp_to_action(move))
        margins[move] = sign * (float(go_game.area_difference(after)) - komi)
    assert margins == {CAPTURE: 20.5, DAME: 13.5, "pass": 12.5}  # all three win; the capture by the most
    candidates = (go_game.gtp_to_action(CAPTURE), go_game.gtp_to_action(DAME))
    stub = EndgameStub(np.asarray(state.observation), candidates, go_game.num_actions)
    states = jax.tree.map(lambda leaf: jnp.stack([leaf] * 4), state)
    variables = init_variables(stub, go_game, jax.random.key(0))
    config = SearchConfig(kind="muzero", num_simulations=48, dirichlet_fraction=0.0)
    search = fast_jit(lambda key, lam: sai_search(config, go_game, stub, variables, key, states,
                                                 jnp.full(4, komi), lam))  # λ traced: one compilation
    visits = {lam: np.asarray(search(jax.random.key(1), lam).visit_counts) for lam in (0.0, 1.0)}
    capture_share = {lam: (v[:, candidates[0]] / v[:, list(candidates)].sum(-1)).mean() for lam, v in visits.items()}
    assert capture_share[1.0] > capture_share[0.0] + 0.2, capture_share
    assert capture_share[1.0] > 0.75, capture_share
