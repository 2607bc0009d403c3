"""REST API of the catalog app."""
