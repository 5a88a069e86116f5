"""Calibration of a run, as stored rows, asset metadata, markdown and a summary section.

Three lanes are compared with the human labels: the deterministic diagnosis on every labelled
item, the judge on the labelled items it answered, and the deterministic diagnosis on those same
items (so the two can be compared like for like). The judge's histogram is shown as calibrated
only when its agreement reaches the configured floor.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from t2s_pipeline.judge.calibration import Calibration, calibrate
from t2s_pipeline.judge.labels import AppliedLabels
from t2s_pipeline.store import ResultsStore

CALIBRATION_TABLE = "judge_calibration"
DETERMINISTIC, JUDGE, DETERMINISTIC_ON_JUDGED = "deterministic", "judge", "deterministic_on_judged"


@dataclass(frozen=True)
class CalibrationReport:
    """Every lane's agreement with the labels, and whether the judge may be trusted here."""

    floor: float
    judge_enabled: bool
    n_labels: int  # labels in the file
    stale: tuple[str, ...]  # labels written for another candidate
    lanes: tuple[Calibration, ...]
    judge_histogram: dict[str, int]

    def lane(self, name: str) -> Calibration:
        return next(c for c in self.lanes if c.lane == name)

    @property
    def judge_calibrated(self) -> bool:
        return self.judge_enabled and self.lane(JUDGE).calibrated(self.floor)

    def frame(self) -> pd.DataFrame:
        rows = [
            {
                "lane": c.lane,
                "n": c.n,
                "agreement": c.agreement,
                "kappa": c.kappa,
                "jaccard": c.jaccard,
                "calibrated": c.calibrated(self.floor) if c.lane == JUDGE else None,
                "agreement_floor": self.floor,
                "judge_enabled": self.judge_enabled,
                "n_labels": self.n_labels,
                "n_stale": len(self.stale),
                "confusion_json": json.dumps(c.matrix.to_json()),
            }
            for c in self.lanes
        ]
        return pd.DataFrame(rows).astype(
            {
                "agreement": "Float64",
                "kappa": "Float64",
                "jaccard": "Float64",
                "calibrated": "boolean",
            }
        )

    def metadata(self) -> dict[str, float | int | bool | str]:
        out: dict[str, float | int | bool | str] = {
            "judge_enabled": self.judge_enabled,
            "judge_calibrated": self.judge_calibrated,
            "agreement_floor": self.floor,
            "labels": self.n_labels,
            "labels_stale": len(self.stale),
        }
        for c in self.lanes:
            out[f"{c.lane}/n"] = c.n
            if c.agreement is not None:
                out[f"{c.lane}/agreement"] = round(c.agreement, 4)
            if c.kappa is not None:
                out[f"{c.lane}/kappa"] = round(c.kappa, 4)
            if c.jaccard is not None:
                out[f"{c.lane}/jaccard"] = round(c.jaccard, 4)
        return out

    def to_markdown(self) -> str:
        lines = [
            f"Labels: {self.n_labels} ({len(self.stale)} stale). "
            f"Agreement floor: {self.floor:.2f}.",
            "",
            "| lane | n | agreement | kappa | set Jaccard |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {c.lane} | {c.n} | {_fmt(c.agreement)} | {_fmt(c.kappa)} | {_fmt(c.jaccard)} |"
            for c in self.lanes
        ]
        for c in self.lanes:
            if c.n:
                lines += [
                    "",
                    f"**{c.lane}** (rows: label, columns: predicted)",
                    "",
                    c.matrix.to_markdown(),
                ]
        lines += ["", self.histogram_markdown()]
        return "\n".join(lines)

    def histogram_markdown(self) -> str:
        if not self.judge_enabled:
            return "Judge histogram: judge disabled."
        judge = self.lane(JUDGE)
        mark = (
            "calibrated"
            if self.judge_calibrated
            else f"NOT calibrated: agreement {_fmt(judge.agreement)} on n={judge.n} "
            f"below floor {self.floor:.2f}"
        )
        counts = ", ".join(f"{k}: {v}" for k, v in self.judge_histogram.items()) or "(empty)"
        return f"Judge histogram ({mark}): {counts}"


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def build_report(
    labels: AppliedLabels,
    n_labels: int,
    deterministic: Mapping[str, str],
    judged: Mapping[str, str],
    floor: float,
    judge_enabled: bool,
    deterministic_sets: Mapping[str, frozenset[str]] | None = None,
) -> CalibrationReport:
    """Calibrate the lanes; ``judged`` holds only items the judge gave a category (its set is
    that category alone)."""
    human, sets = labels.categories, labels.sets
    on_judged = {i: c for i, c in deterministic.items() if i in judged}
    histogram: dict[str, int] = {}
    for category in judged.values():
        histogram[category] = histogram.get(category, 0) + 1
    return CalibrationReport(
        floor=floor,
        judge_enabled=judge_enabled,
        n_labels=n_labels,
        stale=labels.stale,
        lanes=(
            calibrate(DETERMINISTIC, human, deterministic, sets, deterministic_sets),
            calibrate(JUDGE, human, judged, sets),
            calibrate(DETERMINISTIC_ON_JUDGED, human, on_judged, sets, deterministic_sets),
        ),
        judge_histogram=dict(sorted(histogram.items())),
    )


