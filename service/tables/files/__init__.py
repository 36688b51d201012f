"""Plain tables: Parquet/ORC/CSV/JSON files under a location, with row ids, snapshots and index files kept in
the bgix warehouse (service.catalog). source (the TableSource) · plan (what a build reads and writes) ·
rowids (position ids, row_id_column ids, unindexed ranges) · reader (a task's file slices as Arrow)."""
