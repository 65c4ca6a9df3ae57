"""Self-play frames, value targets and statistics (the frame window is tested in test_replay.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zerolab.devices import make_mesh, replicate
from zerolab.games import make_game
from zerolab.networks.network import AlphaZeroResNet, init_variables
from zerolab.search.config import SearchConfig
from zerolab.selfplay.frames import FrameCodec, frame_codec, pack_frames
from zerolab.selfplay.hooks import (
    backward_game_values, choose_actions, initial_states_from_fens, search_move_rule, standard_lane_rule, value_targets,
)
from zerolab.selfplay.programs import make_selfplay_fn
from zerolab.selfplay.records import complete_games, summarize
from zerolab.selfplay.scan import make_play_fn
from zerolab.selfplay.types import PlyRecord, SelfPlayConfig


def test_value_targets_follow_the_final_outcome_from_each_movers_view():
    # One lane: plies 0-2 form a game won by the player who moved at ply 2; ply 3 starts a game that never ends.
    reward = jnp.array([[0.0], [0.0], [1.0], [0.0]])
    game_over = jnp.array([[False], [False], [True], [False]])
    value, known = value_targets(reward, game_over)
    np.testing.assert_array_equal(value[:, 0], [1.0, -1.0, 1.0, 0.0])
    np.testing.assert_array_equal(known[:, 0], [True, True, True, False])
    # A draw, then a loss for the mover at ply 3 (reward −1 from its view).
    reward = jnp.array([[0.0], [0.0], [0.0], [-1.0]])
    game_over = jnp.array([[False], [True], [False], [True]])
    value, known = value_targets(reward, game_over)
    np.testing.assert_array_equal(value[:, 0], [0.0, 0.0, 1.0, -1.0])
    assert bool(known.all())


def test_backward_game_values_fill_each_ply_with_its_games_end_value_alternating_or_not():
    """Two lanes, five plies, by hand.  Lane 0: a game ends at ply 1 with 3, the next at ply 4 with −2.  Lane 1: a
    game ends at ply 2 with 5, the next never ends (its plies unknown, 0)."""
    end_value = jnp.array([[9.0, 9.0], [3.0, 9.0], [9.0, 5.0], [9.0, 9.0], [-2.0, 9.0]])
    game_over = jnp.array([[False, False], [True, False], [False, True], [False, False], [True, False]])
    value, known = backward_game_values(end_value, game_over)
    np.testing.assert_array_equal(value, [[-3.0, 5.0], [3.0, -5.0], [-2.0, 5.0], [2.0, 0.0], [-2.0, 0.0]])
    np.testing.assert_array_equal(known, [[True, True], [True, True], [True, True], [True, False], [True, False]])
    value, known = backward_game_values(end_value, game_over, alternating=False)
    np.testing.assert_array_equal(value, [[3.0, 5.0], [3.0, 5.0], [-2.0, 5.0], [-2.0, 0.0], [-2.0, 0.0]])
    np.testing.assert_array_equal(known, [[True, True], [True, True], [True, True], [True, False], [True, False]])


def test_temperature_sampling_is_proportional_to_visits_to_the_power_one_over_tau():
    """Both schedules draw ∝ visits^(1/τ) at τ = 0.5 and τ = 2 (τ = 0 and 1 are tested in test_hooks.py).

    20,000 draws per case, a chi-square test against the exact distribution at p = 1e-4 (the key is fixed, so the
    test is deterministic). visits^τ or τ ignored (τ = 1) is rejected by statistics in the thousands.
    """
    from scipy.stats import chi2

    visits = np.array([1.0, 2.0, 5.0, 0.0, 8.0])
    draws = 20_000
    cases = [  # (config, ply, the τ the schedule gives at that ply)
        (SelfPlayConfig(temperature_plies=4, temperature=0.5), 3, 0.5),
        (SelfPlayConfig(temperature_plies=4, temperature=2.0), 0, 2.0),
        # lc0's schedule: τ 2 held for 10 moves; τ 1 decaying linearly to 0 over 4 moves is 0.5 at move 2 (ply 4).
        (SelfPlayConfig(temperature_schedule="moves", temperature=2.0, temperature_delay_moves=10), 5, 2.0),
        (SelfPlayConfig(temperature_schedule="moves", temperature=1.0, temperature_decay_moves=4,
                        temperature_end=0.0), 4, 0.5),
    ]
    batch_visits = jnp.tile(jnp.asarray(visits, jnp.float32), (draws, 1))
    search_action = jnp.full(draws, 3, jnp.int32)  # never a sampled move (it has no visits)

    @jax.jit
    def sample_all(key):
        keys = jax.random.split(key, len(cases))
        return [choose_actions(k, batch_visits, search_action, jnp.full(draws, ply, jnp.int32), config)
                for k, (config, ply, _) in zip(keys, cases)]

    samples = jax.device_get(sample_all(jax.random.key(7)))
    critical = chi2.ppf(1 - 1e-4, df=3)  # 4 actions with visits
    for (config, ply, tau), drawn in zip(cases, samples):
        counts = np.bincount(drawn, minlength=len(visits))
        assert counts[3] == 0, (config, counts)  # the unvisited action is never drawn (nor the search's choice)
        visited = visits > 0

        def statistic(weights):
            expected = draws * weights[visited] / weights[visited].sum()
            return float(((counts[visited] - expected) ** 2 / expected).sum())

        assert statistic(visits ** (1 / tau)) < critical, (config, tau, counts)
        assert statistic(visits ** tau) > 50 * critical, (config, tau, counts)  # the test can tell τ from 1/τ
        assert statistic(visits) > 50 * critical, (config, tau, counts)  # and from τ = 1


@pytest.fixture(scope="module")
def selfplay_batch():
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    variables = init_variables(network, game, jax.random.key(0))
    mesh = make_mesh()
    config = SelfPlayConfig(num_games=4, plies_per_iteration=12, max_game_plies=5, temperature_plies=2)
    selfplay = make_selfplay_fn(game, network, SearchConfig(num_simulations=8, max_num_considered_actions=4),
                                config, mesh)
    packed, records = selfplay(replicate(variables, mesh), jax.random.key(1))
    return game, config, jax.device_get(packed), jax.device_get(records)


def test_a_call_logs_its_progress_from_inside_the_scan_and_plays_the_same_games(selfplay_batch, caplog):
    import dataclasses
    import logging

    game, config, packed, records = selfplay_batch
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    variables = init_variables(network, game, jax.random.key(0))
    mesh = make_mesh()
    logged = dataclasses.replace(config, progress_plies=4)
    assert config.progress_interval == 0 and logged.progress_interval == 4
    assert SelfPlayConfig(plies_per_iteration=512).progress_interval == 64  # the default for long calls
    selfplay = make_selfplay_fn(game, network, SearchConfig(num_simulations=8, max_num_considered_actions=4),
                                logged, mesh)
    with caplog.at_level(logging.INFO, logger="zerolab.selfplay.scan"):
        again, again_records = jax.device_get(selfplay(replicate(variables, mesh), jax.random.key(1)))
        jax.effects_barrier()
    lines = [record.getMessage() for record in caplog.records if record.name == "zerolab.selfplay.scan"]
    assert [line.split(",")[0] for line in lines] == [f"self-play: {ply} of 12 plies" for ply in (4, 8, 12)]
    assert "s after ply 4" in lines[1] and "s after ply 8" in lines[2]
    for before, after in zip(jax.tree.leaves((packed, records)), jax.tree.leaves((again, again_records))):
        np.testing.assert_array_equal(before, after)  # the progress lines change nothing the call computes
    with pytest.raises(ValueError, match="selfplay.progress_plies must be at least 0"):
        SelfPlayConfig(progress_plies=-1)


def test_selfplay_frames_are_consistent(selfplay_batch):
    game, config, packed, records = selfplay_batch
    # Stored in the scan with the game's codec: Gardner's 112 history planes as bits, 3 planes one value a frame, the
    # policy as wide as Gardner's most legal moves (K = 128, not A = 1225), and every frame stored exactly.
    assert packed.codec == frame_codec(game)
    assert packed.arrays["observation_bits"].shape == (12, 4, 25 * 112 // 8)
    assert packed.arrays["observation_scalars"].shape == (12, 4, 3)
    assert packed.arrays["observation_dense"].shape == (12, 4, 25, 0)
    assert packed.arrays["policy_indices"].shape == packed.arrays["policy_values"].shape == (12, 4, 128)
    assert not packed.inexact.any()
    packed.check_exact()
    frames = packed.to_frames()
    assert frames.observation.shape == (12, 4, 5, 5, 115)
    assert frames.policy_target.shape == (12, 4, game.num_actions)
    assert frames.policy_target.dtype == np.float16  # as the replay window stores it: a sum is 1 to float16's precision
    np.testing.assert_allclose(frames.policy_target.astype(np.float32).sum(-1), 1.0, rtol=2e-3)
    assert frames.policy_target[~frames.legal_action_mask].max() < 1e-6
    # Games are capped at 5 plies, so every lane ends games at plies 5 and 10 (or earlier by checkmate).
    over = records.game_over
    assert over.sum(0).min() >= 2
    assert (records.game_length[over] <= config.max_game_plies).all()
    assert set(np.unique(frames.value_target[frames.value_mask])) <= {-1.0, 0.0, 1.0}
    # Frames after a lane's last finished game have no known outcome.
    for lane in range(4):
        last_end = np.flatnonzero(over[:, lane]).max()
        assert frames.value_mask[: last_end + 1, lane].all()
        assert not frames.value_mask[last_end + 1:, lane].any()
    # After each game end the next frame is a fresh start position.
    start = np.asarray(game.batched_init(jax.random.split(jax.random.key(0), 1)).observation[0])
    for ply, lane in zip(*np.nonzero(over[:-1])):
        np.testing.assert_array_equal(frames.observation[ply + 1, lane], start)


def test_frames_the_codec_cannot_hold_are_flagged_and_refused():
    """A frame is flagged inexact when a channel declared binary holds 0.5, when one declared constant varies over
    the board, or when its policy has more entries than the width; the window refuses such frames with an error naming
    the declaration.  A channel declared constant is stored as one float16 value a frame, so it holds any value
    exactly, binary or not.  Exact frames decode to their float16 values."""
    from zerolab.selfplay.frames import PackedFrames

    codec = FrameCodec.from_kinds((2, 3), 4, constant=(True, False, False), binary=(True, True, False))
    observation = np.zeros((5, 2, 3), np.float32)
    observation[:, :, 2] = 0.3  # a dense channel holds anything
    observation[:, 1, 1] = 1.0
    observation[1, :, 1] = 0.5  # frame 1: a bit plane that is not 0/1
    observation[2, 0, 0] = 1.0  # frame 2: a one-value plane that varies over the board
    observation[4, :, 0] = 0.5  # frame 4: the plane declared constant and binary holds 0.5 everywhere: exact
    policy = np.zeros((5, 4), np.float32)
    policy[:, 1] = 1.0
    policy[3] = 0.25  # frame 3: four entries, one more than the width
    policy[4, :3] = [0.5, -0.0, 0.5]  # frame 4: -0.0 is an entry (bitwise), three in all: fits
    legal = np.ones((5, 4), bool)
    stored, inexact = jax.device_get(pack_frames(codec, 3, jnp.asarray(observation), jnp.asarray(legal),
                                                 jnp.asarray(policy)))
    assert inexact.tolist() == [False, True, True, True, False]
    packed = PackedFrames(arrays={name: value[None] for name, value in stored.items()},
                          value_target=np.zeros((1, 5), np.float32), value_mask=np.ones((1, 5), bool),
                          inexact=inexact[None], codec=codec)
    with pytest.raises(ValueError, match=r"3 self-play frames \(the first at ply 0, game 1 of this process\)"
                                         r".*observation_planes"):
        packed.check_exact()
    frames = packed.to_frames()
    for exact in (0, 4):
        np.testing.assert_array_equal(frames.observation[0, exact].view(np.uint16),
                                      observation[exact].astype(np.float16).view(np.uint16))
        np.testing.assert_array_equal(frames.policy_target[0, exact].view(np.uint16),
                                      policy[exact].astype(np.float16).view(np.uint16))


def hand_built_records() -> PlyRecord:
    """Four plies of three lanes (plies 0 and 2 are the first player's moves in a game that starts at ply 0).

    Lane 0: the first player mates at ply 2.  Lane 1: the second player mates at ply 1.  Lane 2: a game capped at
    four plies, a draw.  Positions: every ply's hash is distinct except that lane 2 repeats its ply-0 position at ply 2.
    """
    game_over = np.array([[False, False, False], [False, True, False], [True, False, False], [False, False, True]])
    reward = np.zeros((4, 3), np.float32)
    reward[2, 0] = 1.0  # from the mover's view: the first player won
    reward[1, 1] = 1.0  # the second player won
    hashes = np.arange(24, dtype=np.uint32).reshape(4, 3, 2)
    hashes[2, 2] = hashes[0, 2]
    game_length = np.array([[1, 1, 1], [2, 2, 2], [3, 1, 3], [1, 2, 4]], np.int32)
    first_player_moved = np.array([[True, True, True], [False, False, False], [True, True, True], [False, True, False]])
    first_player_moved[3, 0] = True  # lane 0 restarts at ply 3
    first_player_moved[2, 1], first_player_moved[3, 1] = True, False  # lane 1 restarts at ply 2
    return PlyRecord(action=np.zeros((4, 3), np.int32), reward=reward, game_over=game_over,
                     first_player_moved=first_player_moved, game_length=game_length, position_hash=hashes)


def test_summarize_counts_results_from_the_first_players_side():
    stats = summarize(hand_built_records())
    assert stats["games_finished"] == 3
    assert (stats["first_player_wins"], stats["draws"], stats["first_player_losses"]) == (1, 1, 1)
    assert stats["mean_game_length"] == pytest.approx((3 + 2 + 4) / 3)
    assert stats["distinct_position_fraction"] == pytest.approx(11 / 12)


def test_summarize_without_finished_games():
    records = hand_built_records()
    stats = summarize(records.replace(game_over=np.zeros_like(records.game_over)))
    assert (stats["games_finished"], stats["first_player_wins"], stats["draws"], stats["first_player_losses"]) == (0, 0, 0, 0)
    assert np.isnan(stats["mean_game_length"])


# Black's only move is c4-c3; then White's Re1-e5 mates (one of White's 12 legal moves; Kc1-c2 stalemates).
FORCED_MOVE_THEN_MATE_IN_ONE = "k4/p1p2/P4/5/1RK1R b - - 0 1"


def test_a_real_win_reaches_the_value_targets_with_each_movers_sign(pyffish):
    fen = FORCED_MOVE_THEN_MATE_IN_ONE
    assert pyffish.legal_moves("gardner", fen, []) == ["c4c3"]
    white_moves = pyffish.legal_moves("gardner", fen, ["c4c3"])
    ending = {m: pyffish.gives_check("gardner", fen, ["c4c3", m]) for m in white_moves
              if not pyffish.legal_moves("gardner", fen, ["c4c3", m])}
    assert ending == {"e1e5": True, "c1c2": False}  # one mate, one stalemate (a draw)
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    variables = init_variables(network, game, jax.random.key(0))
    config = SelfPlayConfig(num_games=2, plies_per_iteration=2, max_game_plies=10, temperature_plies=0)
    search = SearchConfig(num_simulations=32, max_num_considered_actions=16)
    play = make_play_fn(game, search_move_rule(game, network, search), config,
                        lane_rule=standard_lane_rule(game, initial_states_from_fens(game, [fen])))
    frames, records = jax.device_get(jax.jit(play, static_argnums=2)(variables, jax.random.key(3), 2))
    start = game.from_fen(fen)
    after_black = game.step(start, jnp.int32(game.text_to_action("c4c3", start)))
    assert records.action[0].tolist() == [game.text_to_action("c4c3", start)] * 2
    assert records.action[1].tolist() == [game.text_to_action("e1e5", after_black)] * 2  # the search finds the mate
    np.testing.assert_array_equal(records.game_over, [[False, False], [True, True]])
    np.testing.assert_array_equal(records.reward[1], [1.0, 1.0])  # from the mover's (White's) view
    # Black moved at ply 0 and lost, White moved at ply 1 and won: each frame's target is from its mover's side.
    np.testing.assert_array_equal(frames.value_target, [[-1.0, -1.0], [1.0, 1.0]])
    assert frames.value_mask.all()
    stats = summarize(records)  # the game's first player (the mover at its first ply) is Black here
    assert (stats["games_finished"], stats["first_player_losses"], stats["mean_game_length"]) == (2, 2, 2.0)


def test_a_game_longer_than_a_call_ends_and_every_frame_gets_its_result(pyffish):
    """Calls of one ply (``plies_per_iteration=1``) carry their lanes into the next: the forced-move-then-mate game
    (2 plies, longer than a call) reaches its end in the second call.  Black's frame of call 1 waits (pending: no
    value target, nothing enters the window), then gets Black's loss (−1) when White mates in call 2, White's frame
    its win (+1): each checked against the game's result (the reward of its last ply) and its mover's side; both are
    marked as frames of a game begun in iteration 1.  The third call starts the next game (its frame waits)."""
    from zerolab.training.pending import PendingFrames, settle
    from zerolab.training.replay import FrameWindow

    fen = FORCED_MOVE_THEN_MATE_IN_ONE
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    variables = init_variables(network, game, jax.random.key(0))
    config = SelfPlayConfig(num_games=2, plies_per_iteration=1, max_game_plies=10, temperature_plies=0)
    search = SearchConfig(num_simulations=32, max_num_considered_actions=16)
    play = make_play_fn(game, search_move_rule(game, network, search), config,
                        lane_rule=standard_lane_rule(game, initial_states_from_fens(game, [fen])))
    mesh = make_mesh()
    selfplay = make_selfplay_fn(game, network, search, config, mesh, play_fn=play)
    variables = replicate(variables, mesh)
    lanes = selfplay.init_lanes(variables, jax.random.key(1))
    pending = PendingFrames.fresh(2, 1)
    entered, records_of, earlier_of = [], [], []
    for iteration in (1, 2, 3):
        packed, records, lanes = selfplay.play_lanes(variables, jax.random.fold_in(jax.random.key(1), iteration),
                                                     lanes)
        records = jax.device_get(records)
        earlier_of.append(pending.earlier_actions())
        new, pending, statistics = settle(pending, FrameWindow.from_device_frames(packed), records.game_over,
                                          iteration, config.max_game_plies, records.action)
        entered.append((new, statistics))
        records_of.append(records)
    (first, first_stats), (second, second_stats), (third, third_stats) = entered
    assert len(first) == 0 and (first_stats["frames_entered"], first_stats["frames_pending"]) == (0, 2)
    assert not records_of[0].game_over.any()
    # Call 2: White mates (reward +1 from the mover's view); the game was 2 plies long, the call 1.
    np.testing.assert_array_equal(records_of[1].game_over, [[True, True]])
    np.testing.assert_array_equal(records_of[1].reward, [[1.0, 1.0]])
    np.testing.assert_array_equal(records_of[1].game_length, [[2, 2]])
    result = records_of[1].reward[0]  # the game's result from its last mover's (White's) view
    # entered: the waiting frames first (Black's, ply 0 of each lane), then the call's own (White's, ply 1)
    np.testing.assert_array_equal(second.arrays["value_target"], np.concatenate([-result, result]))
    assert second.arrays["value_mask"].all()
    assert (second_stats["frames_entered"], second_stats["frames_entered_from_earlier_calls"],
            second_stats["frames_pending"], second_stats["frames_entered_without_value"]) == (4, 2, 0, 0)
    np.testing.assert_array_equal(second.arrays["game_iteration"], [1, 1, 1, 1])
    # The waiting frames are Black's positions of call 1, exactly as stored then.
    call_one = FrameWindow.from_device_frames(selfplay.play_lanes(
        variables, jax.random.fold_in(jax.random.key(1), 1), selfplay.init_lanes(variables, jax.random.key(1)))[0])
    np.testing.assert_array_equal(second.arrays["observation_bits"][:2], call_one.arrays["observation_bits"])
    # Call 3: the lanes' next games begin (in iteration 3); their first frames wait.
    assert len(third) == 0 and third_stats["frames_pending"] == 2
    np.testing.assert_array_equal(pending.lane_game_iteration, [3, 3])
    # The game's record (what its PGN is replayed from): call 1's move then call 2's, White (who moved second) won.
    assert earlier_of[0] == {}
    assert complete_games(records_of[1]) == []  # without its earlier move the game is not whole: left out
    whole = complete_games(records_of[1], earlier_of[1])
    assert [(lane, start, score) for lane, start, _, score in whole] == [(0, 0, 0.0), (1, 0, 0.0)]
    for lane, _, actions, _ in whole:
        np.testing.assert_array_equal(actions, [records_of[0].action[0, lane], records_of[1].action[0, lane]])
    np.testing.assert_array_equal(pending.action, records_of[2].action[0])
