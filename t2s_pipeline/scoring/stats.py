"""Honest aggregation: means that leave undefined values out and always carry n and a 95% CI."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy import stats

from t2s_pipeline.spread import cores

_RESAMPLES = 2000
_SEED = 20251
_CONFIDENCE = 0.95


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


THREADS_FROM = 2000
"""Values (summed over a batch) from which :func:`means_with_ci` uses two threads: numpy's
draws, gathers and sums release the GIL, so two intervals are resampled at once."""

Series = tuple[Sequence[float | bool | None], Sequence[object] | None]
"""Values and their clusters (or None), as :func:`mean_with_ci` takes them."""


def means_with_ci(batch: Sequence[Series]) -> list[Mean]:
    """:func:`mean_with_ci` of every series, in order: the same figures, two at a time on two
    threads when the batch is large (a 10,000-item summary: 3.2 s -> 1.7 s).

    >>> [m.n for m in means_with_ci([([1.0, None], None), ([0.0, 1.0, 1.0], None)])]
    [1, 3]
    """
    if len(batch) < 2 or sum(len(values) for values, _ in batch) < THREADS_FROM or cores() < 2:
        return [mean_with_ci(values, clusters) for values, clusters in batch]
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="t2s-bootstrap") as pool:
        return list(pool.map(lambda series: mean_with_ci(*series), batch))


def mean_and_n(values: Iterable[float | bool | None]) -> Mean:
    """The mean and n of :func:`mean_with_ci`, without its interval (no resampling), for
    figures shown without one (an asset's metadata).

    >>> mean_and_n([1.0, None, 0.0, True])
    Mean(mean=0.6666666666666666, n=3, ci=None)
    """
    numbers = [float(v) for v in values if v is not None]
    sample = np.asarray([v for v in numbers if not math.isnan(v)])
    return Mean(float(sample.mean()) if len(sample) else None, len(sample), None)


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
    low, high = percentile_interval(
        np.asarray(list(sums.values())), np.asarray(list(counts.values()), dtype=float)
    )
    return Mean(mean, len(sample), (float(low), float(high)))


def percentile_interval(sums: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """The 95% percentile bootstrap interval of the item mean over resampled clusters.

    The same interval ``scipy.stats.bootstrap`` gives for ``(sums, counts)`` with
    ``paired=True, method="percentile", n_resamples=_RESAMPLES`` and a generator seeded with
    ``_SEED`` (the resampled indices, their sums and the quantiles are computed alike, so the
    figures are equal to the last bit: test in ``scoring/test_aggregation.py``), without its
    input checks and its extra copy of the index matrix. Draws for one cluster count are made
    once per process: a summary asks for many means over the same clusters."""
    indices = _resampled_indices(len(sums))
    total = sums[indices].sum(axis=-1)
    if counts.min() == counts.max():
        # Every cluster holds as many items (whole numbers), so every resample holds n times
        # that many, exactly what summing the drawn counts gives: half the gathering.
        theta = total / (counts[0] * len(counts))
    else:
        theta = total / counts[indices].sum(axis=-1)
    alpha = (1 - _CONFIDENCE) / 2  # as scipy computes it: 0.025000000000000022
    low, high = stats.quantile(theta, np.asarray([alpha, 1 - alpha]), axis=-1)
    return float(low), float(high)


_KEPT_BYTES = 256 * 2**20
"""Resample indices kept for later means, at most this many bytes (a 10,000-cluster draw is
80 MB): the least recently used go first."""
_kept: OrderedDict[int, np.ndarray] = OrderedDict()
_kept_lock = threading.Lock()


def _resampled_indices(n: int) -> np.ndarray:
    """Which cluster each resample draws, one row per resample (read-only). Drawn as scipy
    draws them (int64) and kept as int32: the same values, and gathering with half the bytes
    is about twice as fast."""
    with _kept_lock:
        found = _kept.get(n)
        if found is not None:
            _kept.move_to_end(n)
            return found
    drawn = np.random.default_rng(_SEED).integers(0, n, (_RESAMPLES, n)).astype(np.int32)
    drawn.setflags(write=False)
    with _kept_lock:
        _kept[n] = drawn
        while sum(kept.nbytes for kept in _kept.values()) > _KEPT_BYTES and len(_kept) > 1:
            _kept.popitem(last=False)
        if drawn.nbytes > _KEPT_BYTES:
            _kept.pop(n, None)
    return drawn


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)
