"""What users and admins see and set of tenants sharing the cluster (docs/tenants.md): their
quotas, shares, usage and energy. Reads in selectors.py, writes in services.py, live events in
live.py; the numbers themselves are written by the accounting and the rounds."""
