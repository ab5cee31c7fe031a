"""The console: server-rendered HTMX pages beside the API (SPEC §7)."""
