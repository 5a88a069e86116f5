"""Honest aggregation: means that leave undefined values out and always carry n and a 95% CI."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

_RESAMPLES = 2000
_SEED = 20251


@dataclass(frozen=True)
class Mean:
    """A mean with its n and a 95% bootstrap interval (None when n = 0)."""

    mean: float | None
    n: int
    ci: tuple[float, float] | None

    def to_json(self) -> dict[str, object]:
        return {"mean": self.mean, "n": self.n, "ci": None if self.ci is None else list(self.ci)}

    def __str__(self) -> str:
        if self.mean is None:
            return f"undefined (n={self.n})"
        ci = "" if self.ci is None else f" [{self.ci[0]:.3f}, {self.ci[1]:.3f}]"
        return f"{self.mean:.3f}{ci} (n={self.n})"

    def of(self, total: int, gold_failed: int = 0) -> str:
        """The figure with its n out of every item, saying why items are missing.

        >>> Mean(0.25, 1030, (0.22, 0.28)).of(1034, gold_failed=4)
        '0.250 [0.220, 0.280] (n=1030 of 1034, 4 gold failed)'
        >>> Mean(0.5, 4, None).of(4)
        '0.500 (n=4)'
        """
        text = str(self)
        if total == self.n:
            return text
        why = f", {gold_failed} gold failed" if gold_failed else ""
        return text.removesuffix(f"(n={self.n})") + f"(n={self.n} of {total}{why})"


def defined(values: Iterable[float | None]) -> list[float]:
    """Values that are defined: None and NaN are undefined, not zero."""
    return [float(v) for v in values if v is not None and not _is_nan(v)]


def mean_with_ci(
    values: Iterable[float | bool | None], clusters: Sequence[object] | None = None
) -> Mean:
    """Mean of the defined values with a percentile bootstrap interval.

    With ``clusters`` (one label per value, e.g. the case of each item), whole clusters are
    resampled: the phrasings of one case tend to succeed or fail together, so resampling
    them as if independent would make the interval too narrow. The mean and n stay per item.

    >>> mean_with_ci([1.0, None, 0.0]).n
    2
    """
    numbers = [float(v) if isinstance(v, bool) else v for v in values]
    labels: Sequence[object] = clusters if clusters is not None else range(len(numbers))
    kept = [(label, float(v)) for label, v in zip(labels, numbers, strict=True) if v is not None]
    return _summarise([(label, v) for label, v in kept if not math.isnan(v)])


def paired_delta(
    before: Sequence[float | None],
    after: Sequence[float | None],
    clusters: Sequence[object] | None = None,
) -> Mean:
    """Mean of per-item ``after - before`` over items defined on both sides (paired bootstrap,
    resampling whole ``clusters`` when given, as in :func:`mean_with_ci`)."""
    labels: Sequence[object] = clusters if clusters is not None else range(len(before))
    kept = [
        (label, float(a) - float(b))
        for label, b, a in zip(labels, before, after, strict=True)
        if b is not None and a is not None
    ]
    return _summarise([(label, d) for label, d in kept if not math.isnan(d)])


def _summarise(kept: list[tuple[object, float]]) -> Mean:
    if not kept:
        return Mean(None, 0, None)
    sample = np.asarray([v for _, v in kept])
    mean = float(sample.mean())
    if len(sample) < 2:
        return Mean(mean, 1, None)
    if sample.max() == sample.min():
        return Mean(mean, len(sample), (mean, mean))
    sums: dict[object, float] = {}
    counts: dict[object, int] = {}
    for label, value in kept:
        sums[label] = sums.get(label, 0.0) + value
        counts[label] = counts.get(label, 0) + 1
    if len(sums) < 2:  # one cluster: nothing independent to resample
        return Mean(mean, len(sample), None)
    result = stats.bootstrap(
        (np.asarray(list(sums.values())), np.asarray(list(counts.values()), dtype=float)),
        _ratio,
        paired=True,
        vectorized=True,
        confidence_level=0.95,
        n_resamples=_RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(_SEED),
    )
    low, high = result.confidence_interval
    return Mean(mean, len(sample), (float(low), float(high)))


def _ratio(sums: np.ndarray, counts: np.ndarray, axis: int = -1) -> np.ndarray:
    """The item mean of a resample of clusters: its summed values over its summed counts."""
    return np.asarray(sums.sum(axis=axis) / counts.sum(axis=axis))


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)
