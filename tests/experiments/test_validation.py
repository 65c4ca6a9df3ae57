"""Bad values refused at the door: ``python -m experiments run`` reads and checks every value of an experiment's
config before it makes its run directory, so a mistake is one ``error:`` line naming the key, the value and what
was expected (with "did you mean" where a name is close), exit status 2, and nothing on disk."""

from __future__ import annotations

import importlib
import sys

import pytest

from experiments.__main__ import main

#: (override, what the error line must contain): a table of bad values, one or more per key.
BAD_VALUES = [
    ("iterations=-3", "iterations must be at least 0, got -3"),
    ("iterations=0", "iterations must be at least 1 for quickstart"),
    ("selfplay.num_games=0", "selfplay.num_games must be at least 1, got 0"),
    ("selfplay.num_games=-4", "selfplay.num_games must be at least 1, got -4"),
    ("selfplay.plies_per_iteration=0", "selfplay.plies_per_iteration must be at least 1, got 0"),
    ("selfplay.max_game_plies=-1", "selfplay.max_game_plies must be at least 1, got -1"),
    ("selfplay.temperature_schedule=move", "selfplay.temperature_schedule must be one of 'plies', 'moves', got "
                                           "'move' (did you mean 'moves'?)"),
    ("model.channels=0", "model.channels must be at least 1, got 0"),
    ("model.num_blocks=-1", "model.num_blocks must be at least 0, got -1"),
    ("model.name=resnett", "model.name: unknown network 'resnett' (did you mean 'resnet'?)"),
    ("model.name=bogus", "model.name: unknown network 'bogus': use one of ['resnet']"),
    ("game.name=checkers", "unknown game 'checkers' (did you mean 'chess'?)"),
    ("search.kind=alphabeta", "search.kind must be one of 'gumbel', 'muzero', got 'alphabeta'"),
    ("search.kind=gumble", "(did you mean 'gumbel'?)"),
    ("search.num_simulations=0", "search.num_simulations must be at least 1, got 0"),
    ("search.max_num_considered_actions=0", "search.max_num_considered_actions must be at least 1, got 0"),
    ("train.batch_size=0", "train.batch_size must be at least 1, got 0"),
    ("train.learning_rate=0", "train.learning_rate must be positive, got 0"),
    ("train.optimizer=sgdd", "train.optimizer must be one of 'adam', 'sgd_nesterov', got 'sgdd'"),
    ("replay.mode=lifo", "replay.mode must be one of 'sample', 'fifo', got 'lifo' (did you mean 'fifo'?)"),
    ("replay.window_size=0", "replay.window_size must be at least 1, got 0"),
    ("evaluation.games=3", "evaluation.games must be an even number of at least 2, got 3"),
    ("evaluation.search.num_simulations=0", "evaluation.search.num_simulations must be at least 1, got 0"),
    ("evaluation.mode=elo", "unknown config key 'evaluation.mode'; keys in 'evaluation': evaluation.engine, "),
    ("selfplay.num_game=8", "unknown config key 'selfplay.num_game' (did you mean 'selfplay.num_games'?); keys in "
                            "'selfplay': "),
    ("search.num_simulations=abc", "config key 'search.num_simulations' expects int, got 'abc'"),
]


