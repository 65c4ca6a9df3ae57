"""The AlphaGateau experiments (alphagateau-speed, -versus, -finetune): their configs at both presets, the versus
statistics, and a very small end-to-end run of each."""

import json
import math
import pathlib

import jax
import numpy as np
import pytest

from experiments import alphagateau_finetune, alphagateau_speed, alphagateau_versus
from tests.game_record_checks import check_game_file
from zerolab.evaluation import checkpoints, rating
from zerolab.config import ConfigError
from experiments.configs import load_config
from zerolab.evaluation.book import EloBook
from zerolab.evaluation.pairings import read_pairing_records
from zerolab.play.results import MatchResult
from zerolab.frontends.experiment_setup import training_config
from zerolab.training.runs import Components
from zerolab.training.trained_variables import load_trained_variables

SMALL_TRAINING = ["search.num_simulations=2", "search.max_num_considered_actions=2", "progress=False"]
SMALL_EVALUATION = ["evaluation.games=2", "evaluation.search.num_simulations=2", "evaluation.max_game_plies=6",
                    "evaluation.num_opponents=1"]
#: The two Gardner networks and their self-play of the speed and versus runs, the same in both (and in the
#: fine-tuning's pretraining), so that the second run to compile a program reads it from the compilation cache.
TOY_NETWORKS = ["models.alphagateau.channels=8", "models.alphagateau.num_blocks=1", "models.resnet.channels=8",
                "models.resnet.num_blocks=1"]
TOY_SELFPLAY = ["selfplay.num_games=4", "selfplay.plies_per_iteration=8", "train.batch_size=16"]
SPEED_RUN = ["iterations=1", "checkpoint.keep_period=1", *TOY_NETWORKS, *TOY_SELFPLAY]
VERSUS_RUN = ["iterations=1", *TOY_NETWORKS, *TOY_SELFPLAY, "match.games=2", "match.search.num_simulations=2",
              "match.max_game_plies=6", "compilation_cache=", "seeds=[3, 4]"]
FINETUNE_RUN = [
    "model.channels=8", "model.num_blocks=1",
    "pretrain.iterations=1", "pretrain.selfplay.num_games=4", "pretrain.selfplay.plies_per_iteration=8",
    "pretrain.selfplay.max_game_plies=8",  # games end inside the one call, so its frames train the network
    "pretrain.train.batch_size=16",
    "finetune.iterations=1", "finetune.selfplay.num_games=2", "finetune.selfplay.plies_per_iteration=4",
    "finetune.selfplay.max_game_plies=4", "finetune.train.batch_size=8",
    "match.games=2", "match.search.num_simulations=2", "match.max_game_plies=6", "scratch=True",
]


# --- configs ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["alphagateau-speed", "alphagateau-finetune"])
@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_configs_load_at_both_presets(name, preset):
    config = load_config(name, preset, ["seed=3"])
    assert config.seed == 3
    with pytest.raises(ConfigError, match="unknown config key"):
        load_config(name, preset, ["evaluation.gamez=2"])


def test_paper_presets_carry_the_papers_hyperparameters():
    speed = load_config("alphagateau-speed", "paper")
    finetune = load_config("alphagateau-finetune", "paper")
    assert speed.game.name == "chess" and speed.iterations == 500
    assert speed.models.alphagateau.channels == 128 and speed.models.alphagateau.num_blocks == 5
    assert speed.models.resnet.channels == 128 and speed.models.resnet.num_blocks == 5
    # The fine-tuning experiment's model: 10 residual layers; 1024 games an iteration on 5×5, 256 on 8×8.
    assert (finetune.model.channels, finetune.model.num_blocks) == (128, 10)
    assert (finetune.pretrain.selfplay.num_games, finetune.finetune.selfplay.num_games) == (1024, 256)
    assert (finetune.pretrain.iterations, finetune.finetune.iterations) == (100, 100)
    for model in (speed.models.alphagateau, finetune.model):  # the paper's architecture (eq. 7, eq. 9, Figures 3-4)
        assert (model.block, model.heads, model.pooling) == ("pre_activation", "paper", "paper")
    plies = (finetune.pretrain.selfplay.plies_per_iteration, finetune.finetune.selfplay.plies_per_iteration)
    assert plies == (256, 512)
    for search in (speed.search, finetune.search):
        assert (search.num_simulations, search.gumbel_scale, search.kind) == (128, 1.0, "gumbel")
    for run in (speed, finetune.pretrain, finetune.finetune):
        assert run.selfplay.plies_per_iteration == run.selfplay.max_game_plies
        assert (run.replay.window_size, run.train.batch_size, run.train.learning_rate) == (1_000_000, 256, 1e-3)


