"""The distill experiments end to end at a toy scale, and the committed mate-puzzle file."""

import json
import math
import pathlib

import chess
import numpy as np
import pytest

from distill.puzzles import is_solved, read_puzzles
from experiments.configs import load_config
from zerolab.evaluation import score_standard_error

PUZZLES = pathlib.Path(__file__).parent / "data" / "mate_puzzles.csv"
TOY = ["workers=0", "annotate.nodes_per_move=20", "annotate.positions_per_chunk=16", "data.test_fraction=0.3",
       "train.model_size=test", "train.batch_size=16", "train.num_steps=4", "train.log_every=2",
       "train.checkpoint_every=2", "evaluate.max_test_positions=20"]


def test_committed_puzzles_are_forced_mates():
    puzzles, problems = read_puzzles(PUZZLES)
    assert len(puzzles) >= 20 and problems == []
    for puzzle in puzzles:
        assert is_solved(puzzle, lambda board: chess.Move.from_uci(puzzle.moves[len(board.move_stack)]))
        board = chess.Board(puzzle.fen)
        for move in puzzle.moves:
            board.push_uci(move)
        assert board.is_checkmate()


@pytest.mark.parametrize("name", ["distill", "distill-targets", "distill-bins", "distill-games"])
@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_configs_load(name, preset):
    config = load_config(name, preset)
    assert config.train.predictor == "action_value"


def test_distill_targets_evidence_trains_every_predictor_and_ablation_for_the_same_data_points():
    from experiments.common.distill import predictor_variants

    config = load_config("distill-targets", "evidence")
    named = predictor_variants(config)
    assert list(named) == ["action_value", "state_value", "behavioral_cloning", "action_value-bins_32",
                           "action_value-steps_x3"]
    steps = {name: overrides.get("num_steps", config.train.num_steps) for name, overrides in named.items()}
    assert steps["action_value"] == steps["state_value"] == steps["behavioral_cloning"] == 20_000
    assert steps["action_value-steps_x3"] == 60_000  # the distill tiny preset's steps when this run was measured
    assert named["action_value-bins_32"] == {"predictor": "action_value", "num_bins": 32}
    assert config.tournament.players == config.predictors and config.tournament.games_per_pair % 2 == 0


def test_steps_for_epochs_is_the_ceiling_of_the_passes():
    from distill.pipeline import steps_for_epochs

    assert steps_for_epochs(1000, 1.0, 16) == 63  # 62.5 steps: the last, partial batch counts
    assert steps_for_epochs(1000, 3.19, 16) == math.ceil(3190 / 16) == 200
    assert steps_for_epochs(32, 0.5, 16) == 1
    with pytest.raises(ValueError, match="epochs > 0"):
        steps_for_epochs(1000, 0.0, 16)


def test_distill_games_trains_the_three_predictors_on_equal_games():
    evidence, tiny = load_config("distill-games", "evidence"), load_config("distill-games", "tiny")
    assert list(evidence.predictors) == ["action_value", "state_value", "behavioral_cloning"]
    assert len(evidence.ablations) == 0 and evidence.action_value_epochs == 1.0
    assert evidence.tournament.players == evidence.predictors and evidence.tournament.games_per_pair == 48
    assert tiny.action_value_epochs > 0 and tiny.generate.num_games < evidence.generate.num_games
    assert load_config("distill-games", "paper").action_value_epochs == 3.19  # the paper's ablation protocol


def test_cached_computes_once_per_key(tmp_path):
    from distill.pipeline import cached

    calls = []

    def compute():
        calls.append(1)
        return {"per_board": np.array([1.0, np.nan]), "count": np.int64(len(calls))}

    first = cached(tmp_path / "value.json", {"step": 4}, compute)
    again = cached(tmp_path / "value.json", {"step": 4}, compute)
    assert len(calls) == 1 and first["count"] == again["count"] == 1
    assert first["per_board"][0] == 1.0 and math.isnan(again["per_board"][1])  # arrays come back as lists, NaN kept
    assert cached(tmp_path / "value.json", {"step": 6}, compute)["count"] == 2  # another key: computed again
    assert not (tmp_path / "value.json.tmp").exists()


def file_states(*paths: pathlib.Path) -> dict[pathlib.Path, tuple[int, bytes]]:
    """``{file: (modification time in ns, contents)}`` of the files among ``paths`` and under its directories."""
    files = [file for path in paths for file in ([path] if path.is_file() else sorted(path.rglob("*")))]
    return {file: (file.stat().st_mtime_ns, file.read_bytes()) for file in files if file.is_file()}


