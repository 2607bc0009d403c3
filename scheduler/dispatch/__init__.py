"""A job's execution on the nodes: what each node's agent must run (assignments.py), what the
agents report of it (progress.py: progress, its end, the throughput it observed, which becomes
a catalog measurement linked to the job; report_rules.py: what a report may not contradict, the
job's checkpoint; stops.py: runs that stop to be resumed, and the handover of a moved job from
the node that ran it to its next run), its requeue when a node or GPU is lost (requeue.py,
on telemetry's signals: receivers.py) and which measurements an agent may write
(measurement_rule.py). The agents' endpoints are in api/."""
