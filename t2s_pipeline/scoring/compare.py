"""Run comparison (SPEC §13): paired per-item deltas on the items two runs share.

A regression is an item whose headline figure (EX, cell recall, column recall, retrieval
recall) went down from run A to run B, or could be measured in A and no longer can in B (it
became undefined); an improvement is the mirror (up, or newly defined). The regression check
warns about every regressed item until a recorded decision accepts it. The comparison also
carries the EX delta per difficulty band and how the diagnosis histogram moved, so a reader
sees *where* a change landed, not only how much.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from t2s_pipeline.scoring.stats import Mean, paired_delta
from t2s_pipeline.scoring.summary import FAMILY_COLUMNS

_HEADLINE = (
    ("exact", "ex"),
    ("exact", "ex_presentation"),
    ("exact", "ex_ts"),
    ("cells", "recall"),
    ("columns", "recall"),
    ("retrieval", "recall"),
)


@dataclass(frozen=True)
class MetricDelta:
    family: str
    metric: str
    delta: Mean  # mean of (B - A) over items defined in both


@dataclass(frozen=True)
class Regression:
    """One item's headline figure going down (or up, as an improvement) from run A to run B."""

    item_id: str
    family: str
    metric: str
    before: float | None  # None (improvements only): the figure was undefined in run A
    after: float | None  # None (regressions only): the figure became undefined in run B

    @property
    def size(self) -> float:
        """How far it moved (an undefined end counts as the whole unit interval)."""
        if self.before is None or self.after is None:
            return 1.0
        return abs(self.after - self.before)

    def describe(self) -> str:
        return f"{self.item_id:<40} {self.movement()}"

    def movement(self) -> str:
        def shown(value: float | None) -> str:
            return "undefined" if value is None else f"{value:.3f}"

        return f"{self.family}/{self.metric}: {shown(self.before)} -> {shown(self.after)}"


@dataclass(frozen=True)
class Comparison:
    run_a: str
    run_b: str
    n_shared: int
    deltas: tuple[MetricDelta, ...]
    regressions: tuple[Regression, ...]
    improvements: tuple[Regression, ...] = ()
    band_deltas: tuple[tuple[str, Mean], ...] = ()
    """EX delta (B - A) per difficulty band, on the shared items of the band."""
    diagnosis_shift: tuple[tuple[str, int, int], ...] = ()
    """(category, items in A, items in B) over the shared items, every category either has."""

    def exact_regressions(self) -> list[str]:
        return [r.item_id for r in self.regressions if r.family == "exact"]

    def regressed_items(self) -> list[str]:
        """Every item with at least one regression, each once, in the order first listed."""
        return list(dict.fromkeys(r.item_id for r in self.regressions))

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "run_a": self.run_a,
                "run_b": self.run_b,
                "family": [d.family for d in self.deltas],
                "metric": [d.metric for d in self.deltas],
                "n": [d.delta.n for d in self.deltas],
                "mean_delta": pd.Series([d.delta.mean for d in self.deltas], dtype="Float64"),
                "ci_low": pd.Series([_ci(d.delta, 0) for d in self.deltas], dtype="Float64"),
                "ci_high": pd.Series([_ci(d.delta, 1) for d in self.deltas], dtype="Float64"),
            }
        )

    def regressions_frame(self) -> pd.DataFrame:
        return self._changes_frame(self.regressions)

    def improvements_frame(self) -> pd.DataFrame:
        return self._changes_frame(self.improvements)

    def _changes_frame(self, changes: tuple[Regression, ...]) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "run_a": self.run_a,
                "run_b": self.run_b,
                "item_id": [r.item_id for r in changes],
                "family": [r.family for r in changes],
                "metric": [r.metric for r in changes],
                "before": pd.Series([r.before for r in changes], dtype="Float64"),
                "after": pd.Series([r.after for r in changes], dtype="Float64"),
            }
        )

    def improved_items(self) -> list[str]:
        return list(dict.fromkeys(r.item_id for r in self.improvements))

    def to_text(self, top: int | None = None) -> str:
        """The deltas per family and band, the diagnosis shift, then items that moved.

        ``top`` lists only the largest moves of each kind (the count is always whole).
        """
        lines = [f"{self.run_a} -> {self.run_b}: {self.n_shared} shared items"]
        lines.append("per family (mean of B - A, 95% CI, n):")
        for d in self.deltas:
            if d.delta.n:
                lines.append(f"  {d.family:<10} {d.metric:<22} delta {d.delta}")
        if self.band_deltas:
            lines.append("EX per difficulty band:")
            lines += [f"  {band:<22} delta {delta}" for band, delta in self.band_deltas]
        if self.diagnosis_shift:
            lines.append("diagnosis (items in A -> B):")
            lines += [
                f"  {category:<22} {a:>4} -> {b:<4} ({b - a:+d})"
                for category, a, b in self.diagnosis_shift
            ]
        for title, changes in (
            ("improvements", self.improvements),
            ("regressions", self.regressions),
        ):
            by_item: dict[str, list[Regression]] = {}
            for change in changes:
                by_item.setdefault(change.item_id, []).append(change)
            ranked = sorted(
                by_item.items(), key=lambda kv: (-sum(r.size for r in kv[1]), kv[0])
            )  # the items that moved most (over every headline figure) first
            lines.append(f"{title}: {len(ranked)} items ({len(changes)} headline figures)")
            if top is not None and len(ranked) > top:
                lines.append(f"  the {top} that moved most:")
                ranked = ranked[:top]
            lines += [
                f"  {item:<40} " + ", ".join(r.movement() for r in moved) for item, moved in ranked
            ]
        return "\n".join(lines)


