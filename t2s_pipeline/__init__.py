"""t2s_pipeline: an evaluation harness for text-to-SQL systems (a Dagster code location)."""

import logging

# Every statement the project parses is untrusted text (SUT answers, hostile attacks), and
# each parse outcome is recorded with its reason. sqlglot's own warnings about that text
# ("falling back to parsing as a Command", "not supported in ...") only repeat it on stderr.
logging.getLogger("sqlglot").setLevel(logging.ERROR)
