"""``python -m experiments report [--check]``: the READMEs' result tables, built from committed results.

Three kinds of files, all in the repository's ``results/``:

* ``results/<experiment>/results.json`` — a run's headline quantities with their provenance
  (:mod:`experiments.common.results`; copied there from a run directory by ``python -m experiments collect``);
* ``results/papers.toml`` — the papers' numbers as data: each one's value, its ± and what that is, and the section,
  table or figure it comes from (``[paper.key]`` tables);
* ``results/tables.toml`` — the tables: each names the README it lives in and its rows, a row being what it shows,
  the quantities of ours (``"experiment:key"``) and, where the paper has one, the paper's number it sits beside.

A README holds each table between ``<!-- report:NAME -->`` and ``<!-- /report:NAME -->``; ``report`` rewrites what lies
between, ``report --check`` says which tables differ (exit status 1) and writes nothing.  A test runs the check, so a
hand-edited number in a generated table fails the suite.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import tomllib
from typing import Any, Mapping

from experiments.common.results import RESULTS_FILE, ROOT, ERROR_KINDS, Quantity, Results, difference_quantity

RESULTS_DIRECTORY = ROOT / "results"
PAPERS_FILE = "papers.toml"
TABLES_FILE = "tables.toml"


@dataclasses.dataclass(frozen=True)
class PaperNumber:
    """A number from a paper: its value, its ± (``error_kind`` "se" or "2σ"; none where the paper gives none), where
    it is in the paper, and how to read it (``note``: its scale, its setting)."""

    label: str
    value: float
    where: str
    error: float | None = None
    error_kind: str = "se"
    note: str = ""
    digits: int = 0

    def format(self) -> str:
        text = f"{self.value:,.{self.digits}f}"
        if self.error is not None:
            text += f" ± {self.error:,.{self.digits}f} ({self.error_kind})"
        return f"{text} ({self.where}{'; ' + self.note if self.note else ''})"


@dataclasses.dataclass(frozen=True)
class Row:
    """A table row: what it shows, our quantities (``experiment:key``), and the paper's numbers (``papers.toml`` keys)
    or a text where there is no number to set beside ours.  ``difference``: two quantities of two runs
    (``["a:key", "b:key"]``), shown as a − b with the ± of independent estimates
    (:func:`~experiments.common.results.difference_quantity`), named ``difference_label``."""

    what: str
    ours: tuple[str, ...]
    paper: tuple[str, ...] = ()
    paper_text: str = ""
    difference: tuple[str, ...] = ()
    difference_label: str = ""


@dataclasses.dataclass(frozen=True)
class Table:
    name: str
    file: str  # the README, relative to the repository
    rows: tuple[Row, ...]


def read_toml(path: pathlib.Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{path}: cannot be read as TOML ({error})") from None


def read_papers(directory: pathlib.Path = RESULTS_DIRECTORY) -> dict[str, PaperNumber]:
    """``papers.toml``: ``{"<paper>.<key>": PaperNumber}``."""
    path = directory / PAPERS_FILE
    numbers = {}
    known = {field.name for field in dataclasses.fields(PaperNumber)}
    for paper, entries in read_toml(path).items():
        for key, entry in entries.items():
            unknown = sorted(set(entry) - known)
            missing = sorted({"label", "value", "where"} - set(entry))
            if unknown or missing:
                raise ValueError(f"{path}: [{paper}.{key}] has unknown fields {unknown} or lacks {missing}; "
                                 f"the fields are {sorted(known)}")
            if entry.get("error") is not None and entry.get("error_kind", "se") not in ERROR_KINDS:
                raise ValueError(f"{path}: [{paper}.{key}] error_kind must be one of {ERROR_KINDS}")
            numbers[f"{paper}.{key}"] = PaperNumber(**entry)
    return numbers


def read_tables(directory: pathlib.Path = RESULTS_DIRECTORY) -> list[Table]:
    """``tables.toml``: ``[[table]]`` entries with ``name``, ``file`` and ``[[table.row]]`` rows (``what``; ``ours``
    and ``paper``: a string or a list; ``paper_text``; ``difference``, two references, and ``difference_label``)."""
    path = directory / TABLES_FILE
    tables = []

    def strings(value: str | list[str]) -> tuple[str, ...]:
        return (value,) if isinstance(value, str) else tuple(value)

    for entry in read_toml(path).get("table", []):
        try:
            rows = tuple(Row(row["what"], strings(row.get("ours", ())), strings(row.get("paper", ())),
                             row.get("paper_text", ""), strings(row.get("difference", ())),
                             row.get("difference_label", "")) for row in entry["row"])
            for row in rows:
                if len(row.difference) not in (0, 2) or not (row.ours or row.difference):
                    raise TypeError(f"row {row.what!r}: 'ours' or a 'difference' of two references")
            tables.append(Table(entry["name"], entry["file"], rows))
        except (KeyError, TypeError) as error:
            raise ValueError(f"{path}: a table needs name, file and rows with 'what' and 'ours' ({error!r} "
                             f"missing in {entry.get('name', entry)})") from None
    return tables


def read_all_results(directory: pathlib.Path = RESULTS_DIRECTORY) -> dict[str, Results]:
    """Every committed ``results/<experiment>/results.json``, by experiment."""
    return {path.parent.name: Results.read(path) for path in sorted(directory.glob(f"*/{RESULTS_FILE}"))}


def quantity_of(reference: str, results: Mapping[str, Results]) -> tuple[Quantity, Results]:
    experiment, _, key = reference.partition(":")
    if experiment not in results:
        raise ValueError(f"a table names {reference!r}, but results/{experiment}/{RESULTS_FILE} is not committed "
                         f"(committed: {sorted(results)})")
    if key not in results[experiment].quantities:
        raise ValueError(f"results/{experiment}/{RESULTS_FILE} has no quantity {key!r} (it has "
                         f"{sorted(results[experiment].quantities)})")
    return results[experiment].quantities[key], results[experiment]


def render_table(table: Table, results: Mapping[str, Results], papers: Mapping[str, PaperNumber]) -> str:
    """The markdown of one table: what | ours | the paper | the run (its results file, preset and date)."""
    readme_directory = os.path.dirname(table.file) or "."  # links are relative to the README, in the repository
    lines = ["| what | ours (± and what it is over) | paper | run |", "|---|---|---|---|"]
    for row in table.rows:
        parts, runs = [], []
        for reference in row.ours + row.difference:
            quantity, result = quantity_of(reference, results)
            if reference in row.ours:
                parts.append(quantity.format() if len(row.ours) == 1 and not row.difference
                             else f"{quantity.label}: {quantity.format()}")
            directory = reference.partition(":")[0]  # results/<experiment> or results/<experiment>.<run>
            link = os.path.relpath(f"{RESULTS_DIRECTORY.name}/{directory}/{RESULTS_FILE}", readme_directory)
            run = (f"[{directory}]({link}), {result.provenance.get('preset', '?')}, "
                   f"{result.provenance.get('date', '?')[:10]}")
            if run not in runs:
                runs.append(run)
        if row.difference:
            first, second = (quantity_of(reference, results)[0] for reference in row.difference)
            difference = difference_quantity(row.difference_label or f"{first.label} − {second.label}", first, second)
            parts.append(difference.format() if not row.ours else f"{difference.label}: {difference.format()}")
        missing = [key for key in row.paper if key not in papers]
        if missing:
            raise ValueError(f"table {table.name!r}: no paper number {missing} in results/{PAPERS_FILE}")
        paper = "; ".join([f"{papers[key].label}: {papers[key].format()}" if len(row.paper) > 1
                           else papers[key].format() for key in row.paper] + [row.paper_text] * bool(
                               row.paper_text)) or "—"
        lines.append(f"| {row.what} | {'; '.join(parts)} | {paper} | {'; '.join(runs)} |")
    return "\n".join(lines)


def markers(name: str) -> tuple[str, str]:
    return f"<!-- report:{name} -->", f"<!-- /report:{name} -->"


def replace_block(text: str, name: str, body: str, where: str) -> str:
    """``text`` with what lies between table ``name``'s markers replaced by ``body``."""
    begin, end = markers(name)
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.DOTALL)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"{where} must hold table {name!r} once, between {begin} and {end} on lines of their own")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)


