"""Catalog: GPU types, workloads and measured performance (throughput, power) that the
predictors learn from and the optimiser plans with."""
