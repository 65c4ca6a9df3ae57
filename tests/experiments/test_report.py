"""Results as files (``results.json``) and ``python -m experiments report``: every generated README table is what the
committed results make of it, every ± says what it is, and a table that names a number nobody committed is refused."""

from __future__ import annotations

import json

import pytest

from experiments.common import report, results
from experiments.__main__ import main
from experiments.common.results import Quantity, Results


def test_the_readme_tables_are_the_ones_report_builds_from_the_committed_results():
    tables = report.read_tables()
    assert tables, "results/tables.toml declares no table"
    committed = report.read_all_results()
    for table in tables:
        for row in table.rows:
            for reference in row.ours + row.difference:  # every number in a table comes from a committed result
                quantity, result = report.quantity_of(reference, committed)
                assert result.provenance["commit"] != "unknown" and result.provenance["command"]
                assert quantity.error is None or quantity.describe_error()
    assert report.stale_tables() == [], "a README table differs from `python -m experiments report`'s"


def test_a_hand_edited_number_in_a_generated_table_is_stale(tmp_path, monkeypatch):
    table = report.read_tables()[0]
    readme = report.ROOT / table.file
    begin, _ = report.markers(table.name)
    text = readme.read_text()
    row = next(line for line in text.split(begin, 1)[1].splitlines() if line.startswith("| ") and "±" in line)
    edited = tmp_path / "README.md"
    edited.write_text(text.replace(row, row.replace("±", "+/-", 1)))
    monkeypatch.setattr(report, "ROOT", tmp_path)
    monkeypatch.setattr(report, "read_tables",
                        lambda directory=report.RESULTS_DIRECTORY: [report.Table(table.name, "README.md", table.rows)])
    assert report.stale_tables() == [f"README.md: {table.name}"]
    assert report.report() == 0 and edited.read_text() == text  # report writes the generated table back


def test_a_quantity_says_what_its_error_is():
    paired = Quantity("AV − SV accuracy", 0.0442, 0.0061, "se", "boards", 4452, paired=True, unit="accuracy")
    assert paired.format() == "0.044 ± 0.006 (se, paired, over 4,452 boards)"
    seeds = Quantity("AlphaGateau vs ResNet", 394.2, 52.0, "2σ", "seeds", 3, unit="Elo", digits=0)
    assert seeds.format() == "+394 ± 52 Elo (2σ over 3 seeds)"
    assert Quantity("wall", 710.0, unit="s", digits=0).format() == "710 s"
    with pytest.raises(ValueError, match="error_kind must be one of"):
        Quantity("x", 1.0, 0.1, "sd")


def test_a_match_score_counts_draws_as_half_and_its_se_is_over_games():
    score = results.score_quantity("A vs B", wins=5, draws=194, losses=1)
    # sample sd of the 200 game scores (5 ones, 194 halves, 1 zero) over √200
    games = [1.0] * 5 + [0.5] * 194 + [0.0]
    mean = sum(games) / 200
    sd = (sum((g - mean) ** 2 for g in games) / 199) ** 0.5
    assert (score.value, score.n, score.error_kind, score.over) == (0.51, 200, "se", "games")
    assert score.error == pytest.approx(sd / 200 ** 0.5)
    assert score.format() == "0.510 ± 0.006 (se over 200 games)"
    with pytest.raises(ValueError, match="A vs B: a score needs at least one game"):
        results.score_quantity("A vs B", 0, 0, 0)


def test_a_difference_of_two_runs_has_the_error_of_independent_estimates():
    match = results.score_quantity("contempt vs PUCT τ2", 230, 119, 51)
    control = results.score_quantity("PUCT τ1 vs PUCT τ2", 125, 54, 21)
    difference = results.difference_quantity("contempt − plain τ1", match, control)
    assert difference.value == pytest.approx(match.value - control.value)
    assert difference.error == pytest.approx((match.error ** 2 + control.error ** 2) ** 0.5)
    assert difference.format() == "-0.036 ± 0.030 (se over 600 games of two runs)"
    committed = {name: Results(name, {"score": quantity}, {"preset": "evidence", "date": "2026-11-29"})
                 for name, quantity in (("contempt-match", match), ("contempt-match.control", control))}
    row = report.Row("contempt − plain τ1", (), difference=("contempt-match:score", "contempt-match.control:score"),
                     difference_label="contempt − plain τ1")
    rendered = report.render_table(report.Table("t", "README.md", (row,)), committed, {})
    assert "| contempt − plain τ1 | -0.036 ± 0.030 (se over 600 games of two runs) | — | [contempt-match](" in rendered
    assert "[contempt-match.control](results/contempt-match.control/results.json)" in rendered
    with pytest.raises(ValueError, match="errors of one kind"):
        results.difference_quantity("x", match, Quantity("y", 0.5, 0.01, "2σ", unit="score"))
    with pytest.raises(ValueError, match="in score over games, 'y' in Elo over games"):
        results.difference_quantity("x", match, Quantity("y", 5.0, 1.0, unit="Elo"))


def test_a_table_naming_an_uncommitted_number_is_refused():
    committed = {"alphagateau-finetune": Results("alphagateau-finetune", {"transfer_elo": Quantity("t", 1.0)},
                                                {"preset": "evidence", "date": "2026-11-28"})}
    row = report.Row("the transfer", ("alphagateau-finetune:control_elo",))
    with pytest.raises(ValueError, match="has no quantity 'control_elo'"):
        report.render_table(report.Table("t", "README.md", (row,)), committed, {})
    row = report.Row("the transfer", ("distill:accuracy",))
    with pytest.raises(ValueError, match=r"results/distill/results.json is not committed"):
        report.render_table(report.Table("t", "README.md", (row,)), committed, {})
    row = report.Row("the transfer", ("alphagateau-finetune:transfer_elo",), ("alphagateau.nothing",))
    with pytest.raises(ValueError, match="no paper number"):
        report.render_table(report.Table("t", "README.md", (row,)), committed, {})


def test_results_round_trip_and_collect_keeps_only_a_runs_small_files(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "figures").mkdir(parents=True)
    (run / "figures" / "curve.png").write_bytes(b"png")
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "big").write_bytes(b"x" * 1000)
    (run / "summary.json").write_text("{}")
    quantities = {"score": Quantity("a vs b, score", 0.75, 0.05, "se", "games", 64, unit="score")}
    results.write_results(run, "quickstart", quantities, ["python", "-m", "experiments", "run", "quickstart"], "tiny")
    written = Results.read(run / results.RESULTS_FILE)
    assert written.quantities == quantities and written.figures == ("figures/curve.png",)
    assert written.provenance["command"] == "python -m experiments run quickstart"
    assert written.provenance["preset"] == "tiny" and written.provenance["machine"]
    kept = results.collect(run, tmp_path / "kept")
    assert sorted(path.relative_to(tmp_path / "kept").as_posix() for path in kept) == [
        "figures/curve.png", "results.json", "summary.json"]
    with pytest.raises(ValueError, match="holds the results of 'quickstart', not 'contempt-odds'"):
        results.collect(run, tmp_path / "contempt-odds.control", "contempt-odds")  # NAME.RUN: NAME is checked
    assert not (tmp_path / "contempt-odds.control").exists()
    (run / results.RESULTS_FILE).write_text(json.dumps({"quantities": {}}))
    with pytest.raises(ValueError, match="is not an experiment's results.json"):
        results.collect(run, tmp_path / "again")
    assert main(["collect", "no-such-experiment", str(run)]) == 2
    assert "unknown experiment 'no-such-experiment'" in capsys.readouterr().err