def _ci(mean: Mean, side: int) -> float | None:
    return None if mean.ci is None else mean.ci[side]


def compare_runs(run_a: str, a: pd.DataFrame, run_b: str, b: pd.DataFrame) -> Comparison:
    """Compare two runs' joined per-item frames (one row per item_id) on their shared items."""
    shared = a.merge(b, on="item_id", suffixes=("_a", "_b"))
    # Intervals resample whole cases: the phrasings of one case move together.
    cases = list(shared["case_id_a"]) if "case_id_a" in shared else None
    deltas: list[MetricDelta] = []
    regressions: list[Regression] = []
    improvements: list[Regression] = []
    for family, metrics in FAMILY_COLUMNS.items():
        for metric, column in metrics.items():
            if f"{column}_a" not in shared:
                continue
            before = [_num(v) for v in shared[f"{column}_a"]]
            after = [_num(v) for v in shared[f"{column}_b"]]
            deltas.append(MetricDelta(family, metric, paired_delta(before, after, cases)))
            if (family, metric) in _HEADLINE:
                regressions += _regressed(shared["item_id"], family, metric, before, after)
                improvements += _improved(shared["item_id"], family, metric, before, after)
    return Comparison(
        run_a,
        run_b,
        len(shared),
        tuple(deltas),
        tuple(regressions),
        tuple(improvements),
        _band_deltas(shared),
        _diagnosis_shift(shared),
    )


def _band_deltas(shared: pd.DataFrame) -> tuple[tuple[str, Mean], ...]:
    if "difficulty_a" not in shared or "exact_match_a" not in shared:
        return ()
    out = []
    for band, group in sorted(shared.groupby("difficulty_a"), key=lambda kv: str(kv[0])):
        before = [_num(v) for v in group["exact_match_a"]]
        after = [_num(v) for v in group["exact_match_b"]]
        cases = list(group["case_id_a"]) if "case_id_a" in group else None
        out.append((str(band), paired_delta(before, after, cases)))
    return tuple(out)


def _diagnosis_shift(shared: pd.DataFrame) -> tuple[tuple[str, int, int], ...]:
    if "category_a" not in shared:
        return ()
    a = shared["category_a"].dropna().astype(str).value_counts()
    b = shared["category_b"].dropna().astype(str).value_counts()
    return tuple(
        (category, int(a.get(category, 0)), int(b.get(category, 0)))
        for category in sorted(set(a.index) | set(b.index))
    )


def _improved(
    items: pd.Series,
    family: str,
    metric: str,
    before: list[float | None],
    after: list[float | None],
) -> list[Regression]:
    return [
        Regression(str(item), family, metric, b, a)
        for item, b, a in zip(items, before, after, strict=True)
        if a is not None and (b is None or a > b + 1e-9)
    ]


def _regressed(
    items: pd.Series,
    family: str,
    metric: str,
    before: list[float | None],
    after: list[float | None],
) -> list[Regression]:
    return [
        Regression(str(item), family, metric, b, a)
        for item, b, a in zip(items, before, after, strict=True)
        if b is not None and (a is None or a < b - 1e-9)
    ]


def _num(value: object) -> float | None:
    if value is None or pd.isna(value):  # type: ignore[arg-type]
        return None
    return float(value)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Decision:
    """A recorded acceptance of a run's regressions: who and why."""

    run_id: str
    accepted_by: str
    reason: str
    items: tuple[str, ...] | None  # None: every regression of the run is accepted


def load_decision(folder: Path, run_id: str) -> Decision | None:
    """``decisions/<run_id>.yaml`` with ``accepted_by``, ``reason`` and optional ``items``."""
    path = folder / f"{run_id}.yaml"
    if not path.exists():
        return None
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    items = data.get("items")
    return Decision(
        run_id=run_id,
        accepted_by=str(data.get("accepted_by", "")),
        reason=str(data.get("reason", "")),
        items=None if items is None else tuple(str(i) for i in items),
    )


def unaccepted(comparison: Comparison, decision: Decision | None) -> list[str]:
    """Regressed items of run B (any headline figure) that no recorded decision accepts."""
    regressed = comparison.regressed_items()
    if decision is None or not decision.accepted_by or not decision.reason:
        return regressed
    if decision.items is None:
        return []
    return [item for item in regressed if item not in decision.items]
