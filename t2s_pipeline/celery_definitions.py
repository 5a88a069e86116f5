"""The code location with the run's steps on Celery workers (``dagster-celery``, Redis broker).

Load it instead of ``t2s_pipeline.definitions`` (``deploy/workspace-celery.yaml``); start
workers with ``dagster-celery worker start -A dagster_celery.app -y deploy/celery.yaml``.
Every worker must reach the same Dagster instance (PostgreSQL) and the same results folder
(a shared filesystem path when workers run on other hosts).
"""

from dagster_celery import celery_executor

from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.definitions import build_definitions
from t2s_pipeline.project import default_cases

defs = build_definitions(T2SSettings(cases_dir=default_cases()), executor=celery_executor)
