"""An ensemble of the benchmarked models (the three networks and the structured predictor):
the mean of their estimates.

Averaging models that weight the catalog differently cancels part of each one's errors; the
spread between members is added to the uncertainty. Same interface as PerformancePredictor
(job, predict, observe through the job).
"""
import numpy as np

from .estimator import Prediction


class EnsemblePredictor:
    architecture = "ensemble"

    def __init__(self, members):
        self.members = list(members)

    @property
    def catalog_(self):
        return self.members[0].catalog_

    @property
    def train_mae_(self):
        return float(np.mean([m.train_mae_ for m in self.members]))

    def job(self, features, profile=None):
        return EnsembleJob([m.job(features, profile) for m in self.members])

    def predict(self, features, profile=None):
        return self.job(features, profile).prediction()


class EnsembleJob:
    def __init__(self, jobs):
        self.jobs = jobs

    def observe(self, observation, learn: bool = True) -> None:
        for job in self.jobs:
            job.observe(observation, learn=learn)

    def prediction(self) -> Prediction:
        parts = [job.prediction() for job in self.jobs]
        rho = np.stack([p.rho for p in parts])
        log_tau = np.log(np.stack([p.tau for p in parts]))
        first = parts[0]
        return Prediction(
            workload=first.workload, partners=first.partners, gpu_types=first.gpu_types, configs=first.configs,
            rho=rho.mean(axis=0),
            rho_std=np.sqrt(np.mean([p.rho_std**2 for p in parts], axis=0) + rho.var(axis=0)),
            tau=np.exp(log_tau.mean(axis=0)),
            tau_std=np.sqrt(np.mean([p.tau_std**2 for p in parts], axis=0) + log_tau.var(axis=0)),
            rho_measured=first.rho_measured, tau_measured=first.tau_measured, low_confidence=first.low_confidence,
        )
