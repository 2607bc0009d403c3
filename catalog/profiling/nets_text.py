"""Sequence networks of the suite: the Transformer-base translation model, the LSTM language
model of PyTorch's word_language_model example (the one Gavel ran) and a GPT-2-small-shaped
decoder-only transformer. Sizes are arguments so the tiny mode shrinks them."""
import torch
from torch import nn


class Translator(nn.Module):
    """Vaswani et al. 2017 base: d=512, 8 heads, 6 + 6 layers, feed-forward 2048, with source and
    target embeddings and an output projection over the target vocabulary."""

    def __init__(self, source_vocab: int, target_vocab: int, dim: int = 512, heads: int = 8, layers: int = 6,
                 length: int = 32):
        super().__init__()
        self.source = nn.Embedding(source_vocab, dim)
        self.target = nn.Embedding(target_vocab, dim)
        self.position = nn.Parameter(torch.zeros(1, length, dim))
        self.core = nn.Transformer(dim, heads, layers, layers, 4 * dim, dropout=0.1, batch_first=True)
        self.out = nn.Linear(dim, target_vocab)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(length), persistent=False)

    def forward(self, source, target):
        length = target.shape[1]
        hidden = self.core(self.source(source) + self.position[:, : source.shape[1]],
                           self.target(target) + self.position[:, :length], tgt_mask=self.causal[:length, :length])
        return self.out(hidden)


class LstmLanguageModel(nn.Module):
    """word_language_model defaults: embedding 200, 2-layer LSTM of 200 units, decoder over the vocabulary."""

    def __init__(self, vocab: int, dim: int = 200, layers: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, layers, dropout=0.2, batch_first=True)
        self.decode = nn.Linear(dim, vocab)

    def forward(self, tokens):
        hidden, _ = self.lstm(self.embed(tokens))
        return self.decode(hidden)


class Gpt(nn.Module):
    """GPT-2 small (Radford et al. 2019): 12 pre-norm decoder layers, d=768, 12 heads, 1024
    positions, 50,257-token vocabulary, output projection tied to the token embedding."""

    def __init__(self, vocab: int = 50257, dim: int = 768, heads: int = 12, layers: int = 12, length: int = 1024):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(length, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(length), persistent=False)

    def forward(self, tokens):
        length = tokens.shape[1]
        hidden = self.tokens(tokens) + self.position(torch.arange(length, device=tokens.device))
        hidden = self.blocks(hidden, mask=self.causal[:length, :length], is_causal=True)
        return self.norm(hidden) @ self.tokens.weight.T