@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_sub_run_configs_build_their_components(preset):
    speed = load_config("alphagateau-speed", preset)
    for name in speed.models:
        run_config = training_config(speed, speed.models[name])
        for key in ("game", "search", "selfplay", "replay", "train", "checkpoint"):  # identical budgets
            assert run_config[key].to_dict() == speed[key].to_dict()
        assert run_config.model.to_dict() == speed.models[name].to_dict()
        Components.from_config(run_config)
    finetune = load_config("alphagateau-finetune", preset)
    pretrain = alphagateau_finetune.stage_training_config(finetune, "pretrain", "gardner_chess")
    tuned = alphagateau_finetune.stage_training_config(finetune, "finetune", "chess", init_from="elsewhere")
    assert (pretrain.game.name, tuned.game.name, tuned.init_from) == ("gardner_chess", "chess", "elsewhere")
    assert pretrain.model.to_dict() == tuned.model.to_dict() == finetune.model.to_dict()
    assert tuned.selfplay.to_dict() == finetune.finetune.selfplay.to_dict()


def test_finetune_evidence_preset_plays_8x8_games_long_enough_to_finish():
    evidence = load_config("alphagateau-finetune", "evidence")
    assert evidence.finetune.selfplay.max_game_plies >= 160  # the tiny preset's 48 made nearly every target a draw
    # calls as long as the cap: the measured run's setting (a game may now span calls, so this is no longer needed)
    assert evidence.finetune.selfplay.plies_per_iteration == evidence.finetune.selfplay.max_game_plies
    assert evidence.match.games == 128 and evidence.match.max_game_plies >= 160
    assert evidence.evaluation.max_game_plies >= 160
    quickstart = load_config("quickstart", "tiny")  # the 5×5 stage is the quickstart's training
    assert evidence.pretrain.selfplay.to_dict() == quickstart.selfplay.to_dict()
    assert (evidence.pretrain.iterations, evidence.pretrain.replay.window_size) == (quickstart.iterations,
                                                                                    quickstart.replay.window_size)
    assert evidence.pretrain.train.to_dict() == quickstart.train.to_dict()
    assert load_config("alphagateau-finetune", "tiny").match.games == 0  # tiny: no head-to-head


def test_selfplay_outcomes_sum_the_iterations():
    records = [{"games_finished": 3, "first_player_wins": 1, "first_player_losses": 1, "draws": 1,
                "mean_game_length": 60.0},
               {"games_finished": 0, "first_player_wins": 0, "first_player_losses": 0, "draws": 0,
                "mean_game_length": float("nan")},
               {"games_finished": 1, "first_player_wins": 0, "first_player_losses": 0, "draws": 1,
                "mean_game_length": 200.0}]
    outcomes = alphagateau_finetune.selfplay_outcomes(records)
    assert outcomes == {"games_finished": 4, "decisive": 2, "draws": 2, "decisive_share": 0.5,
                        "mean_game_length": (3 * 60.0 + 200.0) / 4}


def test_head_to_head_summary_gives_score_elo_and_capped_share():
    from zerolab.evaluation.pairings import PairingRecord

    record = PairingRecord("a-vs-b", MatchResult("a", "b", wins=5, draws=2, losses=1), 0.75, 0.625, capped=2,
                           fallback_moves={}, wall_s=1.0)
    summary = alphagateau_finetune.head_to_head_summary(record)
    scores = [1] * 5 + [0.5] * 2 + [0]
    mean = sum(scores) / 8
    se = math.sqrt(sum((s - mean) ** 2 for s in scores) / 7 / 8)
    assert (summary["players"], summary["games"], summary["capped"], summary["capped_share"]) == (["a", "b"], 8, 2, 0.25)
    assert summary["score"] == pytest.approx(mean) and summary["score_se"] == pytest.approx(se)
    assert summary["elo"] == pytest.approx(400 * math.log10(mean / (1 - mean)))
    assert summary["elo_se"] == pytest.approx(400 / math.log(10) * se / (mean * (1 - mean)))
    pairings = alphagateau_finetune.head_to_head_pairings("gardner@10", "chess@16", 128)
    assert [(p.player_a, p.player_b, p.games) for p in pairings] == [("gardner@10", "untrained", 128),
                                                                      ("chess@16", "gardner@10", 128)]


