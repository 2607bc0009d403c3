"""The recommendation autoencoder and the A3C actor-critic of the suite (the reference
implementations Gavel ran, written out)."""
import torch
from torch import nn


def recommendation_autoencoder(items: int, hidden=(512, 512, 1024)) -> nn.Module:
    """Kuchaiev & Ginsburg 2017 (NVIDIA DeepRecommender): items-512-512-1024 encoder with SELU,
    dropout 0.8 on the code, and the mirrored decoder back to the items."""
    sizes = [items, *hidden]
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [nn.Linear(a, b), nn.SELU()]
    layers.append(nn.Dropout(0.8))
    back = sizes[::-1]
    for index, (a, b) in enumerate(zip(back, back[1:])):
        layers += [nn.Linear(a, b)] + ([nn.SELU()] if index < len(back) - 2 else [])
    return nn.Sequential(*layers)


class ActorCritic(nn.Module):
    """ikostrikov/pytorch-a3c: four 3x3 stride-2 convolutions of 32 channels on a 1x42x42
    frame, an LSTM cell of 256, a policy head of 6 actions and a value head."""

    def __init__(self, channels: int = 32, hidden: int = 256, frame: int = 42, actions: int = 6):
        super().__init__()
        convs, inputs = [], 1
        for _ in range(4):
            convs += [nn.Conv2d(inputs, channels, 3, 2, 1), nn.ELU()]
            inputs = channels
        self.convs = nn.Sequential(*convs, nn.Flatten())
        side = frame
        for _ in range(4):
            side = (side + 1) // 2
        self.cell = nn.LSTMCell(channels * side * side, hidden)
        self.policy = nn.Linear(hidden, actions)
        self.value = nn.Linear(hidden, 1)
        self.hidden = hidden

    def forward(self, frame, state):
        h, c = self.cell(self.convs(frame), state)
        return self.policy(h), self.value(h), (h, c)

    def initial_state(self, device):
        zeros = torch.zeros(1, self.hidden, device=device)
        return zeros, zeros.clone()
