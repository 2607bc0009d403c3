"""One training step per family, on synthetic data made once on the device (no downloads, no
data loading in the timed loop: the suite measures the GPU, not a disk or a CPU pipeline).

`build(family, batch_size, device, tiny=False, wrap=...)` returns a `Trainable` whose `step()`
is one full training step (forward, loss, backward, optimiser update). `tiny` shrinks widths,
depths and inputs (not the structure) so the whole suite runs on a CPU in seconds; `wrap` is
applied to each trained network (DistributedDataParallel for the multi-GPU cases).
"""
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from . import nets_other, nets_text, nets_vision

#: Tiny mode also caps the batch: it checks that every step runs, it measures nothing.
TINY_MAX_BATCH = 4


@dataclass
class Trainable:
    step: Callable[[], None]
    parameters: int


def _identity(module: nn.Module) -> nn.Module:
    return module


def build(family: str, batch_size: int | None, device: str, *, tiny: bool = False,
          wrap: Callable[[nn.Module], nn.Module] = _identity) -> Trainable:
    try:
        builder = _BUILDERS[family]
    except KeyError:
        raise ValueError(f"no model for family {family!r} (families: {', '.join(_BUILDERS)})") from None
    torch.manual_seed(0)
    batch_size = batch_size or 1
    return builder(min(batch_size, TINY_MAX_BATCH) if tiny else batch_size, torch.device(device), tiny, wrap)


def _count(*modules: nn.Module) -> int:
    return sum(p.numel() for m in modules for p in m.parameters())


def _autocast(device: torch.device, mixed: bool):
    """bfloat16 autocast on a GPU for the mixed-precision families; a CPU runs them in fp32
    (tiny mode only checks that the step works)."""
    if mixed and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _classifier(net: nn.Module, batch: int, image: int, classes: int, device, wrap, *, mixed=False,
                optimiser=None) -> Trainable:
    model = wrap(net.to(device))
    optimiser = (optimiser or (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)))(model.parameters())
    images = torch.randn(batch, 3, image, image, device=device)
    labels = torch.randint(0, classes, (batch,), device=device)

    def step():
        optimiser.zero_grad(set_to_none=True)
        with _autocast(device, mixed):
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimiser.step()

    return Trainable(step, _count(net))


def _resnet18(batch, device, tiny, wrap):
    return _classifier(nets_vision.resnet18_cifar(8 if tiny else 64), batch, 16 if tiny else 32, 10, device, wrap)


def _resnet50(batch, device, tiny, wrap):
    net = nets_vision.resnet50(4, (1, 1, 1, 1)) if tiny else nets_vision.resnet50()
    return _classifier(net, batch, 32 if tiny else 224, 1000, device, wrap)


def _vit(batch, device, tiny, wrap):
    net = (nets_vision.VisionTransformer(32, 8, 32, 2, 2, 100) if tiny else nets_vision.VisionTransformer())
    return _classifier(net, batch, 32 if tiny else 224, 100 if tiny else 1000, device, wrap, mixed=True,
                       optimiser=lambda p: torch.optim.AdamW(p, lr=1e-4))


def _sequence_step(model, optimiser, inputs: tuple, targets, device, *, mixed=False, clip=None):
    def step():
        optimiser.zero_grad(set_to_none=True)
        with _autocast(device, mixed):
            logits = model(*inputs)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimiser.step()

    return step


def _transformer(batch, device, tiny, wrap):
    """Multi30k's vocabularies with minimum frequency 2 (German 7,853, English 5,893 words);
    sentences padded to 32 tokens."""
    source_vocab, target_vocab, length = (60, 50, 8) if tiny else (7853, 5893, 32)
    net = nets_text.Translator(source_vocab, target_vocab, *((16, 2, 1) if tiny else (512, 8, 6)), length=length)
    model = wrap(net.to(device))
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-4)
    source = torch.randint(0, source_vocab, (batch, length), device=device)
    target = torch.randint(0, target_vocab, (batch, length + 1), device=device)
    return Trainable(_sequence_step(model, optimiser, (source, target[:, :-1]), target[:, 1:], device), _count(net))


def _lm(batch, device, tiny, wrap):
    """Wikitext-2's 33,278-word vocabulary, 35-token sequences (bptt), SGD with clipping 0.25."""
    vocab, dim, length = (200, 16, 8) if tiny else (33278, 200, 35)
    net = nets_text.LstmLanguageModel(vocab, dim)
    model = wrap(net.to(device))
    optimiser = torch.optim.SGD(model.parameters(), lr=20)
    tokens = torch.randint(0, vocab, (batch, length + 1), device=device)
    step = _sequence_step(model, optimiser, (tokens[:, :-1],), tokens[:, 1:], device, clip=0.25)
    return Trainable(step, _count(net))


