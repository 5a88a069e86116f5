"""Run comparison (SPEC §13): paired per-item deltas on the items two runs share.

A regression is an item whose headline figure (EX, cell recall, column recall, retrieval
recall) went down from run A to run B, or could be measured in A and no longer can in B (it
became undefined). The regression check warns about every regressed item until a recorded
decision accepts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from t2s_pipeline.scoring.stats import Mean, paired_delta
from t2s_pipeline.scoring.summary import FAMILY_COLUMNS

_HEADLINE = (("exact", "ex"), ("cells", "recall"), ("columns", "recall"), ("retrieval", "recall"))


@dataclass(frozen=True)
class MetricDelta:
    family: str
    metric: str
    delta: Mean  # mean of (B - A) over items defined in both


@dataclass(frozen=True)
class Regression:
    item_id: str
    family: str
    metric: str
    before: float
    after: float | None  # None: the figure became undefined in run B


@dataclass(frozen=True)
class Comparison:
    run_a: str
    run_b: str
    n_shared: int
    deltas: tuple[MetricDelta, ...]
    regressions: tuple[Regression, ...]

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
        return pd.DataFrame(
            {
                "run_a": self.run_a,
                "run_b": self.run_b,
                "item_id": [r.item_id for r in self.regressions],
                "family": [r.family for r in self.regressions],
                "metric": [r.metric for r in self.regressions],
                "before": [r.before for r in self.regressions],
                "after": pd.Series([r.after for r in self.regressions], dtype="Float64"),
            }
        )

    def to_text(self) -> str:
        lines = [f"{self.run_a} -> {self.run_b}: {self.n_shared} shared items"]
        for d in self.deltas:
            if d.delta.n:
                lines.append(f"  {d.family:<10} {d.metric:<22} delta {d.delta}")
        lines.append(f"regressions: {len(self.regressions)}")
        for r in self.regressions:
            lines.append(
                f"  {r.item_id:<40} {r.family}/{r.metric}: {r.before:.3f} -> "
                + ("undefined" if r.after is None else f"{r.after:.3f}")
            )
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
    for family, metrics in FAMILY_COLUMNS.items():
        for metric, column in metrics.items():
            if f"{column}_a" not in shared:
                continue
            before = [_num(v) for v in shared[f"{column}_a"]]
            after = [_num(v) for v in shared[f"{column}_b"]]
            deltas.append(MetricDelta(family, metric, paired_delta(before, after, cases)))
            if (family, metric) in _HEADLINE:
                regressions += _regressed(shared["item_id"], family, metric, before, after)
    return Comparison(run_a, run_b, len(shared), tuple(deltas), tuple(regressions))


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
