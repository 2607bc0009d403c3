"""Inference services beside training (docs/services.md): a long-running service with a
latency SLO (P99 <= L ms) whose T_min is derived every round from its traffic, not typed.

The pure core (no Django; simulate uses it too): latency.py (the latency model and its
calibration), forecast.py (the request rate a round plans for), replicas.py (how many replicas,
and the steps per second each must give), validation.py (what a service may not ask for). The
Django shell around it lives beside them."""
