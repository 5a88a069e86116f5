"""Statement suites the guard is measured against, beside the hostile cases in ``cases/hostile``.

:mod:`t2s_pipeline.suites.legitimate` is the over-blocking side: ordinary read-only SQL over
the demo warehouse, per engine, that the statement filter must never refuse.
"""
