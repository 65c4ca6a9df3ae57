"""The core's hooks: each default reproduces the loop it replaced bit for bit, and a small method package under
``tests/zerolab/method_package`` uses every hook through a real training run that is killed and resumed."""

from __future__ import annotations

import json
import logging
import pathlib

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zerolab.selfplay import scan as selfplay_lib
from zerolab.training.replay_checkpoints import read_window
from experiments.configs import load_config
from zerolab.games import make_game
from zerolab.training.method import ALPHAZERO, alphazero_loss
from zerolab.networks.network import AlphaZeroResNet, NetworkInputs, NetworkOutput, apply_network, init_variables
from zerolab.training import train
from zerolab.training.runs import Components
from zerolab.search.config import SearchConfig, SearchRules
from zerolab.search.mcts import run_search
from zerolab.selfplay.frames import Frames
from zerolab.selfplay.hooks import choose_actions, move_temperature, value_targets
from zerolab.selfplay.types import SelfPlayConfig
from tests.fast_compile import fast_jit
from tests.zerolab.method_package.method import START_FENS

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = "tests.zerolab.method_package"


@pytest.fixture(scope="module")
def gardner():
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    return game, network, init_variables(network, game, jax.random.key(0))


def reference_selfplay(game, network, search_config, config, variables, key, num_games):
    """Self-play as the core played it before its parts became hooks (one jitted scan): the same key splits, one
    search, visit sampling for the first plies, pgx steps, fresh games, value targets by the reverse scan."""
    init = jax.vmap(game.init)

    def one_ply(variables, carry):
        states, ply, key = carry
        key, search_key, sample_key, reset_key = jax.random.split(key, 4)
        searched = run_search(search_config, game, network, variables, search_key, states)
        action = choose_actions(sample_key, searched.visit_counts, searched.action, ply, config)
        mover = states.current_player
        following = jax.vmap(game.step)(states, action)
        ply = ply + 1
        over = following.terminated | (ply >= config.max_game_plies)
        reward = following.rewards[jnp.arange(num_games), mover]
        fresh = init(jax.random.split(reset_key, num_games))
        following = jax.tree.map(lambda new, old: jnp.where(over.reshape((-1,) + (1,) * (old.ndim - 1)), new, old),
                                 fresh, following)
        outputs = (states.observation, searched.policy_target, action, reward, over)
        return (following, jnp.where(over, 0, ply), key), outputs

    @jax.jit
    def play(variables, key):
        key, init_key = jax.random.split(key)
        carry = (init(jax.random.split(init_key, num_games)), jnp.zeros(num_games, jnp.int32), key)
        _, (observation, policy, action, reward, over) = jax.lax.scan(
            lambda carry, _: one_ply(variables, carry), carry, None, length=config.plies_per_iteration)
        return (observation, policy, action, *value_targets(reward, over))

    return play(variables, key)


@pytest.mark.slow  # 32 s of CPU with a cold compilation cache (two self-play scans)
def test_default_selfplay_parts_reproduce_the_previous_loop_bit_for_bit(gardner):
    """Sampled plies (the first 3 of each game), search plies, game ends at the cap and fresh games all occur."""
    game, network, variables = gardner
    search_config = SearchConfig(num_simulations=4, max_num_considered_actions=4)
    config = SelfPlayConfig(num_games=3, plies_per_iteration=7, max_game_plies=4, temperature_plies=3)
    packed, records = jax.jit(
        lambda v, k: selfplay_lib.play(game, network, search_config, config, v, k, 3)
    )(variables, jax.random.key(11))
    frames = packed.to_frames()
    observation, policy, action, value, known = reference_selfplay(
        game, network, search_config, config, variables, jax.random.key(11), 3)
    # frames are stored as the replay window stores them and decode to float16 planes and policies
    np.testing.assert_array_equal(frames.observation, np.asarray(observation).astype(np.float16))
    np.testing.assert_array_equal(frames.policy_target, np.asarray(policy).astype(np.float16))
    assert frames.observation.dtype == frames.policy_target.dtype == np.float16
    np.testing.assert_array_equal(records.action, action)
    np.testing.assert_array_equal(frames.value_target, value)
    np.testing.assert_array_equal(frames.value_mask, known)
    assert frames.extras == {} and records.summary == {} and not packed.inexact.any()


