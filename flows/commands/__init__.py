"""CLI command groups, one module each, each exposing register(app)."""
