"""REST API of the telemetry app."""
