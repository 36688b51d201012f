"""Demo data for `bgix demo`, the dashboard tests and docs: the sample events as Parquet (events) and as a
Paimon table pypaimon writes, with pypaimon's own index scan of it (paimon_events). Nothing else in the
service stands on it."""