def test_rated_steps_keep_the_period_and_the_last():
    assert checkpoints.rated_steps([0, 3, 4, 5, 6, 7], keep_period=3) == [0, 3, 6, 7]
    assert checkpoints.rated_steps([0, 1, 2], keep_period=0) == [0, 1, 2]


# --- alphagateau-versus: pooled score ---------------------------------------------------------------------------------


def test_score_statistics_pool_the_games_and_compare_the_seeds():
    statistics = alphagateau_versus.score_statistics([{"wins": 3, "draws": 1, "losses": 0},
                                                      {"wins": 1, "draws": 1, "losses": 2}])
    scores = [1, 1, 1, 0.5, 1, 0.5, 0, 0]
    mean = sum(scores) / 8
    assert statistics["games"] == 8 and statistics["score"] == pytest.approx(mean)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / 7)
    assert statistics["score_se"] == pytest.approx(sd / math.sqrt(8))
    assert statistics["seed_scores"] == [0.875, 0.375]
    assert statistics["score_se_between_seeds"] == pytest.approx(abs(0.875 - 0.375) / 2)  # sd of two / √2
    assert statistics["elo"] == pytest.approx(400 * math.log10(mean / (1 - mean)))
    assert statistics["elo_se"] == pytest.approx(400 / math.log(10) * statistics["score_se"] / (mean * (1 - mean)))


def test_versus_presets_share_the_training_keys_and_differ_in_seeds_and_games():
    tiny, evidence = load_config("alphagateau-versus", "tiny"), load_config("alphagateau-versus", "evidence")
    assert list(tiny.seeds) == [0] and list(evidence.seeds) == [0, 1, 2] and evidence.match.games == 128
    for key in ("game", "search", "selfplay", "replay", "train", "models", "iterations"):
        assert tiny[key].to_dict() if hasattr(tiny[key], "to_dict") else tiny[key] == \
            (evidence[key].to_dict() if hasattr(evidence[key], "to_dict") else evidence[key]), key
    assert evidence.models.alphagateau.heads == "paper"


# --- rating in order (matches faked: no JAX) ----------------------------------------------------------------------


def fake_strength(name):
    """Later checkpoints are stronger; 'b' players are a little stronger than 'a' ones."""
    series, step = name.split("@")
    return int(step) + (0.5 if series == "b" else 0.0)


def test_rating_follows_algorithm_2_in_order_and_resumes(tmp_path):
    played = []

    def play(player_a, player_b):
        played.append((player_a, player_b))
        stronger = fake_strength(player_a) > fake_strength(player_b)
        wins = 9 if stronger else 1
        return MatchResult(player_a, player_b, wins=wins, losses=10 - wins)

    evaluation = rating.EvaluationConfig(games=10, max_game_plies=4, num_opponents=2)

    def contestants(steps):
        return [rating.Contestant(f"{series}@{step}", series, step, 60.0 * step, lambda: pytest.fail("not loaded"))
                for step in steps for series in ("a", "b")]

    first = contestants([0, 1])
    book, matches = rating.rate_contestants(first, None, evaluation, tmp_path / "elo.json", tmp_path, seed=0,
                                            show_progress=False, play=play)
    assert played[0] == ("b@0", "a@0") and matches == 0 + 1 + 2 + 2
    assert [name for name, _ in played] == ["b@0", "a@1", "a@1", "b@1", "b@1"]  # each new player, in order
    ratings = book.ratings()
    assert ratings["b@1"][0] > ratings["a@1"][0] > ratings["b@0"][0] > ratings["a@0"][0]
    series = rating.elo_series(book, first, "wall_seconds")
    assert [point[0] for point in series["a"]] == [0.0, 60.0]
    # A rerun with one more checkpoint per series plays only the new ones.
    played.clear()
    _, matches = rating.rate_contestants(contestants([0, 1, 2]), None, evaluation, tmp_path / "elo.json", tmp_path,
                                         seed=0, show_progress=False, play=play)
    assert matches == 4 and {name for name, _ in played} == {"a@2", "b@2"}


# --- end to end -------------------------------------------------------------------------------------------------------