def test_a_config_without_the_new_keys_builds_the_alphazero_defaults():
    """Configs saved by runs written before the hooks existed load with the default of every hook."""
    config = load_config("quickstart", "tiny", ["model.name=resnet", "model.channels=8", "model.num_blocks=1"])
    old = config.to_dict()
    for key in ("method", "method_options"):
        old.pop(key)
    for key in ("rules", "rule_options"):
        old["search"].pop(key)
    for key in [k for k in old["selfplay"] if k.startswith("temperature_") and k != "temperature_plies"]:
        old["selfplay"].pop(key)
    import ml_collections

    components = Components.from_config(ml_collections.ConfigDict(old))
    assert components.method is ALPHAZERO and components.rules is None
    assert components.selfplay.temperature_schedule == "plies"
    assert components.search == SearchConfig.from_config(config.search)


def test_self_play_pgn_is_written_only_for_games_from_the_start_position(gardner):
    """A method's lane rule decides: the standard one from the start position (with or without a move-rule carry)
    keeps the PGN; games from other positions (the test method's FENs) or a method's own game rule drop it."""
    import types

    from zerolab.selfplay import GameRule, initial_states_from_fens, standard_lane_rule
    from zerolab.training.method import Method

    components = types.SimpleNamespace(game=gardner[0])
    zeros = lambda key, num_games: jnp.zeros(num_games, jnp.int32)  # noqa: E731
    with_carry = Method(lane_rule=lambda components: standard_lane_rule(components.game, init_carry=zeros))
    from_fens = Method(lane_rule=lambda components: standard_lane_rule(
        components.game, initial_states_from_fens(components.game, START_FENS), init_carry=zeros))
    scored = Method(game_rule=lambda components: GameRule())
    assert ALPHAZERO.games_from_start_position(components) and with_carry.games_from_start_position(components)
    assert not from_fens.games_from_start_position(components) and not scored.games_from_start_position(components)


def test_components_are_built_once_and_the_standard_selfplay_plays_their_rules(monkeypatch):
    """A run's rules and optimiser are built once from its config (the same objects wherever they are asked for),
    and the standard self-play is built with the components' rules, not rules built again from the search config."""
    from zerolab.training import train as train_lib
    from zerolab.training.train_state import TrainConfig, make_optimizer

    config = load_config("quickstart", "tiny", ["model.name=resnet", "model.channels=8", "model.num_blocks=1",
                                                f"search.rules={PACKAGE}.rules:counting_rules"])
    components = Components.from_config(config)
    assert components.rules is not None and components.rules is components.search.make_rules()
    assert components.optimizer is make_optimizer(TrainConfig.from_config(config.train))
    assert (components.train.batch_size, components.replay.window_size) == (config.train.batch_size,
                                                                             config.replay.window_size)
    built = {}
    monkeypatch.setattr(train_lib, "make_selfplay_fn", lambda *arguments, rules=None, **options: built.update(
        arguments=arguments, rules=rules))
    train_lib.standard_selfplay_fn.cache_clear()
    train_lib.make_run_selfplay_fn(components, mesh=None)
    train_lib.standard_selfplay_fn.cache_clear()
    assert built["rules"] is components.rules and built["arguments"][2] == components.search


