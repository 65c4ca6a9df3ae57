"""scripts/compare_tiny_metrics.py, the check that a change leaves every launcher's tiny metrics as they were: the
launchers it finds, and what it counts as a difference between two runs' outputs (no run here: two written workdirs)."""

import importlib.util
import json
import pathlib
import sys

from experiments.__main__ import available_experiments

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]


def load_script():
    spec = importlib.util.spec_from_file_location("compare_tiny_metrics", REPOSITORY / "scripts" / "compare_tiny_metrics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_launchers_are_the_names_experiments_list_prints():
    """``experiments list`` prints a description after each name; only the names are launchers."""
    script = load_script()
    assert script.experiment_names(REPOSITORY, sys.executable) == list(available_experiments())


def write_run(workdir: pathlib.Path, loss: float, wall: float, date: str, checkpoint: str, simulations_key: str):
    (workdir / "checkpoints").mkdir(parents=True)
    (workdir / "checkpoints" / "state.json").write_text(json.dumps({"bytes": checkpoint}))
    records = [{"iteration": 1, "loss": loss, "wall_s": wall, "selfplay_moves_per_s": 10 * wall}]
    (workdir / "metrics.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    quantities = {"training_wall_s_resnet": {"value": wall}, "score": {"value": 0.5, "path": str(workdir / "a.pgn")}}
    (workdir / "results.json").write_text(json.dumps({"quantities": quantities}))
    (workdir / "games.pgn").write_text(f'[Event "self-play"]\n[Date "{date}"]\n\n1. e4 e5 1/2-1/2\n')
    (workdir / "config.json").write_text(json.dumps({"search": {simulations_key: 8}}))


def test_only_what_the_run_computed_is_compared(tmp_path):
    """Machine measurements (``wall_s``, ``..._per_s``, ``training_wall_s_<model>``), PGN dates, each workdir's own
    path and checkpoints are not differences; a float that moved in its last bit is; ``config.json`` is apart."""
    script = load_script()
    before, after = tmp_path / "before", tmp_path / "after"
    write_run(before, loss=0.25, wall=1.0, date="2026.11.28", checkpoint="a", simulations_key="num_simulations")
    write_run(after, loss=0.25, wall=2.0, date="2026.11.29", checkpoint="b", simulations_key="simulations")
    found, config = script.compare_workdirs(before, after)
    assert found == []
    assert config == ["config.json[0].search.num_simulations: only before", "config.json[0].search.simulations: only after"]
    (after / "metrics.jsonl").write_text(json.dumps({"iteration": 1, "loss": 0.25000000000000006, "wall_s": 2.0,
                                                     "selfplay_moves_per_s": 20.0}) + "\n")
    found, _ = script.compare_workdirs(before, after)
    assert found == ["metrics.jsonl[0].loss: 0.25 before, 0.25000000000000006 after"]