@pytest.mark.slow
def test_distill_runs_end_to_end_and_resumes(stockfish_path, generated_games, experiment_data_directory, tmp_path):
    from experiments import distill

    overrides = [*TOY, f"engine={stockfish_path}", f"data.pgn_files={generated_games[0].parent}/*.pgn",
                 f"data.directory={experiment_data_directory}", f"puzzles={PUZZLES}"]
    config = load_config("distill", "tiny", overrides)
    summary = distill.run(config, tmp_path)
    for key in ("positions", "action_accuracy", "kendall_tau", "log_loss", "baselines", "puzzle_accuracy"):
        assert key in summary, key
    assert set(summary["baselines"]) == {"uniform_random", "material"}
    assert json.loads((tmp_path / "summary.json").read_text())["positions"] == summary["positions"] > 0
    # the headline: the predictor against the material count, paired over the same test boards
    quantities = distill.results(summary, config)
    over_material = quantities["action_accuracy_over_material"]
    assert (over_material.paired, over_material.over, over_material.n) == (True, "boards", summary["boards"])
    assert over_material.value == pytest.approx(
        summary["action_accuracy"] - summary["baselines"]["material"]["action_accuracy"])
    assert quantities["material_action_accuracy"].value == summary["baselines"]["material"]["action_accuracy"]
    assert over_material.label == f"{summary['predictor']} − material count, action accuracy"  # as a table row reads
    assert quantities["material_kendall_tau"].label == "material, kendall tau"
    assert (tmp_path / "checkpoints" / "4").is_dir()
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [2, 4, 4] and records[-1]["phase"] == "evaluation"

    annotations, dataset = experiment_data_directory / "annotations", experiment_data_directory / "dataset"
    finished = file_states(annotations, dataset, tmp_path / "checkpoints")
    assert any(path.parent == annotations for path in finished) and any(dataset in path.parents for path in finished)
    again = distill.run(config, tmp_path)  # every stage resumes: nothing is redone
    assert again["action_accuracy"] == summary["action_accuracy"] and again["training_steps"] == 4
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 3
    # the annotation job (chunks, boards, index), the built dataset and the checkpoints: the same files, unwritten
    assert file_states(annotations, dataset, tmp_path / "checkpoints") == finished


@pytest.mark.slow
def test_distill_bins_compares_bin_counts(stockfish_path, generated_games, experiment_data_directory, tmp_path):
    """Two bin counts trained and evaluated on the same data (the tournament is tested in test_engines)."""
    from experiments import distill_bins

    overrides = [*TOY, f"engine={stockfish_path}", f"data.pgn_files={generated_games[0].parent}/*.pgn",
                 f"data.directory={experiment_data_directory}", "bin_counts=(8, 16)", "tournament.games_per_pair=0"]
    summary = distill_bins.run(load_config("distill-bins", "tiny", overrides), tmp_path)
    assert set(summary["variants"]) == {"bins-8", "bins-16"}
    assert [summary["variants"][name]["num_bins"] for name in ("bins-8", "bins-16")] == [8, 16]
    assert all("action_accuracy" in variant for variant in summary["variants"].values())


def test_distill_targets_gives_the_action_token_options_to_the_action_value_model_only():
    from distill.pipeline import training_settings
    from experiments.common.distill import variant_overrides

    config = load_config("distill-targets", "tiny", ["train.mark_action_squares=True", "train.action_embedding=factored"])
    for name in config.predictors:
        model = training_settings(config, **variant_overrides(name)).model_config()
        assert (model.mark_action_squares, model.action_embedding) == (
            (True, "factored") if name == "action_value" else (False, "table"))


