"""Statement suites the guard is measured against; both ship inside the package.

``suites/hostile/*.yaml`` (:data:`HOSTILE_SUITE`) holds the attacks, each with the outcome it
must get, and their controls. :mod:`t2s_pipeline.suites.legitimate` is the over-blocking side:
ordinary read-only SQL over the demo warehouse, per engine, that the statement filter must
never refuse.
"""

from pathlib import Path

HOSTILE_SUITE = Path(__file__).resolve().parent / "hostile"
"""The hostile suite's folder inside the installed package."""
