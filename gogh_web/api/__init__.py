"""API plumbing shared by every app: parsing limits, pagination, errors, permissions."""
