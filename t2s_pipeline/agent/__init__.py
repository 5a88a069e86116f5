"""The built-in baseline agent: BM25 retrieval over DDL and examples, nearest-example SQL."""
