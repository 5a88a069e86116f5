"""Public benchmark import: Spider and BIRD gold files and prediction files.

A benchmark's questions become an ordinary case folder (one YAML file per question, a
``domain.yaml`` whose ``database`` names one SQLite file per ``db_id``), and a prediction file
becomes a replay file, so a published system's outputs are scored like any other run.

- :mod:`~t2s_pipeline.benchmarks.spider`, :mod:`~t2s_pipeline.benchmarks.bird`: read the files.
- :mod:`~t2s_pipeline.benchmarks.hardness`: Spider's easy/medium/hard/extra bands.
- :mod:`~t2s_pipeline.benchmarks.databases`: find and validate the SQLite files.
- :mod:`~t2s_pipeline.benchmarks.writer`: write the case folder and its manifest.
- :mod:`~t2s_pipeline.benchmarks.predictions`: prediction files to replay JSONL and a config.
- :mod:`~t2s_pipeline.benchmarks.official`: the official evaluators' EX, for reconciliation.
"""
