"""The admin console: Cluster, Jobs, Predictions, Solver and Trade-off pages (docs/dashboard.md)."""