def build(directory: pathlib.Path = RESULTS_DIRECTORY) -> dict[pathlib.Path, str]:
    """``{README path: its text with every generated table rewritten}`` for the READMEs that hold tables."""
    results, papers = read_all_results(directory), read_papers(directory)
    texts: dict[pathlib.Path, str] = {}
    for table in read_tables(directory):
        path = ROOT / table.file
        text = texts.get(path) or path.read_text()
        texts[path] = replace_block(text, table.name, render_table(table, results, papers), table.file)
    return texts


def stale_tables(directory: pathlib.Path = RESULTS_DIRECTORY) -> list[str]:
    """The tables whose README text differs from what :func:`build` generates (``"file: table"``)."""
    built = build(directory)
    stale = []
    for table in read_tables(directory):
        path = ROOT / table.file
        begin, end = markers(table.name)
        if _block(path.read_text(), begin, end) != _block(built[path], begin, end):
            stale.append(f"{table.file}: {table.name}")
    return stale


def _block(text: str, begin: str, end: str) -> str:
    return text.split(begin, 1)[-1].split(end, 1)[0]


def report(check: bool = False, directory: pathlib.Path = RESULTS_DIRECTORY) -> int:
    """Writes the generated tables into their READMEs (or, with ``check``, lists the stale ones: exit status 1)."""
    if check:
        stale = stale_tables(directory)
        for line in stale:
            print(f"stale: {line} (run `python -m experiments report`)")
        return 1 if stale else 0
    for path, text in build(directory).items():
        if path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0
