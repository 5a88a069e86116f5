"""Benchmark of the output-family scorer against a plain exact multiset comparison.

For each case: scorer time (``score_output``), time of the plain exact comparison of the same
pair (normalise every column, build row tuples, compare two ``Counter``s), their ratio, and the
scorer's peak extra memory (tracemalloc, measured in a separate run so it does not distort the
times) against the memory held by the two input result sets.

Times are medians of ``--repeat`` rounds. The sizes of one input are built together and timed
in interleaved rounds (scorer and floor of every size, then the next round), so the growth
from one size to the next compares times taken under the same machine conditions. The last
lines give the growth time(1e6)/time(1e5) of the scorer (median of the per-round ratios) and
of the floor, and the growth of each adversarial input over ``--adversarial-sizes`` (default
1e4 and 1e5): a super-linear case shows up as a growth well above the row factor.

    .venv/bin/python bench/scorer.py                 # all sizes and the adversarial cases
    .venv/bin/python bench/scorer.py --sizes 1e5,1e6 --no-adversarial --repeat 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import pickle
import statistics
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from t2s_pipeline.results import Column, ResultSet
from t2s_pipeline.scoring.output import OutputScore, score_output

_DAY0 = dt.date(2020, 1, 1)


@dataclass(frozen=True)
class Case:
    """One benchmark input: a name and a function building (reference, candidate)."""

    name: str
    build: Callable[[], tuple[ResultSet, ResultSet]]


@dataclass(frozen=True)
class Measure:
    """One row of the printed table."""

    name: str
    rows: int
    columns: int
    scorer_s: float
    exact_s: float
    input_mb: float
    peak_mb: float
    note: str


def synthetic(n: int, rng: np.random.Generator, width: int = 8) -> ResultSet:
    """An order-lines-like result: id, name, amount, day, category, quantity, flag, note."""
    makers = [
        lambda: list(range(n)),
        lambda: [f"customer {i}" for i in rng.integers(0, n, n).tolist()],
        lambda: (rng.random(n) * 1000).round(2).tolist(),
        lambda: [_DAY0 + dt.timedelta(days=d) for d in rng.integers(0, 1500, n).tolist()],
        lambda: [f"category {c}" for c in rng.integers(0, 10, n).tolist()],
        lambda: rng.integers(0, 100, n).tolist(),
        lambda: (rng.random(n) < 0.5).tolist(),
        lambda: [None if x < 0.3 else f"note {x:.3f}" for x in rng.random(n).tolist()],
    ]
    columns = [makers[i % len(makers)]() for i in range(width)]
    rows = _as_fetched(list(zip(*columns, strict=True)))
    return ResultSet(tuple(Column(f"c{i}") for i in range(width)), rows)


def perturb(reference: ResultSet, rng: np.random.Generator, changed: float = 0.05) -> ResultSet:
    """5% rows missing, 5% duplicated, cells changed, one extra column, float noise, shuffled."""
    n = reference.n_rows
    rows = [list(r) for r in reference.rows]
    keep = rng.random(n) >= 0.05
    kept = [r for r, k in zip(rows, keep.tolist(), strict=True) if k]
    dupes = [list(kept[i]) for i in rng.integers(0, len(kept), n // 20).tolist()]
    out = kept + dupes
    for i in rng.choice(len(out), int(len(out) * changed), replace=False).tolist():
        j = int(rng.integers(0, reference.n_columns))
        out[i][j] = _changed(out[i][j])
    extra = rng.integers(0, 1000, len(out)).tolist()
    for row, e in zip(out, extra, strict=True):
        row.append(e)
        row[2] = row[2] + 1e-9 if isinstance(row[2], float) else row[2]
    order = rng.permutation(len(out)).tolist()
    columns = (*reference.columns, Column("extra"))
    return ResultSet(columns, _as_fetched([tuple(out[i]) for i in order]))


def _as_fetched(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Fresh value objects allocated in row order, as a database driver hands them over.

    Without this the shuffled rows would point at objects scattered over the reference's
    memory, and both timings would measure cache misses rather than the algorithms.
    """
    return pickle.loads(pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL))  # noqa: S301


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, dt.date):
        return value + dt.timedelta(days=1)
    return f"{value}!"


