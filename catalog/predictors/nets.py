"""The three architectures, one learned similarity each: attention of a new workload over the
catalog's workloads.

Every prediction is a weighted mean of the catalog's values for the same cell (the neighbours'
rho with the same partner on the same GPU type, or their throughput in the same
configuration) plus a small learned correction, bounded by tanh so a workload unlike any in the catalog cannot
extrapolate far from measured values. The architectures differ only in how a
neighbour's score sees the others:

- feedforward: each neighbour token scored on its own by an MLP (a deep set);
- rnn: a bidirectional GRU over the neighbours in order of feature distance;
- transformer: self-attention among the neighbour tokens.

Weighting the catalog's own rows keeps the output anchored to measured values; the learned part
is which workloads resemble the new one, from features, family and, once the job runs, how
well each neighbour agrees with its observations (the "fingerprint" token features).
"""
import torch
from torch import nn


class NeighbourNet(nn.Module):
    def __init__(self, architecture: str, token_dim: int, hidden: int = 32, max_correction: float = 0.2):
        super().__init__()
        self.architecture = architecture
        self.max_correction = max_correction
        self.embed = nn.Sequential(nn.Linear(token_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        if architecture == "feedforward":
            self.encoder = nn.Sequential(nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        elif architecture == "rnn":
            self.encoder = nn.GRU(hidden, hidden // 2, batch_first=True, bidirectional=True)
        elif architecture == "transformer":
            layer = nn.TransformerEncoderLayer(
                hidden, nhead=4, dim_feedforward=2 * hidden, dropout=0.0, batch_first=True
            )
            self.encoder = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)
        else:
            raise ValueError(f"unknown architecture {architecture!r}")
        self.score = nn.Linear(hidden, 1)
        self.correction = nn.Linear(hidden, 1)
        nn.init.zeros_(self.correction.weight)
        nn.init.zeros_(self.correction.bias)

    def forward(self, tokens: torch.Tensor, values: torch.Tensor, mask: torch.Tensor):
        """tokens (N, K, D), values (N, K), mask (N, K) True for real neighbours ->
        (prediction (N,), weights (N, K))."""
        hidden = self.embed(tokens)
        if self.architecture == "rnn":
            hidden, _ = self.encoder(hidden * mask.unsqueeze(-1))
        elif self.architecture == "transformer":
            hidden = self.encoder(hidden, src_key_padding_mask=~mask)
        else:
            hidden = self.encoder(hidden)
        scores = self.score(hidden).squeeze(-1).masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        pooled = (weights.unsqueeze(-1) * hidden).sum(dim=1)
        correction = self.max_correction * torch.tanh(self.correction(pooled).squeeze(-1))
        prediction = (weights * values).sum(dim=-1) + correction
        return prediction, weights
