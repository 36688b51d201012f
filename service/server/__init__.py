"""The web process's runtime beside HTTP: settings, the build-job runner and its runner processes, the worker group of `bgix serve --workers N`, allocator tuning and the job log lines."""
