"""The two ways long work reports back, defined once for the whole package."""

from __future__ import annotations

from collections.abc import Callable

# Progress of counted work: called with (done, total) as items finish.
Progress = Callable[[int, int], None]
# A line of news about long work (which suite is running, what was skipped).
Note = Callable[[str], None]
