"""Run summaries (SPEC §10): every family's means with n and CI, EX by band, ceilings, diagnoses.

Nothing here decides: there is no pass mark. Families are never folded into one score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from t2s_pipeline.judge.report import section_markdown
from t2s_pipeline.scoring.components import COMPONENT_NAMES
from t2s_pipeline.scoring.stats import Mean, mean_with_ci, means_with_ci

CEILINGS: tuple[str, ...] = (
    "gold_failed",
    "gold_truncated",
    "candidate_truncated",
    "gold_cut_tie",
    "candidate_cut_tie",
    "no_usable_key",
    "oversized_shelf",
    "empty_vs_empty",
    "agent_error",
    "agent_timeout",
    "refused",
    "not_isolated",
    "no_probe",
    "gold_drift",
    "scorer_fault",
    "exact_but_partial",
    "permutation_bound",
)
COMPONENT_SETS = COMPONENT_NAMES

# family -> metric -> column of the per-item frame holding it
FAMILY_COLUMNS: dict[str, dict[str, str]] = {
    "retrieval": {
        "recall": "recall",
        "precision": "precision",
        "spurious": "spurious",
        "probe_recall": "probe_recall",
        "probe_precision": "probe_precision",
    },
    "columns": {"precision": "columns_precision", "recall": "columns_recall"},
    "cells": {"precision": "cells_precision", "recall": "cells_recall"},
    "component": {
        f"{name}_{side}": f"{name}_{side}"
        for name in COMPONENT_SETS
        for side in ("precision", "recall")
    },
    "exact": {"ex": "exact_match", "ex_presentation": "ex_presentation", "ex_ts": "ex_ts"},
}


# What the UI plots across runs (RunSummary.metadata): each family's headline means. The 16
# component part means and the retrieval probes stay in the markdown summary and the comparison.
PLOTTED: tuple[tuple[str, str], ...] = (
    ("exact", "ex"),
    ("exact", "ex_presentation"),
    ("exact", "ex_ts"),
    ("retrieval", "recall"),
    ("retrieval", "precision"),
    ("columns", "recall"),
    ("columns", "precision"),
    ("cells", "recall"),
    ("cells", "precision"),
)


@dataclass(frozen=True)
class RunSummary:
    """Everything a run's summary reports."""

    run_id: str
    n_items: int
    n_cases: int
    families: dict[str, dict[str, Mean]]
    ceilings: dict[str, int]
    ex_by_difficulty: dict[str, Mean]
    diagnoses: dict[str, dict[str, int]]  # band ("all" first) -> category -> count
    robustness: Mean
    extra: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "run_id": self.run_id,
            "n_items": self.n_items,
            "n_cases": self.n_cases,
            "families": {
                family: {metric: mean.to_json() for metric, mean in metrics.items()}
                for family, metrics in self.families.items()
            },
            "ceilings": dict(self.ceilings),
            "ex_by_difficulty": {band: m.to_json() for band, m in self.ex_by_difficulty.items()},
            "diagnoses": {band: dict(h) for band, h in self.diagnoses.items()},
            "robustness": self.robustness.to_json(),
            **self.extra,
        }

    def metadata(self) -> dict[str, float | int]:
        """The headline figures as flat numeric metadata, so the UI plots each across runs:
        each family's headline means (:data:`PLOTTED`) and EX per band, each with ``/ci_low``
        and ``/ci_high``, the ceilings that occurred (a zero is not plotted), robustness. The
        other means (component parts, retrieval probes) and the n of every mean are in the
        markdown summary; EX's n is plotted too (``exact/ex/n``)."""
        out: dict[str, float | int] = {"n_items": self.n_items, "n_cases": self.n_cases}

        def plot(key: str, mean: Mean) -> None:
            if mean.mean is None:
                return
            out[key] = round(mean.mean, 6)
            if mean.ci is not None:
                out[f"{key}/ci_low"] = round(mean.ci[0], 6)
                out[f"{key}/ci_high"] = round(mean.ci[1], 6)

        for family, metric in PLOTTED:
            mean = self.families.get(family, {}).get(metric)
            if mean is not None:
                plot(f"{family}/{metric}", mean)
        ex = self.families.get("exact", {}).get("ex")
        if ex is not None:
            out["exact/ex/n"] = ex.n
        for name, count in self.ceilings.items():
            if count:
                out[f"ceiling/{name}"] = count
        for band, mean in self.ex_by_difficulty.items():
            plot(f"ex_by_difficulty/{band}", mean)
        if self.robustness.mean is not None:
            out["robustness"] = round(self.robustness.mean, 6)
        return out

    def to_markdown(self) -> str:
        lines = [f"### Run `{self.run_id}`: {self.n_items} items over {self.n_cases} cases", ""]
        ex = self.families.get("exact", {}).get("ex")
        if ex is not None:
            failed = self.ceilings.get("gold_failed", 0)
            lines += [f"**EX {ex.of(self.n_items, failed)}**", ""]
        ex_ts = self.families.get("exact", {}).get("ex_ts")
        if ex_ts is not None and ex_ts.n:
            lines += [f"**EX on the test suite (ex_ts) {ex_ts}**", ""]
        lines += ["| family | metric | mean | 95% CI | n |", "|---|---|---|---|---|"]
        for family, metrics in self.families.items():
            for metric, mean in metrics.items():
                lines.append(f"| {family} | {metric} | {_cell(mean)} |")
        lines += ["", "| difficulty | EX | 95% CI | n |", "|---|---|---|---|"]
        lines += [f"| {band} | {_cell(m)} |" for band, m in self.ex_by_difficulty.items()]
        lines += ["", f"Robustness across phrasings: {self.robustness}", ""]
        lines += ["| ceiling | count |", "|---|---|"]
        lines += [f"| {name} | {count} |" for name, count in self.ceilings.items()]
        categories = sorted({c for h in self.diagnoses.values() for c in h})
        lines += ["", "| band | " + " | ".join(categories) + " |"]
        lines.append("|---|" + "---|" * len(categories))
        for band, histogram in self.diagnoses.items():
            counts = " | ".join(str(histogram.get(c, 0)) for c in categories)
            lines.append(f"| {band} | {counts} |")
        if "judge" in self.extra:
            judge = self.extra["judge"]
            assert isinstance(judge, Mapping)
            lines += ["", section_markdown(judge)]
        return "\n".join(lines)


