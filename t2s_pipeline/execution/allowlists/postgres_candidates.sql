WITH io AS (
  SELECT unnest(ARRAY[typinput, typoutput, typreceive, typsend, typmodin, typmodout, typanalyze, typsubscript])::oid AS f FROM pg_type
  UNION SELECT unnest(ARRAY[aggtransfn, aggfinalfn, aggcombinefn, aggserialfn, aggdeserialfn, aggmtransfn, aggminvtransfn, aggmfinalfn])::oid FROM pg_aggregate
  UNION SELECT unnest(ARRAY[oprrest, oprjoin])::oid FROM pg_operator
  UNION SELECT prosupport::oid FROM pg_proc
  UNION SELECT conproc::oid FROM pg_conversion
  UNION SELECT unnest(ARRAY[prsstart, prstoken, prsend, prsheadline, prslextype])::oid FROM pg_ts_parser
  UNION SELECT unnest(ARRAY[tmplinit, tmpllexize])::oid FROM pg_ts_template
  UNION SELECT amproc::oid FROM pg_amproc
  UNION SELECT unnest(ARRAY[rngcanonical, rngsubdiff])::oid FROM pg_range
), bad_types AS (SELECT oid FROM pg_type WHERE typname IN ('internal','cstring','trigger','event_trigger','language_handler','fdw_handler','index_am_handler','table_am_handler','tsm_handler','regclass','regproc','regprocedure','regoper','regoperator','regtype','regnamespace','regrole','regconfig','regdictionary','regcollation','pg_lsn','pg_snapshot','txid_snapshot','xid','xid8','cid','tid','aclitem','pg_node_tree','pg_ndistinct','pg_dependencies','pg_mcv_list','pg_brin_bloom_summary','pg_brin_minmax_multi_summary','refcursor'))
SELECT DISTINCT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'pg_catalog' AND p.prokind IN ('f','a','w')
  AND p.oid NOT IN (SELECT f FROM io WHERE f <> 0)
  AND p.prorettype NOT IN (SELECT oid FROM bad_types)
  AND NOT (p.proargtypes::oid[] && ARRAY(SELECT oid FROM bad_types))
  AND (NOT p.proretset OR p.proname IN ('generate_series','generate_subscripts','unnest','json_each','json_each_text','jsonb_each','jsonb_each_text','json_array_elements','json_array_elements_text','jsonb_array_elements','jsonb_array_elements_text','json_object_keys','jsonb_object_keys','json_to_recordset','jsonb_to_recordset','json_populate_recordset','jsonb_populate_recordset','jsonb_path_query','regexp_matches','regexp_split_to_table','string_to_table'))
  AND p.proname !~ '^(pg_|has_|lo_|loread|lowrite|loimport|loexport|txid_|_|binary_upgrade|to_reg|set_config|current_setting|inet_|dblink|nextval|currval|setval|lastval|query_to|table_to|cursor_to|schema_to|database_to|obj_description|col_description|shobj_description|version$|current_database|current_query|current_schema|setseed|getpgusername|getdatabaseencoding|mxid_age|row_security|satisfies_hash|makeaclitem|ts_stat|ts_debug|querytree|xmlvalidate|gen_random|acl|format_type|num_nonnulls|pg|amvalidate|fmgr_|plpgsql_|postgresql_fdw|enum_send|ts_rewrite|int4inc|int8inc|int8_sum|numeric_inc|nameconcatoid|oidvectortypes|xid)'
ORDER BY 1;
