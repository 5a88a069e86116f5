"""One evaluation run, stage by stage, without Dagster: the library under the assets.

Each stage module owns its rows (builders and readers) and one ``materialise`` function that
reads the tables it needs and writes its own (declared in :mod:`t2s_pipeline.tables`). The
assets call the same functions; :func:`t2s_pipeline.run.runner.run_partition` calls them in
``STAGES`` order (:mod:`t2s_pipeline.run.stages`), so a partition can be evaluated from a test, a script or a notebook.
"""