def weak_key(n: int, rng: np.random.Generator) -> tuple[ResultSet, ResultSet]:
    """Every column has three values: no key reaches selectivity 0.5."""
    columns = [rng.integers(0, 3, n).tolist() for _ in range(8)]
    reference = ResultSet(
        tuple(Column(f"c{i}") for i in range(8)), list(zip(*columns, strict=True))
    )
    return reference, perturb(reference, rng)


def giant_shelf(n: int, rng: np.random.Generator) -> tuple[ResultSet, ResultSet]:
    """Half the rows unique; the other half copies of three rows: shelves far above the bound."""
    base = synthetic(n, rng).rows
    half = n // 2
    rows = [base[i] if i < half else (0, *base[i % 3][1:]) for i in range(n)]
    reference = ResultSet(synthetic(0, rng).columns, rows)
    return reference, perturb(reference, rng)


def crowded_shelves(n: int, rng: np.random.Generator) -> tuple[ResultSet, ResultSet]:
    """Half the rows on 500-row shelves with two values per column, every candidate row edited.

    The best key still splits those shelves only in two, no row is an exact copy, so this is
    the most assignment (Hungarian) work a key above selectivity 0.5 allows.
    """
    base = synthetic(n, rng).rows
    half = n // 2
    pick = rng.integers(0, 2, (n, 8)).tolist()
    rows = [
        base[i] if i < half else (n + i // 500, *(base[p[j]][j] for j in range(1, 8)))
        for i, p in zip(range(n), pick, strict=True)
    ]
    reference = ResultSet(synthetic(0, rng).columns, rows)
    return reference, perturb(reference, rng, changed=1.0)


def all_equal(n: int, rng: np.random.Generator) -> tuple[ResultSet, ResultSet]:
    """One column is the same value on every row (never paired by values)."""
    reference = synthetic(n, rng)
    rows = [(*r[:4], "same", *r[5:]) for r in reference.rows]
    reference = ResultSet(reference.columns, rows)
    return reference, perturb(reference, rng)


def wide(n: int, rng: np.random.Generator) -> tuple[ResultSet, ResultSet]:
    """Forty columns."""
    reference = synthetic(n, rng, width=40)
    return reference, perturb(reference, rng)


def identical(n: int, rng: np.random.Generator) -> tuple[ResultSet, ResultSet]:
    """Candidate equals the reference up to row order: exact match has to prove it."""
    reference = synthetic(n, rng)
    order = rng.permutation(n).tolist()
    return reference, ResultSet(reference.columns, _as_fetched([reference.rows[i] for i in order]))


def plain_exact(reference: ResultSet, candidate: ResultSet) -> bool:
    """The yardstick: normalise, then compare row multisets with Counter (no column search)."""
    ref = Counter(zip(*reference.normalized_columns(), strict=True))
    cand = Counter(zip(*candidate.normalized_columns(), strict=True))
    return ref == cand


def measure_group(group: list[Case], repeat: int = 3) -> tuple[list[Measure], list[list[float]]]:
    """Measure cases side by side: memory one at a time, then times in interleaved rounds.

    Every round times each case's scorer and floor once, so a ratio between two cases (the
    growth from one size to the next) compares times taken under the same machine conditions.
    Returns the measures and, per round, the scorer times of the cases in order.
    """
    built, memory, notes = [], [], []
    for case in group:
        gc.collect()
        tracemalloc.start()
        reference, candidate = case.build()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        score = score_output(reference, candidate)
        peak = tracemalloc.get_traced_memory()[1] - held
        tracemalloc.stop()
        built.append((reference, candidate))
        memory.append((held / 2**20, peak / 2**20))
        notes.append(_note(score))
    rounds: list[list[float]] = []
    floors: list[list[float]] = []
    for _ in range(repeat):
        rounds.append([_timed(partial(score_output, r, c))[0] for r, c in built])
        floors.append([_timed(partial(plain_exact, r, c))[0] for r, c in built])
    measures = [
        Measure(
            case.name,
            reference.n_rows,
            reference.n_columns,
            statistics.median(times[i] for times in rounds),
            statistics.median(times[i] for times in floors),
            memory[i][0],
            memory[i][1],
            notes[i],
        )
        for i, (case, (reference, _)) in enumerate(zip(group, built, strict=True))
    ]
    return measures, rounds


def growth(rounds: list[list[float]], small: int, large: int) -> float:
    """Median over rounds of time(large case) / time(small case)."""
    return statistics.median(times[large] / times[small] for times in rounds)


def _timed(run: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def _note(score: OutputScore) -> str:
    cells = f"{score.cells_recall:.3f}" if score.cells_recall is not None else "-"
    return f"cells R {cells} {' '.join(score.ceilings)}".strip()


ADVERSARIAL: dict[str, Callable[[int, np.random.Generator], tuple[ResultSet, ResultSet]]] = {
    "identical": identical,
    "weak key": weak_key,
    "giant shelf": giant_shelf,
    "crowded shelves": crowded_shelves,
    "all-equal column": all_equal,
    "40 columns": wide,
}


def groups(sizes: list[int], adversarial_sizes: list[int]) -> list[list[Case]]:
    """The perturbed sizes as one group, then each adversarial input over its sizes."""
    rng = np.random.default_rng(7)
    out = [[Case(f"perturbed {n:.0e}", partial(_pair, n, rng)) for n in sizes]]
    for name, build in ADVERSARIAL.items():
        out.append([Case(f"{name} {n:.0e}", partial(build, n, rng)) for n in adversarial_sizes])
    return [group for group in out if group]


def _pair(n: int, rng: np.random.Generator) -> tuple[ResultSet, ResultSet]:
    reference = synthetic(n, rng)
    return reference, perturb(reference, rng)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e3,1e4,1e5,1e6", help="comma-separated row counts")
    parser.add_argument("--no-adversarial", action="store_true", help="skip adversarial cases")
    parser.add_argument(
        "--adversarial-sizes",
        default="1e4,1e5",
        help="row counts of the adversarial cases; with two, the growth of each is printed",
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (median)")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    adversarial = (
        []
        if args.no_adversarial
        else [int(float(s)) for s in args.adversarial_sizes.split(",") if s]
    )
    header = (
        f"{'case':<24}{'rows':>9}{'cols':>5}{'scorer s':>10}{'exact s':>9}{'ratio':>7}"
        f"{'input MB':>10}{'peak MB':>9}{'peak/in':>8}  note"
    )
    print(header)
    print("-" * len(header))
    growth_lines = []
    for group in groups(sizes, adversarial):
        measures, rounds = measure_group(group, args.repeat)
        for m in measures:
            print(
                f"{m.name:<24}{m.rows:>9}{m.columns:>5}{m.scorer_s:>10.3f}{m.exact_s:>9.3f}"
                f"{m.scorer_s / m.exact_s:>7.2f}{m.input_mb:>10.1f}{m.peak_mb:>9.1f}"
                f"{m.peak_mb / m.input_mb:>8.2f}  {m.note}",
                flush=True,
            )
        rows = [m.rows for m in measures]
        name = measures[0].name.rsplit(" ", 1)[0]
        if name == "perturbed" and 100_000 in rows and 1_000_000 in rows:
            small, large = rows.index(100_000), rows.index(1_000_000)
            floor = measures[large].exact_s / measures[small].exact_s
            growth_lines.append(
                f"growth time(1e6)/time(1e5): scorer {growth(rounds, small, large):.1f} "
                f"(target <= 12; median of {len(rounds)} interleaved rounds), "
                f"exact-comparison floor {floor:.1f}"
            )
        elif name != "perturbed" and len(rows) >= 2:
            factor = rows[-1] / rows[0]
            floor = measures[-1].exact_s / measures[0].exact_s
            growth_lines.append(
                f"growth {name} x{factor:.0f} rows: scorer "
                f"{growth(rounds, 0, len(rows) - 1):.1f}, floor {floor:.1f}"
            )
    print("", *growth_lines, sep="\n")


if __name__ == "__main__":
    main()
