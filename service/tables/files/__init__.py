"""Plain tables: Parquet/ORC/CSV/JSON files under a location, with row ids, snapshots and index files kept in
the bgix warehouse (service.catalog). files_source (the TableSource) · plan (what a build reads and writes) ·
rowids (row_id_column ids, unindexed ranges) · slice_reader (a task's file slices as Arrow)."""
