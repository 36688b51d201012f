"""Metrics and log lines of the service (Prometheus registry, log format)."""
