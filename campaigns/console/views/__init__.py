"""Console views, one module per page."""