def judge_section(store: ResultsStore, run_id: str) -> dict[str, object]:
    """The run summary's ``judge`` extra: histogram (marked calibrated or not), failures,
    cache hits and misses, and each lane's agreement. Empty when the lane never ran."""
    calibration = store.read(CALIBRATION_TABLE, run_id)
    verdicts = store.read("judge_diagnoses", run_id)
    if calibration.empty and verdicts.empty:
        return {}
    section: dict[str, object] = {}
    if not verdicts.empty:
        categories = verdicts["category"].dropna().astype(str)
        failures = verdicts["failure_class"].dropna().astype(str)
        section["histogram"] = {
            k: int(v) for k, v in categories.value_counts().sort_index().items()
        }
        section["failures"] = {k: int(v) for k, v in failures.value_counts().sort_index().items()}
        section["cache_hits"] = int(verdicts["cached"].astype(bool).sum())
        section["cache_misses"] = int((~verdicts["cached"].astype(bool)).sum())
    for row in calibration.to_dict("records"):
        section["enabled"] = bool(row["judge_enabled"])
        if row["lane"] == JUDGE:
            section["calibrated"] = (
                bool(row["calibrated"]) if not pd.isna(row["calibrated"]) else False
            )
        section[str(row["lane"])] = {
            "n": int(row["n"]),
            "agreement": None if pd.isna(row["agreement"]) else float(row["agreement"]),
            "kappa": None if pd.isna(row["kappa"]) else float(row["kappa"]),
            "jaccard": None if pd.isna(row.get("jaccard", None)) else float(row["jaccard"]),
        }
    return {"judge": section}


def section_markdown(section: Mapping[str, object]) -> str:
    """The run summary's judge paragraph, from :func:`judge_section`'s ``judge`` entry."""
    if not section.get("enabled"):
        return "Judge: disabled." + _lane_line(section, DETERMINISTIC)
    mark = "calibrated" if section.get("calibrated") else "NOT calibrated"
    histogram = section.get("histogram") or {}
    assert isinstance(histogram, Mapping)
    counts = ", ".join(f"{k}: {v}" for k, v in histogram.items()) or "(empty)"
    return (
        f"Judge histogram ({mark}): {counts}. Failures: {section.get('failures') or {}}; "
        f"cache hits {section.get('cache_hits', 0)}, misses {section.get('cache_misses', 0)}."
        + _lane_line(section, JUDGE)
        + _lane_line(section, DETERMINISTIC)
    )


def _lane_line(section: Mapping[str, object], lane: str) -> str:
    figures = section.get(lane)
    if not isinstance(figures, Mapping):
        return ""
    return (
        f"\n{lane} vs labels: agreement {_fmt(figures['agreement'])}, "
        f"kappa {_fmt(figures['kappa'])}, set Jaccard {_fmt(figures.get('jaccard'))} "
        f"(n={figures['n']})."
    )
