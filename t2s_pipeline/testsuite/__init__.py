"""Test-suite accuracy (issue 22): neighbour databases of the pinned snapshot, distilled so that
they tell each gold query apart from its near misses, and ``ex_ts`` read over them."""