def test_alphazero_loss_is_policy_cross_entropy_plus_masked_value_error():
    logits = jnp.array([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]])
    legal = jnp.array([[True, True, False], [True, True, True]])
    frames = Frames(observation=jnp.zeros((2, 1)), legal_action_mask=legal,
                    policy_target=jnp.array([[0.25, 0.75, 0.0], [0.0, 0.0, 1.0]]),
                    value_target=jnp.array([1.0, -1.0]), value_mask=jnp.array([True, False]))
    loss, metrics = alphazero_loss(NetworkOutput(logits, jnp.array([0.5, 0.9])), frames)
    log_p0 = np.log(np.exp([2.0, 0.0]) / np.exp([2.0, 0.0]).sum())
    log_p1 = np.log(np.exp(3.0) / np.exp([0.5, 0.5, 3.0]).sum())
    expected_policy = (-(0.25 * log_p0[0] + 0.75 * log_p0[1]) - log_p1) / 2
    np.testing.assert_allclose(metrics["policy_loss"], expected_policy, rtol=1e-6)
    np.testing.assert_allclose(metrics["value_loss"], 0.25, rtol=1e-6)  # only the first frame's outcome is known
    np.testing.assert_allclose(loss, expected_policy + 0.25, rtol=1e-6)


def test_the_moves_temperature_schedule():
    config = SelfPlayConfig(temperature_schedule="moves", temperature=1.0, temperature_delay_moves=2,
                            temperature_decay_moves=4, temperature_end=0.2, temperature_cutoff_moves=5)
    plies = jnp.arange(0, 14)
    expected = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.8, 0.8, 0.6, 0.6, 0.2, 0.2, 0.2, 0.2]  # cutoff at move 5 = ply 10
    np.testing.assert_allclose(move_temperature(plies, config), expected, rtol=1e-6)
    greedy = SelfPlayConfig(temperature_schedule="moves", temperature=1.0, temperature_delay_moves=1)
    np.testing.assert_allclose(move_temperature(jnp.arange(4), greedy), [1.0, 1.0, 0.0, 0.0])
    # Where τ = 0 the search's choice is played; where τ = 1 moves are drawn in proportion to the visits.
    visits = jnp.tile(jnp.array([[1.0, 3.0, 0.0]]), (4000, 1))
    search_action = jnp.full(4000, 2, jnp.int32)
    drawn = choose_actions(jax.random.key(0), visits, search_action, jnp.zeros(4000, jnp.int32), greedy)
    assert set(np.unique(drawn)) == {0, 1}
    assert abs(float(jnp.mean(drawn == 1)) - 0.75) < 0.03
    late = choose_actions(jax.random.key(0), visits, search_action, jnp.full(4000, 2, jnp.int32), greedy)
    assert (late == 2).all()
    with pytest.raises(ValueError, match="temperature_schedule"):
        SelfPlayConfig(temperature_schedule="lc0")


def test_search_rules_are_chosen_from_the_config(gardner):
    game, network, variables = gardner
    config = SearchConfig(num_simulations=5, max_num_considered_actions=4,
                          rules=f"{PACKAGE}.rules:counting_rules", rule_options={"root_weight": 2.0})
    assert config.rule_options == (("root_weight", 2.0),) and hash(config)
    states = game.batched_init(jax.random.split(jax.random.key(0), 2))
    # at XLA's faster settings (tests/fast_compile.py): the check is a count
    output = fast_jit(lambda v, k, s: run_search(config, game, network, v, k, s))(variables, jax.random.key(1), states)
    np.testing.assert_array_equal(output.summary["root_passes"], [10.0, 10.0])  # 2 × 5 simulations through the root
    with pytest.raises(ValueError, match="search.rules='nowhere.rules:x': cannot import nowhere.rules"):
        SearchConfig(rules="nowhere.rules:x").make_rules()
    with pytest.raises(ValueError, match="must name a callable as 'package.module:name'"):
        SearchConfig(rules="counting_rules").make_rules()
    with pytest.raises(ValueError, match="rule_options .* without search.rules"):
        SearchConfig(rule_options={"sc_limit": 3})


def test_a_summary_alone_keeps_the_standard_search(gardner):
    game, network, variables = gardner
    config = SearchConfig(num_simulations=6, max_num_considered_actions=4)
    rules = SearchRules(summary_fn=lambda tree: {"root_visits": tree.node_visits[:, 0].astype(jnp.float32)})
    states = game.batched_init(jax.random.split(jax.random.key(0), 2))
    search = jax.jit(lambda v, k, s, rules=None: run_search(config, game, network, v, k, s, rules=rules),
                     static_argnames="rules")
    plain = search(variables, jax.random.key(2), states)
    summarised = search(variables, jax.random.key(2), states, rules=rules)
    np.testing.assert_array_equal(plain.policy_target, summarised.policy_target)
    np.testing.assert_array_equal(summarised.summary["root_visits"], [7.0, 7.0])  # the root's own visit + 6


