"""contempt-odds end to end at toy sizes through ``python -m experiments run``'s entry point (in this process): an
untrained Gardner network gives knight odds to Fairy-Stockfish with PUCT and with search-contempt, at 4 simulations
(N_scl 1), 2 games per cell; the summary's cells, the games' PGN and the figure are checked, and a rerun plays nothing
again."""

from __future__ import annotations

import json

import pytest

from experiments.__main__ import main
from zerolab.training import train
from zerolab.config import load_config


@pytest.mark.slow  # 42 s with a cold compilation cache on a shared 2-core machine, 10 s warm
def test_contempt_odds_plays_both_arms_with_odds_and_a_rerun_plays_nothing(tmp_path, fairy_stockfish_path, capsys):
    del fairy_stockfish_path  # the default opponent, fairy-stockfish:skill=-20 (found by name; missing: a failure)
    network = tmp_path / "base"
    train.run(load_config("quickstart", "tiny", ["model.name=resnet", "model.channels=4", "model.num_blocks=1",
                                                  "iterations=0", "progress=False"]), network)
    command = ["run", "contempt-odds", "--workdir", str(tmp_path / "odds"), f"network={network}", "simulations=[4]",
               "sc_limit=1", "games_per_cell=2", "max_game_plies=6",
               "progress=False"]
    capsys.readouterr()
    assert main(command) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["network"] == str(network) and summary["settings"]["odds_piece"] == "knight"
    cells = {cell["arm"]: cell for cell in summary["cells"]}
    assert set(cells) == {"puct", "contempt1"}
    for arm, cell in cells.items():
        assert cell["simulations"] == 4 and cell["games"] == 2, arm
        assert cell["wins"] + cell["draws"] + cell["losses"] == 2 and cell["capped_games"] <= cell["draws"]
        assert cell["win_interval"][0] <= cell["win_percent"] <= cell["win_interval"][1]
        assert cell["engine_fallback_moves"] >= 0
    assert cells["contempt1"]["sampled_visit_fraction"] > 0 and "sampled_visit_fraction" not in cells["puct"]
    for arm in ("puct-4", "contempt1-4"):  # half the games from each side's odds opening (no knight on b1 or b5)
        pgn = (tmp_path / "odds" / "games" / f"{arm}.pgn").read_text()
        assert pgn.count("[Result ") == 2 and pgn.count("[FEN ") == 2
    assert (tmp_path / "odds" / "figures" / "contempt-odds.png").stat().st_size > 0
    records_file = tmp_path / "odds" / "matches.json"
    assert list(json.loads(records_file.read_text())["matches"]) == ["puct-4", "contempt1-4"]
    before = records_file.stat().st_mtime_ns
    assert main(command) == 0  # every cell on file: nothing played again
    assert records_file.stat().st_mtime_ns == before
    assert json.loads(capsys.readouterr().out)["cells"] == summary["cells"]