def _cell(mean: Mean) -> str:
    if mean.mean is None:
        return f"undefined | - | {mean.n}"
    ci = "-" if mean.ci is None else f"[{mean.ci[0]:.3f}, {mean.ci[1]:.3f}]"
    return f"{mean.mean:.3f} | {ci} | {mean.n}"


def family_means(items: pd.DataFrame) -> dict[str, dict[str, Mean]]:
    """Mean, n and CI of every family metric present in the joined per-item frame."""
    cases = _cases(items)
    wanted = [
        (family, metric, column)
        for family, metrics in FAMILY_COLUMNS.items()
        for metric, column in metrics.items()
        if column in items
    ]
    means = means_with_ci([(_values(items[column]), cases) for _, _, column in wanted])
    families: dict[str, dict[str, Mean]] = {}
    for (family, metric, _), mean in zip(wanted, means, strict=True):
        families.setdefault(family, {})[metric] = mean
    return families


def ex_by_band(items: pd.DataFrame, band_column: str = "difficulty") -> dict[str, Mean]:
    """Exact-match rate per difficulty band (bands sorted by name)."""
    bands = sorted(items.groupby(band_column), key=lambda kv: str(kv[0]))
    means = means_with_ci([(_values(group["exact_match"]), _cases(group)) for _, group in bands])
    return {str(band): mean for (band, _), mean in zip(bands, means, strict=True)}


def diagnosis_histograms(
    items: pd.DataFrame, band_column: str = "difficulty"
) -> dict[str, dict[str, int]]:
    """Category counts for the whole run ("all") and per band."""
    out = {"all": _histogram(items["category"])}
    for band, group in sorted(items.groupby(band_column), key=lambda kv: str(kv[0])):
        out[str(band)] = _histogram(group["category"])
    return out


def robustness(items: pd.DataFrame) -> Mean:
    """Share of cases whose exact match is the same for every phrasing (cases with >= 2 items)."""
    by_case = items.groupby("case_id")["exact_match"]
    sizes, distinct = by_case.size(), by_case.nunique()
    return mean_with_ci([bool(d == 1) for s, d in zip(sizes, distinct, strict=True) if s >= 2])


def count_ceilings(counts: Mapping[str, int]) -> dict[str, int]:
    """Every ceiling of SPEC §10, zero when it did not occur, in the spec's order."""
    return {name: int(counts.get(name, 0)) for name in CEILINGS}


def _histogram(column: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in column.value_counts().sort_index().items()}


def _cases(items: pd.DataFrame) -> list[object] | None:
    """Each item's case, so intervals resample whole cases (its phrasings move together)."""
    return list(items["case_id"]) if "case_id" in items else None


def _values(column: pd.Series) -> list[float | None]:
    return [None if pd.isna(v) else float(v) for v in column]
