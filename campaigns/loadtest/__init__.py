"""The locust scenario `manage.py loadtest` runs (see its module docstring)."""