def run_experiment(module, name, workdir, overrides):
    config = load_config(name, "tiny", overrides)
    return module.run(config, workdir)


def check_outputs(workdir: pathlib.Path, summary: dict, figure_name: str, players: set):
    written = json.loads((workdir / "summary.json").read_text())
    book = EloBook.load(workdir / "elo.json")
    assert set(book.ratings()) == players
    for name, (rating_value, sigma) in book.ratings().items():  # the summary reports the book's fit
        assert written["elo"][name]["rating"] == pytest.approx(rating_value)
        assert written["elo"][name]["sigma"] == pytest.approx(sigma)
        assert written["elo"][name]["games"] == book.games_of(name) > 0
    assert written["matches_played_now"] == summary["matches_played_now"] == len(book.results)
    table = (workdir / "elo.txt").read_text()
    assert table.startswith("rank") and all(name in table for name in players)
    figure = workdir / "figures" / figure_name
    assert figure.stat().st_size > 10_000 and figure.read_bytes()[:4] == b"\x89PNG"
    pgns = sorted((workdir / "games").glob("*.pgn"))
    assert len(pgns) == len(book.results)
    for path in pgns:  # every game replayed by an independent move generator, its Result checked
        assert check_game_file(path) == int(written["evaluation"]["games"])


def check_rerun_plays_nothing(module, name, workdir, overrides):
    book_before = (workdir / "elo.json").read_text()
    pgns_before = {path: path.stat().st_mtime_ns for path in (workdir / "games").glob("*.pgn")}
    summary = run_experiment(module, name, workdir, overrides)
    assert summary["matches_played_now"] == 0
    assert json.loads((workdir / "elo.json").read_text())["results"] == json.loads(book_before)["results"]
    assert {path: path.stat().st_mtime_ns for path in (workdir / "games").glob("*.pgn")} == pgns_before


@pytest.mark.slow
def test_speed_experiment_end_to_end(tmp_path):
    overrides = SPEED_RUN + SMALL_TRAINING + SMALL_EVALUATION
    summary = run_experiment(alphagateau_speed, "alphagateau-speed", tmp_path, overrides)
    players = {"alphagateau@0", "alphagateau@1", "resnet@0", "resnet@1"}
    check_outputs(tmp_path, summary, "alphagateau_speed.png", players)
    assert summary["matches_played_now"] == 0 + 1 + 1 + 1  # Algorithm 2 with 1 opponent per new player
    models = summary["models"]
    assert models["alphagateau"]["parameters"] < models["resnet"]["parameters"]
    assert models["alphagateau"]["frames"] == models["resnet"]["frames"] == 4 * 8
    quantities = alphagateau_speed.results(summary, load_config("alphagateau-speed", "tiny", overrides))
    rating = quantities["rating_alphagateau"]  # the final checkpoints' ratings (2σ) and the fitted difference
    final = models["alphagateau"]
    assert (rating.value, rating.error) == (final["final_rating"], 2 * final["final_sigma"])
    assert rating.n == summary["elo"]["alphagateau@1"]["games"] > 0
    assert quantities["final_difference"].value == summary["final_difference"]["elo"]
    assert quantities["training_wall_s_resnet"].value == models["resnet"]["training_wall_s"]
    check_rerun_plays_nothing(alphagateau_speed, "alphagateau-speed", tmp_path, overrides)


@pytest.mark.slow
def test_versus_trains_both_networks_per_seed_plays_them_and_resumes(tmp_path):
    config = load_config("alphagateau-versus", "tiny", VERSUS_RUN + SMALL_TRAINING)
    summary = alphagateau_versus.run(config, tmp_path)
    assert summary["seeds"] == [3, 4] and summary["games"] == 4 and summary["players"] == ["alphagateau", "resnet"]
    quantities = alphagateau_versus.results(summary, config)  # the seed is the unit of replication
    assert (quantities["score"].over, quantities["score"].n) == ("seeds", 2)
    assert quantities["score"].error == summary["score_se_between_seeds"]
    assert (quantities["score_over_games"].over, quantities["score_over_games"].n) == ("games", 4)
    for seed in (3, 4):
        match = read_pairing_records(tmp_path / f"seed-{seed}" / "matches.json")["alphagateau-vs-resnet"]
        assert match.result.games == 2 and match.result.players == ("alphagateau", "resnet")
        assert summary["matches"][seed - 3] == {"seed": seed, "games": 2, "wins": match.result.wins,
                                                "draws": match.result.draws, "losses": match.result.losses}
        training = summary["training"][str(seed)]
        assert training["alphagateau"]["parameters"] != training["resnet"]["parameters"]
        assert (tmp_path / f"seed-{seed}" / "games" / "alphagateau-vs-resnet.pgn").stat().st_size > 0
    before = (tmp_path / "seed-3" / "matches.json").stat().st_mtime_ns
    # Resumed: nothing trained or played again.
    assert alphagateau_versus.run(config, tmp_path)["matches"] == summary["matches"]
    assert (tmp_path / "seed-3" / "matches.json").stat().st_mtime_ns == before