@pytest.mark.parametrize("override, expected", BAD_VALUES, ids=[override for override, _ in BAD_VALUES])
def test_a_bad_value_is_one_error_line_with_status_2_and_nothing_on_disk(override, expected, tmp_path, capsys):
    workdir = tmp_path / "run"
    assert main(["run", "quickstart", "--workdir", str(workdir), override]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "\n" not in error, error
    assert expected in error, error
    assert not workdir.exists()


#: (experiment, override, what the error line must contain): the sections only a method's launcher reads, checked at
#: the same door (each runner's ``check_config``).
METHOD_BAD_VALUES = [
    ("distill", "train.batch_size=0", "train.batch_size must be at least 1, got 0"),
    ("distill", "train.model_size=huge", "train.model_size must be one of 'test', 'cpu-tiny'"),
    ("distill", "train.predictor=action_valu", "(did you mean 'action_value'?)"),
    ("distill", "generate.num_games=-1", "generate.num_games must be at least 1, got -1"),
    ("distill", "data.test_fraction=1.0", "data.test_fraction must be in (0, 1), got 1.0"),
    ("distill-games", 'tournament.players=["av"]', "tournament.players: unknown variant(s) ['av']"),
    ("distill-bins", "bin_counts=[1]", "num_bins must be at least 2, got 1"),
    ("sai-go", "evaluation.games=-2", "evaluation.games must be an even number of at least 2"),
    ("sai-go", "evaluation.lam=2.0", "evaluation.lam must be in [0, 1], got 2.0"),
    ("sai-go", "evaluation.gnugo_levels=[12]", "evaluation.gnugo_levels: GNU Go levels are 0 to 10, got 12"),
    ("sai-go-positions", 'sections=["margn"]', "sections: unknown ['margn']"),
    ("sai-go-gnugo", "network=/nonexistent/run", "network='/nonexistent/run': no checkpoint there; train one first"),
    ("contempt-odds", "odds_piece=king", "odds piece must be one of ['bishop', 'knight', 'queen', 'rook'], got 'king'"),
    ("contempt-odds", "opponent=bogus:skill=1", "opponent='bogus:skill=1': neither a run directory nor an engine"),
    ("contempt-odds", "search.selection=lc1",
     "contempt-odds.search.selection must be one of 'mctx', 'lc0', got 'lc1' (did you mean 'lc0'?)"),
    ("contempt-odds", "simulation_counts=[8,0]", "simulation_counts must be at least 1, got 0"),
    ("contempt-odds", "search.num_simulations=16", "search.num_simulations: contempt-odds searches each cell at one of "
                                                   "simulation_counts"),
    ("contempt-odds", "games_per_cell=3", "games_per_cell must be an even number of at least 2, got 3 (half giving "
                                          "odds as White, half as Black)"),
    ("contempt-selfplay", "sc_limits=[0]", "sc_limits must be at least 1, got 0"),
    ("contempt-selfplay", 'puct_temperatures=["hot"]', "temperature 'hot': expected 'tau1', 'tau2' or a number"),
    ("contempt-match", "games=3", "games=3 must split into blocks=1 blocks of an even number of games"),
    ("skill-compat-hb", "expector.evaluation=wdlx", "expector.evaluation must be one of 'wdl', 'cptowl', got 'wdlx'"),
    ("skill-compat-stt", "senior.engine=stockfishh",
     "senior.engine='stockfishh': neither a run directory nor an engine"),
    ("skill-compat-stt", "tree.search.num_simulations=0", "tree.search.num_simulations must be at least 1, got 0"),
    ("skill-compat-stt", "junior.mode=best", "junior.mode must be one of 'argmax', 'sample', got 'best'"),
    ("skill-compat-stt", 'seniors=["tre"]', "unknown agent(s) ['tre'] for stt"),
    ("skill-compat-attuned", "training.num_games=0", "training.num_games must be at least 1, got 0"),
    ("alphagateau-speed", "evaluation.search.num_simulations=0",
     "evaluation.search.num_simulations must be at least 1, got 0"),
    ("alphagateau-finetune", "match.games=3", "match.games must be an even number of at least 2, got 3"),
    ("alphagateau-versus", "seeds=[]", "seeds must list at least one seed, got []"),
    ("contempt-train", "final_games=-2", "final_games must be an even number of at least 2"),
    ("sai-go-komi", "calibration.lam=3.0", "calibration.lam must be in [0, 1], got 3.0"),
]


@pytest.mark.parametrize("name, override, expected", METHOD_BAD_VALUES,
                         ids=[f"{name}:{override}" for name, override, _ in METHOD_BAD_VALUES])
def test_a_method_launchers_bad_value_is_refused_at_the_same_door(name, override, expected, tmp_path, capsys):
    workdir = tmp_path / "run"
    assert main(["run", name, "--workdir", str(workdir), override]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "\n" not in error, error
    assert expected in error, error
    assert not workdir.exists()


def test_an_unknown_key_lists_its_own_section_not_every_key(capsys):
    assert main(["run", "quickstart", "selfplay.bogus=1"]) == 2
    error = capsys.readouterr().err
    assert "keys in 'selfplay': selfplay.device_memory_gib, selfplay.max_game_plies, selfplay.num_games" in error
    assert "train.batch_size" not in error and "did you mean" not in error


def test_the_core_runs_of_every_experiment_pass_the_door_check_at_their_presets():
    """No preset of any experiment is refused by the checks above (contempt-train's paper preset needs a converted
    maia run, which its own check asks for)."""
    from experiments.__main__ import available_experiments, check_experiment_config
    from experiments.configs import load_config

    refused = {}
    for name in available_experiments():
        for preset in ("tiny", "evidence", "paper"):
            try:
                config = load_config(name, preset)
            except ValueError as error:
                assert "has no preset" in str(error), error
                continue
            try:
                check_experiment_config(name, config)
            except (ValueError, FileNotFoundError) as error:
                refused[f"{name}:{preset}"] = str(error)
    # refused only where an input run does not exist here: the paper presets' converted maia-1900 and the runs a
    # launcher plays (an SAI network, contempt-selfplay's rows), each naming the command that makes it
    assert sorted(refused) == [
        "contempt-match:evidence", "contempt-match:paper", "contempt-match:tiny", "contempt-odds:paper",
        "contempt-selfplay:paper", "contempt-train:paper", "sai-go-gnugo:paper", "sai-go-gnugo:tiny",
        "sai-go-panel:paper", "sai-go-panel:tiny", "sai-go-positions:paper", "sai-go-positions:tiny"], refused
    assert "needs init_from=RUN" in refused["contempt-train:paper"]
    assert all("lc0 convert" in refused[name] for name in refused if name.endswith(":paper")
               and not name.startswith("sai-go")), refused
    assert all("train one first (python -m experiments run sai-go" in refused[name] for name in refused
               if name.startswith("sai-go")), refused


def test_plan_refuses_an_accelerator_without_measured_rates_before_compiling(capsys):
    assert main(["plan", "quickstart", "--accelerator", "tpu-v9"]) == 2
    assert capsys.readouterr().err.strip() == "error: --accelerator must be one of 'h100', got 'tpu-v9'"


def test_the_list_says_what_each_experiment_runs_in_one_line(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    quickstart = next(line for line in lines if line.startswith("quickstart "))
    assert quickstart.split(None, 1)[1] == ("Quickstart: AlphaGateau (the GATEAU graph network + Gumbel MuZero "
                                            "self-play) on Gardner chess.")
    assert all(len(line.split(None, 1)) == 2 and len(line) <= 160 for line in lines), lines


def test_host_devices_are_refused_once_jax_has_started_and_the_flag_is_taken_back(monkeypatch, capsys):
    import os

    import jax

    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
    before = os.environ["XLA_FLAGS"]
    have = len(jax.devices("cpu"))  # this process's backend has started
    assert main(["run", "quickstart", "--host-devices", str(have + 1)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: --host-devices {have + 1}: JAX's CPU backend had already "
                                               f"started with {have} device(s)")
    assert os.environ["XLA_FLAGS"] == before  # nothing left for the child processes of later tests
    assert main(["run", "quickstart", "--host-devices", "0"]) == 2
    assert "host device count must be at least 1, got 0" in capsys.readouterr().err


def test_every_experiment_is_one_declared_object_and_a_bad_declaration_fails_at_once(monkeypatch):
    """``python -m experiments`` reads a launcher through its ``EXPERIMENT`` alone: every launcher declares one; a
    hook that is not a function fails when the declaration is made, and a launcher without one is named."""
    import types

    from experiments.__main__ import available_experiments
    from experiments.common.experiment import Experiment, experiment, module_name

    declared = {name: experiment(name) for name in available_experiments()}
    assert len(declared) >= 20 and all(isinstance(value, Experiment) for value in declared.values())
    assert declared["skill-compat-attuned"].plans_pod_shape and declared["skill-compat-hb"].growing_leaves
    # every run writes its headline quantities (results.json), each with its ± and what it is over
    assert [name for name, value in declared.items() if value.results is None] == []
    # every launcher has a plan, and each hook its module writes is the one it declares (a hook left out of
    # EXPERIMENT would silently be the default: no plan, no check before the run directory, no results.json)
    from experiments.configs import load_config

    assert [name for name, value in declared.items()
            if value.programs is None and not value.runs_to_train(load_config(name, "tiny"), name)] == []
    for name, value in declared.items():
        module = importlib.import_module(module_name(name))
        for hook in ("run", "check_config", "training_configs", "programs", "results"):
            written = getattr(module, hook, None)
            if callable(written) and getattr(written, "__module__", None) == module.__name__:
                assert getattr(value, hook) is written, (name, hook)
    with pytest.raises(TypeError, match="Experiment.programs must be a function, got 'programs'"):
        Experiment(run=lambda config, workdir: {}, programs="programs")
    with pytest.raises(TypeError, match="growing_leaves must be a tuple of config leaf names"):
        Experiment(run=lambda config, workdir: {}, growing_leaves="games")
    monkeypatch.setitem(sys.modules, "experiments.undeclared", types.ModuleType("experiments.undeclared"))
    with pytest.raises(ValueError, match="experiments.undeclared declares no EXPERIMENT"):
        experiment("undeclared")


def test_plan_prints_the_sections_a_launcher_declares_in_their_order(monkeypatch, capsys):
    """``python -m experiments plan`` formats what a launcher's ``programs`` declares, section after section, and says
    that ``--devices`` plans only the core's training runs; a launcher that ``plans_pod_shape`` gets the pod's shape."""
    import ml_collections

    from experiments import __main__ as command
    from experiments.common.experiment import Experiment
    from zerolab import PlannedProgram, ProgramSection
    from zerolab.training.program_cost import ProgramCost, format_programs

    def section(title: str, calls: int) -> ProgramSection:
        cost = ProgramCost(argument_bytes=0, output_bytes=0, temp_bytes=2 ** 20, alias_bytes=0,
                           name=f"{title} program", flops=1e9)
        return ProgramSection(title, [PlannedProgram(cost, calls, "one call")], [f"{title}: a note"])

    declared = {"toy": Experiment(run=lambda config, workdir: {},
                                  programs=lambda config: [section("first", 3), section("second", 5)]),
                "pod": Experiment(run=lambda config, workdir: {}, plans_pod_shape=True,
                                  programs=lambda config, num_devices, device_memory_gib: [
                                      section(f"{num_devices} devices, {device_memory_gib} GiB", 1)])}
    monkeypatch.setattr(command, "experiment", declared.__getitem__)
    monkeypatch.setattr(command, "load_config", lambda name, preset, overrides: ml_collections.ConfigDict())
    assert command.plan_experiment("toy", "tiny", [], "h100", num_devices=2) == 0
    note, _, text = capsys.readouterr().out.partition("\n")
    assert note == ("(--devices and --device-memory-gib plan the core's training runs; toy plans its own programs, "
                    "on one device)")
    assert text == format_programs(section("first", 3)) + "\n\n" + format_programs(section("second", 5)) + "\n"
    assert "first: a note" in text and "== second" in text
    assert command.plan_experiment("pod", "tiny", [], "h100", num_devices=4, device_memory_gib=2.5) == 0
    assert capsys.readouterr().out.startswith("== 4 devices, 2.5 GiB\n")