class WrongValueShape(nn.Module):
    @nn.compact
    def __call__(self, inputs, train=False):
        logits = nn.Dense(inputs.legal_action_mask.shape[-1])(inputs.observation.reshape(inputs.observation.shape[0], -1))
        return NetworkOutput(logits, logits[:, :1])


def test_network_outputs_are_checked_at_the_seam(gardner):
    game, _, _ = gardner
    inputs = NetworkInputs.from_states(game.batched_init(jax.random.split(jax.random.key(0), 2)))
    network = WrongValueShape()
    variables = network.init(jax.random.key(0), inputs)
    with pytest.raises(ValueError, match=r"network output value has shape \(2, 1\), expected \(2,\)"):
        apply_network(network, variables, inputs)


# --- the method package, through a real run -------------------------------------------------------------------------

METHOD_RUN = [
    f"model.name={PACKAGE}.network:make_network", "model.channels=8", "model.num_blocks=1",
    "search.num_simulations=4", "search.max_num_considered_actions=4", f"search.rules={PACKAGE}.rules:counting_rules",
    f"method={PACKAGE}.method:make_method", "selfplay.num_games=4", "selfplay.plies_per_iteration=8",
    "selfplay.max_game_plies=6", "train.batch_size=16", "progress=False",
]


def method_config(*overrides):
    return load_config("quickstart", "tiny", METHOD_RUN + list(overrides))


