"""``python -m t2s_pipeline.run --config FILE``: evaluate one configuration without Dagster.

The same stages as the ``eval_run`` job, in order, in this process: for a notebook, a script,
a debugger, or a machine without a Dagster instance. Results go to the same store.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from t2s_pipeline.errors import T2SError
from t2s_pipeline.run.runner import run_config_plainly


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m t2s_pipeline.run", description=__doc__)
    parser.add_argument("--config", type=Path, required=True, help="the run configuration")
    parser.add_argument("--results", type=Path, default=Path(".t2s/results"))
    parser.add_argument("--registry", type=Path, default=Path(".t2s/runs"))
    parser.add_argument("--decisions", type=Path, default=Path("decisions"))
    parser.add_argument("--rerun", action="store_true", help="evaluate again under a new id")
    args = parser.parse_args(argv)
    try:
        done = run_config_plainly(
            args.config, args.results, args.registry, args.rerun, decisions=args.decisions
        )
    except T2SError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if done.already_evaluated:
        print(f"run {done.spec.run_id} was evaluated before; results kept (--rerun for a new one)")
    print(done.summary.to_markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
