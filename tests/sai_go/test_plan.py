"""``python -m experiments plan sai-go-gnugo``: the paper preset's programs compiled with abstract inputs, their calls
counted from the config (sizes shrunk so that the test compiles small programs; the network is the paper one)."""

from __future__ import annotations

from experiments.configs import load_config


def test_the_gnugo_plan_compiles_the_sai_search_and_counts_its_calls(tmp_path):
    from experiments.configs.sai_go_gnugo import read_config
    from experiments.sai_go_gnugo import EXPERIMENT, planned_programs
    from sai_go.plan import abstract_model
    from zerolab import PlannedProgram
    from zerolab.training import format_programs

    config = load_config("sai-go-gnugo", "paper", [
        f"network={tmp_path / 'sai-go-paper'}", "games=4", "search.num_simulations=8", "max_game_plies=10",
        "gnugo_levels=[1]", "lambdas=[0.0,1.0]", "komi_values=[5.5]", "handicaps=[2]"])
    programs, notes = planned_programs(read_config(config))  # the typed config, as the declared plan reads it
    by_name = {program.cost.name: program for program in programs}
    assert list(by_name) == ["SAI λ search", "arena step (pgx)", "margin replay step (pgx)"]
    matches = 3 * 1 * 2  # settings (komi 9.5, komi 5.5, handicap 2) × GNU Go levels × λ
    search = by_name["SAI λ search"]
    assert search.calls == matches * 10  # two batches of 2 games, SAI on every other ply of each: 10 searches
    assert by_name["arena step (pgx)"].calls == matches * 2 * 10
    assert by_name["margin replay step (pgx)"].calls == matches * 4 * (10 + 3)  # "C3 pass E5" before the moves
    # the network is the sai-go paper preset's (its run does not exist): 3 blocks × 128 channels
    model = abstract_model(load_config("sai-go", "paper"))
    evaluation = PlannedProgram.evaluation("evaluation", model.game(9.5), model.network, model.variables, 2)
    assert search.flops == evaluation.flops * (8 + 1) > 0
    assert search.cost.flops > 0 and search.cost.compile_seconds > 0
    assert all(program.cost.device_bytes > 0 for program in programs)
    assert search.cost.device_bytes > by_name["arena step (pgx)"].cost.device_bytes
    assert any("does not exist at plan time" in note and "paper preset" in note for note in notes)
    assert any("GNU Go" in note and "not planned" in note for note in notes)
    section, = EXPERIMENT.programs(config)  # the one section the launcher declares, formatted as the command does
    text = format_programs(section)
    assert text.startswith("== sai-go-gnugo") and "SAI λ search" in text and f"{matches * 10:>14,}" in text
