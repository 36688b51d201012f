"""One router module per resource, assembled in service.api.app."""
