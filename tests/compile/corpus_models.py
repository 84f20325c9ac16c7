"""The models of the compile corpus (test_compile_corpus.py), written here after the public
architectures of the programs users compile, at tiny sizes:

- NanoGPT: Karpathy's nanoGPT model.py (pre-norm GPT-2 blocks, one fused q/k/v projection
  split in three, causal F.scaled_dot_product_attention, LayerNorm with optional bias, tied
  token embedding and head, loss with ignore_index=-1, AdamW with decay/no-decay groups).
- MinGPT: Karpathy's minGPT model.py (explicit causal mask buffer and softmax attention,
  NewGELU written out with tanh, ModuleDict transformer).
- ResNet: torchvision's BasicBlock ResNet layout (stride-2 stages, 1x1 downsample shortcut,
  batch norm in training mode).
- DCGAN: the PyTorch DCGAN example (transposed-convolution generator, convolution
  discriminator with LeakyReLU, batch norm, BCE on the discriminator's sigmoid).
- LSTMLanguageModel: PyTorch's word_language_model example (embedding, multi-layer nn.LSTM
  carrying its hidden state between batches, tied decoder).
- VariableLengthClassifier: a small transformer encoder over token sequences of varying
  length (mean-pooled), for dynamic shapes.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# ---- nanoGPT


class NanoLayerNorm(nn.Module):
    """LayerNorm with an optional bias (PyTorch's has none to switch off)."""

    def __init__(self, dim: int, bias: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class NanoCausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int, bias: bool, dropout: float):
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width, bias=bias)
        self.c_proj = nn.Linear(width, width, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)
        self.heads, self.width, self.dropout = heads, width, dropout

    def forward(self, x):
        batch, length, width = x.size()
        q, k, v = self.c_attn(x).split(self.width, dim=2)
        q, k, v = (t.view(batch, length, self.heads, width // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(batch, length, width)
        return self.resid_dropout(self.c_proj(y))


class NanoMLP(nn.Module):
    def __init__(self, width: int, bias: bool, dropout: float):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * width, width, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class NanoBlock(nn.Module):
    def __init__(self, width: int, heads: int, bias: bool, dropout: float):
        super().__init__()
        self.ln_1 = NanoLayerNorm(width, bias)
        self.attn = NanoCausalSelfAttention(width, heads, bias, dropout)
        self.ln_2 = NanoLayerNorm(width, bias)
        self.mlp = NanoMLP(width, bias, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    def __init__(self, vocab=96, block_size=16, layers=2, heads=2, width=32, dropout=0.0, bias=True):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, width),
            wpe=nn.Embedding(block_size, width),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([NanoBlock(width, heads, bias, dropout) for _ in range(layers)]),
            ln_f=NanoLayerNorm(width, bias),
        ))
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, parameter in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(parameter, mean=0.0, std=0.02 / math.sqrt(2 * layers))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        length = idx.size(1)
        assert length <= self.block_size, f"Cannot forward sequence of length {length}"
        pos = torch.arange(0, length, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        parameters = {name: p for name, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in parameters.values() if p.dim() >= 2]
        no_decay = [p for p in parameters.values() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        # nanoGPT asks for the fused AdamW only on CUDA.
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)


# ---- minGPT


class NewGELU(nn.Module):
    """The GELU of Google BERT / OpenAI GPT, written out."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class MinCausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int, block_size: int, dropout: float):
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))
        self.heads, self.width = heads, width

    def forward(self, x):
        batch, length, width = x.size()
        q, k, v = self.c_attn(x).split(self.width, dim=2)
        k = k.view(batch, length, self.heads, width // self.heads).transpose(1, 2)
        q = q.view(batch, length, self.heads, width // self.heads).transpose(1, 2)
        v = v.view(batch, length, self.heads, width // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :length, :length] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(batch, length, width)
        return self.resid_dropout(self.c_proj(y))


class MinBlock(nn.Module):
    def __init__(self, width: int, heads: int, block_size: int, dropout: float):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = MinCausalSelfAttention(width, heads, block_size, dropout)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = nn.ModuleDict(dict(
            c_fc=nn.Linear(width, 4 * width),
            c_proj=nn.Linear(4 * width, width),
            act=NewGELU(),
            dropout=nn.Dropout(dropout),
        ))
        m = self.mlp
        self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlpf(self.ln_2(x))


class MinGPT(nn.Module):
    def __init__(self, vocab=96, block_size=16, layers=2, heads=2, width=32, dropout=0.0):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, width),
            wpe=nn.Embedding(block_size, width),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([MinBlock(width, heads, block_size, dropout) for _ in range(layers)]),
            ln_f=nn.LayerNorm(width),
        ))
        self.lm_head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx, targets=None):
        length = idx.size(1)
        pos = torch.arange(0, length, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


# ---- ResNet (torchvision's BasicBlock layout)


class BasicBlock(nn.Module):
    def __init__(self, inputs: int, planes: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inputs != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inputs, planes, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + identity)


class ResNet(nn.Module):
    def __init__(self, classes=10, widths=(8, 16, 32)):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        stages, inputs = [], widths[0]
        for index, width in enumerate(widths):
            stages += [BasicBlock(inputs, width, 1 if index == 0 else 2), BasicBlock(width, width, 1)]
            inputs = width
        self.layers = nn.Sequential(*stages)
        self.fc = nn.Linear(widths[-1], classes)

    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# ---- DCGAN


class Generator(nn.Module):
    def __init__(self, nz=8, ngf=8, channels=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),  # 4x4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),  # 8x8
            nn.ConvTranspose2d(ngf * 2, channels, 4, 2, 1, bias=False), nn.Tanh(),  # 16x16
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf=8, channels=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(channels, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),  # 8x8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid(),  # 1x1
        )

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


def dcgan_weights_init(module):
    name = type(module).__name__
    if "Conv" in name:
        nn.init.normal_(module.weight, 0.0, 0.02)
    elif "BatchNorm" in name:
        nn.init.normal_(module.weight, 1.0, 0.02)
        nn.init.zeros_(module.bias)


# ---- LSTM language model (word_language_model)


class LSTMLanguageModel(nn.Module):
    def __init__(self, tokens=64, width=16, hidden=16, layers=2, dropout=0.0):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(tokens, width)
        self.rnn = nn.LSTM(width, hidden, layers, dropout=dropout)
        self.decoder = nn.Linear(hidden, tokens)
        self.decoder.weight = self.encoder.weight  # tied (width == hidden)
        self.layers, self.hidden = layers, hidden
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, tokens, state):
        output, state = self.rnn(self.drop(self.encoder(tokens)), state)
        return F.log_softmax(self.decoder(self.drop(output)), dim=-1), state

    def init_hidden(self, batch, device):
        zeros = torch.zeros(self.layers, batch, self.hidden, device=device)
        return zeros, zeros.clone()


# ---- dynamic shapes


class VariableLengthClassifier(nn.Module):
    """Token sequences of any length: embedding, one pre-norm attention block, mean pool."""

    def __init__(self, tokens=64, width=32, heads=2, classes=4, longest=32):
        super().__init__()
        self.embed = nn.Embedding(tokens, width)
        self.position = nn.Embedding(longest, width)
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.head = nn.Linear(width, classes)
        self.heads, self.width = heads, width

    def forward(self, tokens):
        batch, length = tokens.shape
        x = self.embed(tokens) + self.position(torch.arange(length, device=tokens.device))
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(batch, length, self.width)
        x = x + self.proj(attended)
        x = x + self.mlp(self.norm2(x))
        return self.head(x.mean(dim=1))