def _gpt2(batch, device, tiny, wrap):
    """GPT-2 small on 1024-token sequences, bfloat16 autocast, AdamW."""
    vocab, dim, heads, layers, length = (256, 32, 2, 2, 16) if tiny else (50257, 768, 12, 12, 1024)
    net = nets_text.Gpt(vocab, dim, heads, layers, length)
    model = wrap(net.to(device))
    optimiser = torch.optim.AdamW(model.parameters(), lr=6e-4)
    tokens = torch.randint(0, vocab, (batch, length + 1), device=device)
    step = _sequence_step(model, optimiser, (tokens[:, :-1],), tokens[:, 1:], device, mixed=True, clip=1.0)
    return Trainable(step, _count(net))


def _recommendation(batch, device, tiny, wrap):
    """ML-20M's 27,278 movies; each user vector holds ratings 1-5 at ~0.5 % of the items (the
    data set's density); loss: mean squared error over the rated items only (MMSE)."""
    items = 300 if tiny else 27278
    net = nets_other.recommendation_autoencoder(items, (16, 16, 32) if tiny else (512, 512, 1024))
    model = wrap(net.to(device))
    optimiser = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    rated = torch.rand(batch, items, device=device) < 0.005
    ratings = torch.randint(1, 6, (batch, items), device=device).float() * rated

    def step():
        optimiser.zero_grad(set_to_none=True)
        loss = ((model(ratings) - ratings) ** 2 * rated).sum() / rated.sum().clamp(min=1)
        loss.backward()
        optimiser.step()

    return Trainable(step, _count(net))


def _a3c(batch, device, tiny, wrap):
    """One worker's update: a 20-step rollout through the LSTM cell, then the actor-critic loss
    (policy gradient with entropy bonus, value regression); the batch size does not apply."""
    net = nets_other.ActorCritic(*((4, 16) if tiny else (32, 256)))
    model = wrap(net.to(device))
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-4)
    rollout = 4 if tiny else 20
    frames = torch.randn(rollout, 1, 1, 42, 42, device=device)
    actions = torch.randint(0, 6, (rollout, 1), device=device)
    rewards = torch.randn(rollout, 1, device=device)

    def step():
        optimiser.zero_grad(set_to_none=True)
        state = net.initial_state(device)
        policy_loss = value_loss = 0.0
        for t in range(rollout):
            logits, value, state = model(frames[t], state)
            log_probs = F.log_softmax(logits, dim=-1)
            advantage = rewards[t] - value
            entropy = -(log_probs.exp() * log_probs).sum()
            policy_loss = policy_loss - log_probs.gather(1, actions[t : t + 1]).sum() * advantage.detach().sum() \
                - 0.01 * entropy
            value_loss = value_loss + 0.5 * advantage.pow(2).sum()
        (policy_loss + 0.5 * value_loss).backward()
        optimiser.step()

    return Trainable(step, _count(net))


def _cyclegan(batch, device, tiny, wrap):
    """One CycleGAN iteration at 256x256 (monet2photo's size), batch 1 as the paper: both
    generators through the GAN and cycle-consistency losses (weight 10), then both
    discriminators on real and generated images (least-squares GAN loss)."""
    width, blocks, size = (4, 2, 32) if tiny else (64, 9, 256)
    g_ab, g_ba = (nets_vision.cyclegan_generator(width, blocks).to(device) for _ in range(2))
    d_a, d_b = (nets_vision.patchgan(width).to(device) for _ in range(2))
    nets = [wrap(n) for n in (g_ab, g_ba, d_a, d_b)]
    gab, gba, da, db = nets
    opt_g = torch.optim.Adam([*gab.parameters(), *gba.parameters()], lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam([*da.parameters(), *db.parameters()], lr=2e-4, betas=(0.5, 0.999))
    real_a = torch.randn(batch, 3, size, size, device=device)
    real_b = torch.randn(batch, 3, size, size, device=device)

    def step():
        opt_g.zero_grad(set_to_none=True)
        fake_b, fake_a = gab(real_a), gba(real_b)
        gan = ((db(fake_b) - 1) ** 2).mean() + ((da(fake_a) - 1) ** 2).mean()
        cycle = (gba(fake_b) - real_a).abs().mean() + (gab(fake_a) - real_b).abs().mean()
        (gan + 10 * cycle).backward()
        opt_g.step()
        opt_d.zero_grad(set_to_none=True)
        loss_d = 0.0
        for disc, real, fake in ((da, real_a, fake_a), (db, real_b, fake_b)):
            loss_d = loss_d + 0.5 * (((disc(real) - 1) ** 2).mean() + (disc(fake.detach()) ** 2).mean())
        loss_d.backward()
        opt_d.step()

    return Trainable(step, _count(g_ab, g_ba, d_a, d_b))


_BUILDERS = {
    "ResNet-18": _resnet18,
    "ResNet-50": _resnet50,
    "Transformer": _transformer,
    "LM": _lm,
    "Recommendation": _recommendation,
    "A3C": _a3c,
    "CycleGAN": _cyclegan,
    "GPT-2": _gpt2,
    "ViT": _vit,
}
FAMILIES = tuple(_BUILDERS)