@pytest.mark.slow
def test_distill_targets_evidence_preset_end_to_end_and_resumes(stockfish_path, generated_games,
                                                                 experiment_data_directory, tmp_path):
    """The evidence preset at toy sizes: every predictor and ablation trained on the same data, paired comparisons
    among them and the baselines, a tournament of the players; a rerun trains, evaluates and plays nothing again."""
    from experiments import distill_targets

    overrides = [*TOY, f"engine={stockfish_path}", f"data.pgn_files={generated_games[0].parent}/*.pgn",
                 f"data.directory={experiment_data_directory}", "ablations.steps_x3.num_steps=6",
                 "tournament.games_per_pair=2", "tournament.max_game_plies=6",
                 "tournament.players=('action_value', 'behavioral_cloning')", "progress=False"]
    config = load_config("distill-targets", "evidence", overrides)
    summary = distill_targets.run(config, tmp_path)
    names = ["action_value", "state_value", "behavioral_cloning", "action_value-bins_32", "action_value-steps_x3"]
    assert list(summary["variants"]) == names
    assert [summary["variants"][name]["training_steps"] for name in names] == [4, 4, 4, 4, 6]
    assert summary["variants"]["action_value-bins_32"]["num_bins"] == 32
    comparisons = summary["comparisons"]
    assert set(comparisons) == {"all", "best_move_capture", "best_move_quiet"}
    policies = [*names, "uniform_random", "material"]
    assert list(comparisons["all"]["policies"]) == policies
    assert len(comparisons["all"]["differences"]) == len(policies) * (len(policies) - 1) // 2
    boards = summary["variants"]["action_value"]["boards"]
    assert comparisons["all"]["boards"] == boards == 20
    assert comparisons["best_move_capture"]["boards"] + comparisons["best_move_quiet"]["boards"] == boards
    av_material = comparisons["all"]["differences"]["action_value - material"]["action_accuracy"]
    assert av_material["difference"] == pytest.approx(
        summary["variants"]["action_value"]["action_accuracy"] - summary["baselines"]["material"]["action_accuracy"])
    assert av_material["boards"] == boards and av_material["standard_error"] > 0
    assert set(summary["tournament"]["ratings"]) == {"action_value", "behavioral_cloning"}
    assert "elo" in summary["variants"]["action_value"] and "elo" not in summary["variants"]["state_value"]
    quantities = distill_targets.results(summary, config)  # results.json: the paired differences and the ratings
    paired = quantities["action_value_minus_material_action_accuracy"]
    assert (paired.value, paired.error, paired.n, paired.paired) == (
        av_material["difference"], av_material["standard_error"], boards, True)
    rating = quantities["behavioral_cloning_rating"]
    assert rating.value == summary["tournament"]["ratings"]["behavioral_cloning"]["elo"]
    assert (rating.error, rating.error_kind, rating.n) == (
        2 * summary["tournament"]["ratings"]["behavioral_cloning"]["sigma"], "2σ", 2)
    [played] = summary["tournament"]["results"]  # the one pair: its score from the first player's side, se over games
    head = quantities[f"{played['player_a']}_vs_{played['player_b']}_score"]
    assert (head.value, head.n, head.over) == (
        (played["wins"] + played["draws"] / 2) / 2, 2, "games")
    assert head.error == pytest.approx(score_standard_error(played["wins"], played["draws"], played["losses"]),
                                       nan_ok=True)

    evaluations_and_checkpoints = [tmp_path / "baselines.json",
                                   *[tmp_path / name / "evaluation.json" for name in names],
                                   *[tmp_path / name / "checkpoints" for name in names]]
    kept, book = file_states(*evaluations_and_checkpoints), (tmp_path / "elo.json").read_bytes()
    again = distill_targets.run(config, tmp_path)
    assert again["comparisons"] == comparisons and again["tournament"]["ratings"] == summary["tournament"]["ratings"]
    assert file_states(*evaluations_and_checkpoints) == kept  # nothing trained or evaluated again
    assert (tmp_path / "elo.json").read_bytes() == book  # no game played again (the book is saved, unchanged)


@pytest.mark.slow
def test_distill_games_trains_every_predictor_the_steps_of_its_action_value_epochs(
        stockfish_path, generated_games, experiment_data_directory, tmp_path):
    """All predictors train ⌈epochs · training action values / batch⌉ steps on the same data."""
    from experiments import distill_games

    overrides = [*TOY, f"engine={stockfish_path}", f"data.pgn_files={generated_games[0].parent}/*.pgn",
                 f"data.directory={experiment_data_directory}", "action_value_epochs=0.02",
                 "predictors=('action_value', 'state_value')", "tournament.games_per_pair=0", "progress=False"]
    summary = distill_games.run(load_config("distill-games", "tiny", overrides), tmp_path)
    action_values = summary["dataset"]["train"]["action_values"]
    expected = math.ceil(0.02 * action_values / 16)
    assert expected not in (4, 1) and summary["equal_steps"] == expected  # not train.num_steps
    assert [variant["training_steps"] for variant in summary["variants"].values()] == [expected, expected]


def test_distill_games_plans_each_predictor_it_trains():
    """distill-games declares, for each of its predictors (``predictors``, here AV, SV and BC), the training step it
    calls ``train.num_steps`` times and the scoring pass, with the toy run's sizes."""
    from experiments.common.experiment import experiment

    config = load_config("distill-games", "tiny", TOY)
    (section,) = experiment("distill-games").programs(config)
    assert section.title == "distill-games: AV, SV and BC at equal games"
    names = [program.cost.name for program in section.programs]
    assert names == [f"{predictor}: {what}" for predictor in config.predictors
                     for what in ("training step", "scoring")]
    assert len(config.predictors) == 3
    assert [program.calls for program in section.programs[::2]] == [config.train.num_steps] * 3
