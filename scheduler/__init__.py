"""Scheduler: tenants, jobs and their life cycle, allocations and solve runs."""