@pytest.mark.slow
def test_finetune_experiment_end_to_end(tmp_path):
    overrides = FINETUNE_RUN + SMALL_TRAINING + SMALL_EVALUATION
    summary = run_experiment(alphagateau_finetune, "alphagateau-finetune", tmp_path, overrides)
    check_outputs(tmp_path, summary, "alphagateau_finetune.png", {"untrained", "gardner@1", "chess@1", "scratch@1"})
    assert summary["before_finetuning"]["player"] == "gardner@1"
    assert summary["after_finetuning"]["player"] == "chess@1"
    # init_from: the 8×8 run starts from the parameters of the last 5×5 checkpoint (not a fresh initialisation).
    pretrained = load_trained_variables(tmp_path / "gardner", 1).variables["params"]
    untrained = load_trained_variables(tmp_path / "gardner", 0).variables["params"]
    started = load_trained_variables(tmp_path / "chess", 0).variables["params"]
    flat_pretrained, structure = jax.tree.flatten(pretrained)
    flat_started, started_structure = jax.tree.flatten(started)
    assert structure == started_structure
    for a, b in zip(flat_pretrained, flat_started):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert any(not np.array_equal(a, b) for a, b in zip(flat_pretrained, jax.tree.leaves(untrained)))
    # The control starts 8×8 from the very network the 5×5 stage started from (AlphaGateau's parameters do not
    # depend on the board), then trains with the fine-tuning's keys.
    scratch = load_trained_variables(tmp_path / "scratch", 0).variables["params"]
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(untrained), jax.tree.leaves(scratch)))
    assert not all(np.array_equal(a, b) for a, b in zip(
        jax.tree.leaves(scratch), jax.tree.leaves(load_trained_variables(tmp_path / "scratch", 1).variables["params"])))
    # The head-to-head matches on 8×8: the transfer and the fine-tuning, from their records.
    matches = read_pairing_records(tmp_path / "head-to-head" / "matches.json")
    assert list(matches) == ["gardner@1-vs-untrained", "chess@1-vs-gardner@1", "chess@1-vs-scratch@1"]
    for label, record in matches.items():
        head = summary["head_to_head"][label]
        assert (head["wins"], head["draws"], head["losses"]) == (record.result.wins, record.result.draws,
                                                                 record.result.losses)
        assert head["games"] == 2 and head["capped"] == record.capped
        assert check_game_file(tmp_path / "head-to-head" / "games" / f"{label}.pgn") == 2
    finetune = summary["selfplay"]["finetune"]
    assert finetune["games_finished"] == finetune["decisive"] + finetune["draws"] >= 2  # 2 lanes of 4 plies
    # results.json's headline quantities: each match's score and Elo (se over its games), the ratings (2σ).
    quantities = alphagateau_finetune.results(summary, load_config("alphagateau-finetune", "tiny", overrides))
    control = summary["head_to_head"]["chess@1-vs-scratch@1"]
    assert (quantities["control_score"].value, quantities["control_score"].n) == (control["score"], 2)
    assert quantities["control_elo"].error == control["elo_se"] and quantities["transfer_elo"].over == "games"
    assert quantities["rating_scratch"].value == summary["elo"]["scratch@1"]["rating"]
    assert quantities["rating_scratch"].error == 2 * summary["elo"]["scratch@1"]["sigma"]
    assert quantities["rating_scratch"].error_kind == "2σ" and quantities["rating_scratch"].label == "scratch@1"
    kept = (tmp_path / "head-to-head" / "matches.json").read_bytes()
    check_rerun_plays_nothing(alphagateau_finetune, "alphagateau-finetune", tmp_path, overrides)
    assert (tmp_path / "head-to-head" / "matches.json").read_bytes() == kept
