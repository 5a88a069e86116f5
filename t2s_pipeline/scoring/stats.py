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


def defined(values: Iterable[float | None]) -> list[float]:
    """Values that are defined: None and NaN are undefined, not zero."""
    return [float(v) for v in values if v is not None and not _is_nan(v)]


def mean_with_ci(values: Iterable[float | bool | None]) -> Mean:
    """Mean of the defined values with a percentile bootstrap interval.

    >>> mean_with_ci([1.0, None, 0.0]).n
    2
    """
    sample = defined(float(v) if isinstance(v, bool) else v for v in values)
    return _summarise(sample)


def paired_delta(before: Sequence[float | None], after: Sequence[float | None]) -> Mean:
    """Mean of per-item ``after - before`` over items defined on both sides (paired bootstrap)."""
    deltas = [
        float(a) - float(b)
        for b, a in zip(before, after, strict=True)
        if b is not None and a is not None and not _is_nan(b) and not _is_nan(a)
    ]
    return _summarise(deltas)


def _summarise(sample: list[float]) -> Mean:
    if not sample:
        return Mean(None, 0, None)
    mean = float(np.mean(sample))
    if len(sample) < 2:
        return Mean(mean, 1, None)
    if max(sample) == min(sample):
        return Mean(mean, len(sample), (mean, mean))
    result = stats.bootstrap(
        (np.asarray(sample),),
        np.mean,
        confidence_level=0.95,
        n_resamples=_RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(_SEED),
    )
    low, high = result.confidence_interval
    return Mean(mean, len(sample), (float(low), float(high)))


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)
