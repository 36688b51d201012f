"""The create_global_index build job (PySpark or in-process); entry point service.build_job.main. Re-exports nothing."""
