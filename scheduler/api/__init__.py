"""REST API of the scheduler app."""
