"""The HTTP API (FastAPI), the only place that knows HTTP: the app, routes, schemas, presenters, error mapping, dependencies, the request guard and the static dashboard."""
