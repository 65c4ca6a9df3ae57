"""SAI's self-play: komi sampling, branching (none, exactly three at the first positions, k', the branch's own
result), the loss and the identifiability of α, β from outcomes at varied komi."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import special

from zerolab import Frames, NetworkOutput, SearchConfig, SelfPlayConfig
from sai_go.branches import half_integer_komi, sample_komi
from sai_go.selfplay import (SaiCallSettings, SaiGame, SaiSelfPlayOptions, make_sai_play_fn, record_branch_point,
                             sai_lane_rule)
from sai_go.train import sai_loss
from tests.fast_compile import fast_jit


def test_fresh_komi_is_half_integer_and_logistic_around_alpha():
    alpha, beta = 9.3, 0.4
    komi = np.asarray(sample_komi(jax.random.key(0), alpha, beta, (40_000,), 49.5))
    np.testing.assert_array_equal(komi - np.floor(komi), 0.5)
    # P(K = j + ½) = P(j <= α + logit(U)/β < j + 1), a logistic of centre α and scale 1/β.
    values, counts = np.unique(komi, return_counts=True)
    expected = special.expit(beta * (values + 0.5 - alpha)) - special.expit(beta * (values - 0.5 - alpha))
    np.testing.assert_allclose(counts / len(komi), expected, atol=0.006)
    assert abs(komi.mean() - alpha) < 0.1
    # Black's winrate at K, σ(β(α − K)), is uniform up to the rounding to half-integers: mean ½.
    assert abs(np.mean(special.expit(beta * (alpha - komi))) - 0.5) < 0.01
    np.testing.assert_array_equal(half_integer_komi(jnp.array([3.2, -0.1, 80.0, -80.0]), 49.5), [3.5, -0.5, 49.5, -49.5])


PLAY_CONFIG = SelfPlayConfig(num_games=2, plies_per_iteration=24, max_game_plies=8, temperature_plies=2)
SEARCH = SearchConfig(kind="muzero", num_simulations=2, dirichlet_alpha=0.22)


@pytest.fixture(scope="module")
def branching_play(go_game, tiny_network):
    """Self-play with branch probability 0 and 1, and at 1 with branch points from empty-board games only (key
    "paper"; probability and flag traced: one compilation)."""
    network, variables = tiny_network
    options = SaiSelfPlayOptions(lam=0.5, branch_probability=0.025, max_branches=3, queue_size=8)
    play = fast_jit(make_sai_play_fn(go_game, network, SEARCH, PLAY_CONFIG, options), static_argnums=2)
    played = {name: jax.device_get(play(variables, jax.random.key(4), 2, None, probability, None, jnp.array(flag)))
              for name, probability, flag in ((0.0, 0.0, True), (1.0, 1.0, True), ("paper", 1.0, False))}
    return {name: (packed.to_frames(), records) for name, (packed, records) in played.items()}


def test_no_branches_without_branch_probability(branching_play):
    frames, records = branching_play[0.0]
    assert not np.asarray(frames.extras["branch"]).any()
    assert float(records.summary["branches_started"][0, 0]) == 0.0
    assert float(records.summary["branches_pushed"][0, 0]) == 0.0
    # Games end at the 8-ply cap, counted at each game's own komi; fresh games draw their komi.
    over = np.asarray(records.game_over)
    assert over[7].all() and over[15].all() and over.sum() == 6


def replay_actions(game, actions):
    step = fast_jit(game.step)
    state = game.init(jax.random.key(0))
    for action in actions:
        state = step(state, int(action))
    return state


def test_branches_start_at_the_first_positions_with_the_evening_komi_and_keep_their_own_result(
        go_game, branching_play):
    frames, records = branching_play[1.0]
    over, action = np.asarray(records.game_over), np.asarray(records.action)
    komi, branch = np.asarray(frames.extras["komi"]), np.asarray(frames.extras["branch"])
    alpha, observation = np.asarray(frames.extras["alpha"]), np.asarray(frames.observation)
    # Both lanes' first games end at ply 7 (the cap); each had exactly 3 branch points, the positions after its
    # moves 1, 2 and 3 (frames 1, 2, 3).  Lane 0 takes the first pending one (lane 0's move-1 position), lane 1
    # the next (lane 0's move-2 position).
    assert over[7].all() and not over[:7].any()
    assert not branch[:8].any() and branch[8].all()
    np.testing.assert_array_equal(observation[8, 0], observation[1, 0])
    np.testing.assert_array_equal(observation[8, 1], observation[2, 0])
    black_to_move = lambda t: t % 2 == 0  # noqa: E731  (fresh games start with Black)
    for lane, source in ((0, 1), (1, 2)):
        black_alpha = alpha[source, 0] if black_to_move(source) else -alpha[source, 0]
        assert komi[8, lane] == np.floor(black_alpha) + 0.5
        assert (komi[8:][np.cumsum(over[8:, lane]) == 0, lane] == komi[8, lane]).all()  # the branch keeps k'
    # Each finished game offered 3 branch points; the queue of 8 held them all at first.
    finished = int(over.sum())
    summary = {name: float(values[0, 0]) for name, values in records.summary.items()}
    assert summary["branches_pushed"] + summary["branches_dropped"] == 3 * finished
    # The queue of 8, ply by ply: the games that ended push their 3 branch points each into the free slots (the rest
    # are dropped), then take one pending branch each; what is left pending at the end is counted apart.
    queue, expected = 0, dict.fromkeys(("branches_pushed", "branches_dropped", "branches_started"), 0)
    for ended in over.sum(axis=1):
        pushed = min(3 * ended, 8 - queue)
        taken = min(ended, queue + pushed)
        queue += pushed - taken
        for name, count in zip(expected, (pushed, 3 * ended - pushed, taken)):
            expected[name] += count
    assert {name: summary[name] for name in expected} == expected
    assert summary["branches_left_pending"] == queue
    assert expected["branches_dropped"] == 7 and expected["branches_started"] == 7  # the queue did overflow
    # The branch in lane 0 is played from lane 0's position after move 1 to its end at the cap (8 plies in all);
    # its value targets are its own result at k' (not the first game's komi).
    end = 8 + int(np.flatnonzero(over[8:, 0])[0])
    assert end == 14
    final = replay_actions(go_game, [action[0, 0], *action[8:end + 1, 0]])
    black_result = np.sign(float(go_game.area_difference(final)) - komi[8, 0])
    value = np.asarray(frames.value_target)[8:end + 1, 0]
    movers_black = np.array([black_to_move(1 + i) for i in range(end - 7)])
    np.testing.assert_array_equal(value, np.where(movers_black, black_result, -black_result))
    assert np.asarray(frames.value_mask)[8:end + 1, 0].all()
    np.testing.assert_array_equal(frames.extras["signed_komi"][8, 0], komi[8, 0])  # White moves at ply 1: +k'


def test_a_fresh_game_takes_the_fresh_komi_not_the_finished_games(go_game, tiny_network):
    """SAI's lane rule alone: lane 0's game (at komi -6.5) ends with no branch pending, so lane 0 starts a fresh
    game at the call's fresh komi (4.5 here); lane 1's game (at 12.5) goes on at its komi."""
    from zerolab.selfplay import PlayedPly, PlayVariables, PlyDecision

    network, variables = tiny_network
    options = SaiSelfPlayOptions(lam=0.5, branch_probability=0.0, max_branches=3, queue_size=8)
    lane_rule = sai_lane_rule(go_game, network, options)
    init = fast_jit(lane_rule.init, static_argnums=2)
    settings = SaiCallSettings(fresh_komi=4.5)
    lanes = init(PlayVariables(variables), jax.random.split(jax.random.key(0), 3), 2, settings)
    lanes = lanes.replace(rule_carry=lanes.rule_carry.replace(komi=jnp.array([-6.5, 12.5])))
    zeros = jnp.zeros(2, jnp.int32)
    decision = PlyDecision(action=zeros, policy_target=jnp.zeros((2, go_game.num_actions)), carry=lanes.rule_carry,
                           frame_extras={"alpha": jnp.zeros(2)})
    played = PlayedPly(decision=decision, action=zeros, next_states=lanes.states, game_over=jnp.array([True, False]),
                       reward=jnp.zeros(2))
    after, statistics = fast_jit(lane_rule.step)(jax.random.split(jax.random.key(1), 2), lanes, played, settings)
    np.testing.assert_array_equal(after.rule_carry.komi, [4.5, 12.5])
    np.testing.assert_array_equal(after.rule_carry.is_branch, [False, False])
    assert (int(statistics["fresh_started"]), float(statistics["fresh_komi_sum"])) == (1, 4.5)


def test_the_loss_uses_each_frames_signed_komi():
    alpha, beta = jnp.array([5.0, 5.0]), jnp.array([0.5, 0.5])
    output = NetworkOutput(jnp.zeros((2, 3)), jnp.zeros(2), {"alpha": alpha, "beta": beta})
    frames = Frames(observation=jnp.zeros((2, 1)), legal_action_mask=jnp.ones((2, 3), bool),
                    policy_target=jnp.full((2, 3), 1 / 3), value_target=jnp.array([1.0, -1.0]),
                    value_mask=jnp.array([True, True]), extras={"signed_komi": jnp.array([-7.5, 3.0])})
    loss, metrics = sai_loss(output, frames)
    predicted = np.tanh(0.5 * 0.5 * (5.0 + np.array([-7.5, 3.0])))
    np.testing.assert_allclose(metrics["value_loss"], np.mean((np.array([1.0, -1.0]) - predicted) ** 2), rtol=1e-6)
    np.testing.assert_allclose(metrics["policy_loss"], np.log(3.0), rtol=1e-6)
    with pytest.raises(ValueError, match="signed_komi"):
        sai_loss(output, frames.replace(extras={}))


def test_the_papers_value_loss_is_the_squared_error_of_the_winrate_and_tanh_is_four_times_it():
    """β(α + k̄) = ln 3 gives ρ = σ(ln 3) = 3/4 and tanh(ln 3 / 2) = 2ρ − 1 = 1/2; β(α + k̄) = 0 gives ρ = 1/2.  Paper,
    ((1 + z)/2 − ρ)²: a win at ρ 3/4 → 1/16, a win at ½ → 1/4, a loss at 3/4 → 9/16, a tie (z = 0) at 3/4 → 1/16;
    mean 15/64.  The unfinished fifth frame (ρ ≈ 0, z = +1) is left out.  tanh, (z − (2ρ − 1))²: 4× each."""
    log3 = np.log(3.0)
    alpha = jnp.array([5.0, 2.0, 5.0, 5.0, -40.0])
    beta = jnp.array([log3 / 2, 0.3, log3 / 2, log3 / 2, 1.0])
    komi = jnp.array([-3.0, -2.0, -3.0, -3.0, 0.0])
    output = NetworkOutput(jnp.zeros((5, 3)), jnp.zeros(5), {"alpha": alpha, "beta": beta})
    frames = Frames(observation=jnp.zeros((5, 1)), legal_action_mask=jnp.ones((5, 3), bool),
                    policy_target=jnp.full((5, 3), 1 / 3), value_target=jnp.array([1.0, 1.0, -1.0, 0.0, 1.0]),
                    value_mask=jnp.array([True, True, True, True, False]), extras={"signed_komi": komi})
    paper_loss, paper = sai_loss(output, frames, value_loss="paper")
    tanh_loss, tanh = sai_loss(output, frames, value_loss="tanh")
    assert float(paper["value_loss"]) == pytest.approx((1 / 16 + 1 / 4 + 9 / 16 + 1 / 16) / 4, abs=1e-6)
    assert float(tanh["value_loss"]) == pytest.approx((1 / 4 + 1 + 9 / 4 + 1 / 4) / 4, abs=1e-6)
    assert float(paper_loss) == pytest.approx(np.log(3.0) + 15 / 64, abs=1e-6)
    assert float(tanh_loss) == pytest.approx(np.log(3.0) + 15 / 16, abs=1e-6)
    assert float(sai_loss(output, frames)[1]["value_loss"]) == float(tanh["value_loss"])  # the default: tanh
    with pytest.raises(ValueError, match="value_loss must be one of"):
        sai_loss(output, frames, value_loss="mse")


def test_without_branch_from_branches_only_games_from_the_empty_board_give_branch_points():
    """Two lanes, probability 1: lane 0 plays a fresh game, lane 1 a branch.  Both record a branch point by default;
    with ``branch_from_branches=False`` (the paper's procedure) only the fresh game does.  (The rule keeps any pytree
    of states: a stand-in for pgx's.)"""
    states = {"board": jnp.array([[1.0, 2.0], [3.0, 4.0]])}
    game = SaiGame(komi=jnp.array([7.5, 3.5]), is_branch=jnp.array([False, True]),
                   candidate_states=jax.tree.map(lambda leaf: jnp.repeat(leaf[:, None], 3, axis=1), states),
                   candidate_komi=jnp.zeros((2, 3)), candidates=jnp.zeros(2, jnp.int32))
    recorded = {flag: record_branch_point(jax.random.key(1), 1.0, game, states, jnp.array([2.2, -4.7]),
                                          jnp.array([5, 5]), 3, 49.5, branch_from_branches=flag)
                for flag in (True, False)}
    np.testing.assert_array_equal(recorded[True].candidates, [1, 1])
    np.testing.assert_array_equal(recorded[True].candidate_komi[:, 0], [2.5, -4.5])
    np.testing.assert_array_equal(recorded[False].candidates, [1, 0])
    np.testing.assert_array_equal(recorded[False].candidate_states["board"][0, 0], [1.0, 2.0])  # lane 0's position
    assert SaiSelfPlayOptions().branch_from_branches  # the default: branches branch too (tiny's self-play as before)


def finished_games(frames, records) -> tuple[int, int]:
    """(fresh games, branch games) that ended in a call, read from its frames and records."""
    over, branch = np.asarray(records.game_over), np.asarray(frames.extras["branch"])
    return int((over & ~branch).sum()), int((over & branch).sum())


def test_fresh_and_branch_games_of_a_call_follow_the_papers_proportion(branching_play):
    """Over one call (2 lanes × 24 plies, 8-ply cap, every position after a game's first move a branch point, 3 a
    game at most): with ``branch_from_branches=False`` each finished fresh game hands in exactly its 3 branch points
    and branch games none, so the call plays the 2 first (fresh) games and then their 6 branches, no other fresh
    game (the paper: a standard game, then its branches); with branches branching, branch games hand in 3 each and the
    queue of 8 overflows.  The per-call counts agree with the frames'."""
    summaries = {}
    for name, (frames, records) in (("paper", branching_play["paper"]), ("branching", branching_play[1.0])):
        summary = {key: float(values[0, 0]) for key, values in records.summary.items()}
        fresh, branches = finished_games(frames, records)
        assert (summary["fresh_games_finished"], summary["branch_games_finished"]) == (fresh, branches)
        assert fresh + branches == int(np.asarray(records.game_over).sum())
        summaries[name] = summary
    paper = summaries["paper"]
    assert paper["fresh_games_finished"] == 2 and paper["fresh_games_started"] == 2
    assert paper["branches_pushed"] + paper["branches_dropped"] == 3 * paper["fresh_games_finished"] == 6
    assert paper["branches_started"] == 6 and paper["branches_left_pending"] == 0
    assert paper["branch_games_finished"] >= 3  # the rest are cut by the call's end
    branching = summaries["branching"]
    finished = branching["fresh_games_finished"] + branching["branch_games_finished"]
    assert branching["branches_pushed"] + branching["branches_dropped"] == 3 * finished > 6
    assert branching["branches_dropped"] > 0


def test_the_loss_averages_the_value_error_over_finished_games_and_the_policy_over_legal_moves():
    """The paper's loss in numpy: cross entropy of the search's policy against the network's softmax over the legal
    moves (an illegal move holds the highest logit), averaged over every frame, plus the squared error of
    ``2ρ_s(0) − 1 = 2σ(β(α + k̄)) − 1`` against the outcome averaged over the frames whose game finished only (the
    middle frame's game did not, and its error is the largest)."""
    logits = np.array([[2.0, 0.5, 9.0, -1.0], [0.0, 3.0, 1.0, 8.0], [1.0, -1.0, 0.5, 2.0]], np.float32)
    legal = np.array([[1, 1, 0, 1], [1, 1, 1, 0], [1, 1, 1, 1]], bool)
    policy = np.array([[0.5, 0.25, 0.0, 0.25], [0.2, 0.3, 0.5, 0.0], [0.1, 0.2, 0.3, 0.4]], np.float32)
    alpha, beta, komi = np.array([3.0, 6.0, 0.5]), np.array([0.4, 1.5, 0.2]), np.array([-7.5, 3.5, 0.5])
    outcome, finished = np.array([1.0, -1.0, 1.0]), np.array([True, False, True])
    output = NetworkOutput(jnp.asarray(logits), jnp.zeros(3), {"alpha": jnp.asarray(alpha, jnp.float32),
                                                               "beta": jnp.asarray(beta, jnp.float32)})
    frames = Frames(observation=jnp.zeros((3, 1)), legal_action_mask=jnp.asarray(legal),
                    policy_target=jnp.asarray(policy, jnp.float16), value_target=jnp.asarray(outcome, jnp.float32),
                    value_mask=jnp.asarray(finished), extras={"signed_komi": jnp.asarray(komi, jnp.float32)})
    loss, metrics = sai_loss(output, frames)

    legal_logits = np.where(legal, logits.astype(np.float64), -np.inf)
    log_softmax = legal_logits - special.logsumexp(legal_logits, axis=-1, keepdims=True)
    stored = policy.astype(np.float16).astype(np.float64)  # the targets as the window stores them
    policy_loss = -(stored * np.where(legal, log_softmax, 0.0)).sum(-1).mean()
    predicted = 2 * special.expit(beta * (alpha + komi)) - 1
    value_loss = ((outcome - predicted) ** 2)[finished].mean()
    assert ((outcome - predicted) ** 2).argmax() == 1  # the unfinished game's error would change the mean
    np.testing.assert_allclose(metrics["policy_loss"], policy_loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["value_loss"], value_loss, rtol=1e-5)
    np.testing.assert_allclose(loss, policy_loss + value_loss, rtol=1e-5)


def test_alpha_and_beta_are_recovered_from_outcomes_at_varied_komi():
    """Outcomes of one position simulated at komi from −15 to +15 with true α₀ = 4, β₀ = 0.4: minimising the
    loss over (α, β* with β = c·exp(β*)) recovers them."""
    true_alpha, true_beta, count = 4.0, 0.4, 20_000
    keys = jax.random.split(jax.random.key(0), 2)
    komi_for_mover = jax.random.uniform(keys[0], (count,), minval=-15.0, maxval=15.0)
    wins = jax.random.bernoulli(keys[1], special.expit(true_beta * (true_alpha + np.asarray(komi_for_mover))))
    frames = Frames(observation=jnp.zeros((count, 1)), legal_action_mask=jnp.ones((count, 2), bool),
                    policy_target=jnp.full((count, 2), 0.5), value_target=jnp.where(wins, 1.0, -1.0),
                    value_mask=jnp.ones(count, bool), extras={"signed_komi": komi_for_mover})
    scale = 10.0 / 49

    def loss(params):
        output = NetworkOutput(jnp.zeros((count, 2)), jnp.zeros(count),
                               {"alpha": jnp.full(count, params[0]), "beta": jnp.full(count, scale * jnp.exp(params[1]))})
        return sai_loss(output, frames)[0]

    optimizer = optax.adam(0.05)

    def update(carry, _):
        params, state = carry
        grads = jax.grad(loss)(params)
        updates, state = optimizer.update(grads, state)
        return (optax.apply_updates(params, updates), state), None

    params = jnp.zeros(2)
    (params, _), _ = fast_jit(lambda p: jax.lax.scan(update, (p, optimizer.init(p)), None, length=1500))(params)
    assert abs(float(params[0]) - true_alpha) < 0.3
    assert abs(scale * float(np.exp(params[1])) / true_beta - 1) < 0.15


def test_a_pass_that_leaves_the_mover_behind_by_the_board_count_is_not_played(go_game):
    """``no_losing_pass`` (Leela Zero's engine without --dumbpass), then ``no_early_pass``.  Lanes: Black to move on the empty board at komi
    9.5 (Black behind by 9.5: no pass), at −9.5 (ahead: the pass stays), at 9.5 with every visit on the pass (the
    prior's best other move takes weight 1); White to move after Black's first stone (Black's area is the whole
    board, 49) at komi 9.5 (White behind: no pass) and at 60 (White ahead by 11: the pass stays)."""
    from sai_go.pass_rules import avoid_losing_pass

    # one batch of 5 (the game's shared compiled rules): lanes 3 and 4 play Black's stone at the centre (24)
    started = go_game.batched_init(jax.random.split(jax.random.key(0), 5))
    stepped = go_game.batched_step(started, jnp.full(5, 24, jnp.int32))
    states = jax.tree.map(lambda a, b: jnp.where(
        (jnp.arange(5) >= 3).reshape((-1,) + (1,) * (a.ndim - 1)), b, a), started, stepped)
    komi = jnp.array([9.5, -9.5, 9.5, 9.5, 60.0])
    pass_action = go_game.pass_action
    visits = np.zeros((5, go_game.num_actions), np.float32)
    visits[:, pass_action] = 10.0
    visits[[0, 1, 3, 4], 5] = visits[[0, 1, 3, 4], 7] = 3.0
    visits[2, pass_action] = 16.0
    prior = np.zeros((5, go_game.num_actions), np.float32)
    prior[:, 7] = 1.0  # breaks the tie between 5 and 7, and picks 7 where nothing else was visited
    action, weights = avoid_losing_pass(go_game, states, komi, jnp.asarray(visits), jnp.asarray(prior),
                                        jnp.full(5, pass_action, jnp.int32))
    np.testing.assert_array_equal(action, [7, pass_action, 7, 7, pass_action])
    weights = np.asarray(weights)
    np.testing.assert_array_equal(weights[[1, 4]], visits[[1, 4]])  # the pass kept where it does not lose
    assert (weights[[0, 2, 3], pass_action] == 0).all()
    np.testing.assert_array_equal(weights[2], np.eye(go_game.num_actions)[7])
    assert weights[0, 5] == weights[0, 7] == 3.0
    # no_early_pass: no pass at all while a move that fills no own eye is legal, whatever the count.
    early, early_weights = avoid_losing_pass(go_game, states, komi, jnp.asarray(visits), jnp.asarray(prior),
                                             jnp.full(5, pass_action, jnp.int32), only_when_behind=False)
    np.testing.assert_array_equal(early, [7] * 5)
    assert (np.asarray(early_weights)[:, pass_action] == 0).all()
    # A move that is not a pass is kept whatever the count.
    kept, _ = avoid_losing_pass(go_game, states, komi, jnp.asarray(visits), jnp.asarray(prior),
                                jnp.full(5, 5, jnp.int32))
    np.testing.assert_array_equal(kept, [5] * 5)
    with pytest.raises(ValueError, match="pass_rule must be one of"):
        SaiSelfPlayOptions(pass_rule="never")


def board_states(go_game, boards):
    """A batch of 7×7 positions, Black to move, with ``boards`` ``[B, 49]`` (+1 Black, −1 White, 0 empty) and legal
    moves: the empty points and the pass (every empty point here is a legal move for Black)."""
    boards = jnp.asarray(boards, jnp.int32)
    states = go_game.batched_init(jax.random.split(jax.random.key(0), len(boards)))
    legal = jnp.concatenate([boards == 0, jnp.ones((len(boards), 1), bool)], axis=1)
    return states.replace(_x=states._x._replace(board=boards), legal_action_mask=legal)


def test_no_early_pass_keeps_a_pass_when_every_other_move_fills_an_own_eye(go_game):
    """Black's stones fill the board but for two eyes (points 0 and 24): every legal move other than the pass fills one
    of Black's own eyes, so even ``no_early_pass`` (``only_when_behind=False``) keeps the pass.  The same board with a
    White stone at 47 and point 48 empty (next to White: no eye): the pass gives way to 48, not to the more visited
    eye at 0."""
    from sai_go.pass_rules import avoid_losing_pass

    eyes_only = np.ones(49, np.int32)
    eyes_only[[0, 24]] = 0
    with_capture = eyes_only.copy()
    with_capture[47], with_capture[48] = -1, 0
    states = board_states(go_game, [eyes_only, with_capture])
    pass_action = go_game.pass_action
    visits = np.zeros((2, go_game.num_actions), np.float32)
    visits[:, pass_action], visits[:, 0], visits[1, 48] = 10.0, 3.0, 1.0
    action, weights = avoid_losing_pass(go_game, states, jnp.array([9.5, 9.5]), jnp.asarray(visits),
                                        jnp.zeros((2, go_game.num_actions)), jnp.full(2, pass_action, jnp.int32),
                                        only_when_behind=False)
    np.testing.assert_array_equal(action, [pass_action, 48])
    np.testing.assert_array_equal(np.asarray(weights)[0], visits[0])  # untouched where the pass stays


def test_each_pass_rule_reaches_the_move_rule(go_game, tiny_network, monkeypatch):
    """``sai_move_rule`` on a lane whose search passes on the empty board, Black ahead (komi −9.5): ``free`` and
    ``no_losing_pass`` play the pass, ``no_early_pass`` a board move (the search is scripted: no compile)."""
    import types

    from sai_go import selfplay as sai_selfplay

    network, variables = tiny_network
    states = go_game.batched_init(jax.random.split(jax.random.key(0), 1))
    pass_action = go_game.pass_action
    visits = jnp.zeros((1, go_game.num_actions)).at[0, pass_action].set(4.0).at[0, 10].set(1.0)

    def scripted_search(config, game, network, variables, key, states, komi, lam):
        return types.SimpleNamespace(
            action=jnp.full(1, pass_action, jnp.int32), visit_counts=visits,
            root_prior_logits=jnp.zeros((1, go_game.num_actions)), policy_target=visits / 5.0,
            black_to_move=jnp.ones(1, bool), alpha=jnp.zeros(1), beta=jnp.ones(1), score_estimate=jnp.zeros(1))

    monkeypatch.setattr(sai_selfplay, "sai_search", scripted_search)
    carry = SaiGame(komi=jnp.array([-9.5]), is_branch=jnp.zeros(1, bool), candidate_states=None,
                    candidate_komi=None, candidates=None)
    played = {}
    for rule in ("free", "no_losing_pass", "no_early_pass"):
        act = sai_selfplay.sai_move_rule(go_game, network, SearchConfig(), lam=0.0, pass_rule=rule).act
        decision = act(types.SimpleNamespace(learner=variables), jax.random.key(1), states, jnp.zeros(1), carry)
        played[rule] = int(decision.action[0])
    assert played == {"free": pass_action, "no_losing_pass": pass_action, "no_early_pass": 10}


def test_own_eyes_are_empty_points_surrounded_by_the_movers_stones():
    """3×3 (rows from the top): Black stones on the four edge midpoints, a White stone in the bottom-left corner: the
    centre and the three empty corners are Black's eyes (edges count as Black's); none is White's."""
    from sai_go.pass_rules import own_eye_points

    colours = jnp.array([[0, 1, 0,
                          1, 0, 1,
                          -1, 1, 0]])
    np.testing.assert_array_equal(own_eye_points(colours, jnp.array([True]), 3),
                                  [[True, False, True, False, True, False, False, False, True]])
    assert not own_eye_points(colours, jnp.array([False]), 3).any()


def test_sais_games_branch_points_and_queue_are_carried_from_call_to_call(go_game, tiny_network):
    """SAI on the core's carried calls: 2 lanes, calls of 6 plies, games capped at 8, every position after a game's
    first move a branch point (3 a game, a queue of 16).  Call 1 ends with both games running, each holding its 3
    branch points in the move rule's carry; call 2 ends them at its second ply (8 plies: longer than a call), so
    their 6 branch points join the queue, 2 are taken at once (branch games from those very points) and 4 stay
    pending at the call's end; call 3 goes on from that queue: every branch pushed in calls 2 and 3 is started or
    still pending (none lost between the calls).  Carried games are not counted again as fresh games started."""
    from sai_go.selfplay import sai_game_rule, sai_move_rule
    from zerolab import make_play_fn

    network, variables = tiny_network
    options = SaiSelfPlayOptions(lam=0.5, branch_probability=1.0, max_branches=3, queue_size=16)
    config = SelfPlayConfig(num_games=2, plies_per_iteration=6, max_game_plies=8, temperature_plies=2)
    core = make_play_fn(go_game, sai_move_rule(go_game, network, SEARCH, options.lam), config,
                        lane_rule=sai_lane_rule(go_game, network, options), game_rule=sai_game_rule(go_game))
    init, play = fast_jit(core.init_lanes, static_argnums=2), fast_jit(core.play_lanes, static_argnums=2)
    lanes = init(variables, jax.random.key(5), 2)
    calls = []
    for call in range(3):
        frames, records, lanes = jax.device_get(play(variables, jax.random.key(6 + call), 2, None, None, lanes))
        calls.append((records, lanes))
    (records1, lanes1), (records2, lanes2), (records3, lanes3) = calls
    total = lambda records, name: float(records.summary[name][0, 0])  # noqa: E731 - per-call totals
    # Call 1: both games run on, each with its 3 branch points; nothing queued; the 2 games init began counted.
    assert not records1.game_over.any() and np.asarray(lanes1.ply).tolist() == [6, 6]
    assert np.asarray(lanes1.rule_carry.candidates).tolist() == [3, 3]
    assert not lanes1.shared.queue.valid.any() and total(records1, "fresh_games_started") == 2
    # Call 2: the carried games end at its ply 1, 8 plies long; their branch points are queued and 2 taken.
    assert records2.game_over[1].all() and not records2.game_over[0].any()
    np.testing.assert_array_equal(records2.game_length[1], [8, 8])
    assert (total(records2, "branches_pushed"), total(records2, "fresh_games_started")) == (6, 0)
    branch_komi = set(np.asarray(lanes1.rule_carry.candidate_komi).ravel().tolist())
    # the games begun at call 2's ply 2 are branches from call 1's branch points (at their komi), still running
    assert total(records2, "branches_started") == 2 and np.asarray(lanes2.rule_carry.is_branch).all()
    assert set(np.asarray(lanes2.rule_carry.komi).tolist()) <= branch_komi
    assert set(np.asarray(lanes2.first_ply).tolist()) <= {1, 2, 3}
    # the other 4 stay queued at the call's end, carried with the lanes
    valid = np.asarray(lanes2.shared.queue.valid)
    assert total(records2, "branches_left_pending") == valid.sum() == 4
    assert set(np.asarray(lanes2.shared.queue.komi)[valid].tolist()) <= branch_komi
    # Call 3 continues the queue: pushed = started + pending at the end, over calls 2 and 3 (no branch dropped).
    pushed = total(records2, "branches_pushed") + total(records3, "branches_pushed")
    begun = total(records2, "branches_started") + total(records3, "branches_started")
    assert total(records2, "branches_dropped") == total(records3, "branches_dropped") == 0
    assert pushed == begun + int(np.asarray(lanes3.shared.queue.valid).sum())
    assert total(records3, "branches_started") > 0
