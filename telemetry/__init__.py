"""Telemetry: the cluster's inventory (nodes, GPUs), agent registration and heartbeats."""
