"""The demo project fixtures of the pipeline tests, for the judge lane's end-to-end tests."""

from t2s_pipeline_tests.pipeline.conftest import demo_warehouse, guard_cache, instance, project

__all__ = ["demo_warehouse", "guard_cache", "instance", "project"]