def logged_iterations(workdir):
    path = pathlib.Path(workdir) / "metrics.jsonl"
    return [json.loads(line)["iteration"] for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def method_run(tmp_path_factory):
    """The test method trained for one iteration, then the same run asked for two: it resumes from the first
    iteration's checkpoint, as a run killed after an iteration does (tests/zerolab/test_train.py kills one).  Both in
    this process, so the second reuses the first's compiled programs."""
    workdir = tmp_path_factory.mktemp("method") / "run"
    train.run(method_config("iterations=1"), workdir)
    first = (workdir / "metrics.jsonl").read_text()
    messages = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: messages.append(record.getMessage())
    logger = logging.getLogger("zerolab.training")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        train.run(method_config("iterations=2"), workdir)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return workdir, first, messages


@pytest.mark.slow
def test_the_method_package_trains_through_every_hook_and_resumes(method_run):
    workdir, first, messages = method_run
    assert any(message.startswith("resuming") and "at iteration 1" in message for message in messages), messages
    assert (workdir / "metrics.jsonl").read_text().startswith(first)  # iteration 1 kept, not trained again
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [record["iteration"] for record in records] == [1, 2]
    for record in records:
        assert record["root_passes"] == 4.0  # the rules' summary: every simulation passes the root
        assert np.isfinite(record["ply_loss"]) and record["loss"] > record["ply_loss"]  # the method's loss

    # The replay window restored from the last checkpoint still has the per-frame extras, and they are right.
    step, stored = read_window(workdir)
    assert step == 2
    window = stored.fields()
    ply, partner_moves = np.asarray(window["extra_ply"]), np.asarray(window["extra_partner_moves"])
    # the frames of iteration 1 survived the restart: 6-ply games in calls of 8, so each iteration 24 frames enter
    # (iteration 1: the first games; iteration 2: the second games, whose first 2 frames waited since iteration 1)
    assert len(ply) == len(window["value_target"]) == 2 * 24
    assert np.asarray(window["value_mask"]).all()
    np.testing.assert_array_equal(partner_moves, ply // 2)  # the rule's per-game carry, reset with each game

    game = make_game("gardner_chess")
    starts = np.stack([np.asarray(game.from_fen(fen).observation) for fen in START_FENS])
    observations, legal = np.asarray(window["observation"]), np.asarray(window["legal_action_mask"])
    for index in np.flatnonzero(ply == 0):  # games start from the method's FENs, not pgx's start position only
        assert (np.abs(starts - observations[index]) < 1e-3).all(axis=(1, 2, 3)).any()
    first_positions = observations[ply == 0]
    assert not (np.abs(first_positions - starts[0]) < 1e-3).all(axis=(1, 2, 3)).all(), "both FENs are drawn"
    # Odd plies are the frozen partner's: its policy target peaks on the lowest legal action id.
    policy = np.asarray(window["policy_target"], np.float32)
    for index in np.flatnonzero(ply % 2 == 1):
        assert policy[index].argmax() == np.flatnonzero(legal[index])[0]


def test_checkpoint_agent_specs_choose_search_rules_and_their_options():
    from zerolab.play.search_agents import AGENT_OPTION_KEYS

    def spec_search(search, options):  # as load_search_agent reads a spec's search options
        return search.with_overrides(options, what="agent option", other_keys=AGENT_OPTION_KEYS)

    rules = f"{PACKAGE}.rules:counting_rules"
    base = SearchConfig(num_simulations=8, rules=rules, rule_options={"root_weight": 2.0})
    assert spec_search(base, {}) == base  # a run's own rules come with its agents
    changed = spec_search(base, {"num_simulations": "3", "rule_options.root_weight": "0.5"})
    assert (changed.rules, changed.rule_options, changed.num_simulations) == (rules, (("root_weight", 0.5),), 3)
    assert spec_search(base, {"rules": "other.module:rules"}).rule_options == ()  # not the run's
    chosen = spec_search(SearchConfig(), {"rules": rules, "rule_options.root_weight": "3"})
    assert chosen.rule_options == (("root_weight", 3),) and chosen.make_rules().summary_fn is not None
    with pytest.raises(ValueError, match="unknown agent option 'root_weight'; did you mean 'rule_options.root_weight'"):
        spec_search(base, {"root_weight": "3"})  # a rule option is named as one
    misspelt = spec_search(base, {"rule_options.root_wieght": "3"})
    with pytest.raises(ValueError, match="counting_rules' with options .*root_wieght.*unexpected keyword"):
        misspelt.make_rules()


def test_complete_games_lists_every_game_inside_the_scan():
    from zerolab.selfplay.types import PlyRecord
    from zerolab.selfplay.records import complete_games, finished_games

    over = np.array([[False, False], [True, False], [False, True], [False, False], [True, False]])
    reward = np.array([[0, 0], [1, 0], [0, -1], [0, 0], [0, 0]], np.float32)  # from the mover's view
    first_moved = np.array([[True, True], [False, False], [True, True], [False, False], [True, True]])
    action = np.arange(10).reshape(5, 2)
    length = np.array([[1, 1], [2, 2], [1, 3], [2, 1], [3, 2]])  # plies of each game, its own ply included
    records = PlyRecord(action=action, reward=reward, game_over=over, first_player_moved=first_moved,
                        game_length=length, position_hash=np.zeros((5, 2, 2)))
    games = complete_games(records)
    assert [(lane, start, list(actions), score) for lane, start, actions, score in games] == [
        (0, 0, [0, 2], 0.0),  # the second player moved last and won
        (0, 2, [4, 6, 8], 0.5),  # a draw (reward 0)
        (1, 0, [1, 3, 5], 0.0),  # the first player moved last and lost
    ]
    assert [(lane, list(actions), score) for lane, actions, score in finished_games(records, 5)] == [
        (0, [0, 2], 0.0), (1, [1, 3, 5], 0.0), (0, [4, 6, 8], 0.5)]  # games from the call's first ply first
    # Lane 1's first game was carried from an earlier call (5 plies long, 3 of them in this call): not whole here.
    carried = records.replace(game_length=np.array([[1, 3], [2, 4], [1, 5], [2, 1], [3, 2]]))
    assert [(lane, start) for lane, start, _, _ in complete_games(carried)] == [(0, 0), (0, 2)]
