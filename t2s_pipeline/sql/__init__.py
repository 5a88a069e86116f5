"""Everything that reads SQL text: parse, qualify, clean, origins, component sets, twins.

Entry points: ``analysis.analyse_query`` (one query), ``pair.analyse_pair`` (gold and candidate
prepared identically), ``canonical.canonical_form`` (twins) and ``schema.read_schema``.
"""
