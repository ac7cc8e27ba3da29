"""A small character-level GPT trained on a text that ships with Python (``pydoc_data.topics``: the help
texts of the language reference), after nanoGPT.

    python examples/char_gpt.py                      # cpu: a small config whose loss falls in ~2 minutes
    python examples/char_gpt.py --config baby        # nanoGPT's "baby" config (6 layers, 6 heads, 384 dims,
                                                     # context 256), meant for a GPU

Token + position embeddings, pre-LayerNorm blocks with causal multi-head self-attention (the fused
``scaled_dot_product_attention``) and a GELU MLP, weight tying between the embedding and the output layer,
AdamW with linear warmup then cosine decay, gradient clipping, bf16 autocast on cuda. Reports the loss and
tokens/s, evaluates on a held-out split, and samples text at the end.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import autograd as ag  # noqa: E402
import nn  # noqa: E402
from nn import functional as F  # noqa: E402

CONFIGS = {
    "cpu": dict(n_layer=2, n_head=4, n_embd=64, block_size=64, batch_size=16, dropout=0.0, lr=3e-3, steps=1500,
                warmup=50, eval_every=250),  # about 100 s on 2 cores
    "baby": dict(n_layer=6, n_head=6, n_embd=384, block_size=256, batch_size=64, dropout=0.2, lr=1e-3, steps=5000,
                 warmup=100, eval_every=250),
    "tiny": dict(n_layer=1, n_head=2, n_embd=32, block_size=16, batch_size=4, dropout=0.0, lr=3e-3, steps=5,
                 warmup=2, eval_every=5),  # smoke tests
}


def load_text():
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head, self.dropout = n_head, dropout

    def forward(self, x):
        B, T, C = x.shape  # noqa: N806
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                           is_causal=True)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd),
                                 nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd, dropout):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList([Block(n_embd, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, 0.02)

    def forward(self, idx, targets=None):
        T = idx.shape[1]  # noqa: N806
        pos = ag.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    @ag.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            cond = idx if idx.shape[1] <= self.block_size else idx[:, -self.block_size:]
            logits, _ = self(cond)
            logits = logits[:, -1, :].float() / temperature
            if top_k is not None:
                v, _ = logits.topk(min(top_k, logits.shape[-1]))
                logits = logits.masked_fill(logits < v[:, [-1]], -math.inf)
            probs = F.softmax(logits, dim=-1)
            nxt = ag.multinomial(probs, num_samples=1)
            idx = ag.cat([idx, nxt], dim=1)
        return idx


def get_batch(data, block_size, batch_size, rng, device):
    ix = rng.integers(0, len(data) - block_size - 1, size=batch_size)
    x = np.stack([data[i:i + block_size] for i in ix])
    y = np.stack([data[i + 1:i + 1 + block_size] for i in ix])
    return ag.tensor(x, device=device), ag.tensor(y, device=device)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", choices=["auto", *CONFIGS], default="auto", help="auto: baby on cuda, cpu on cpu")
    p.add_argument("--device", default=None)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--time-budget", type=float, default=None, help="stop training after this many seconds")
    p.add_argument("--sample-len", type=int, default=300)
    p.add_argument("--seed", type=int, default=1337)
    args = p.parse_args(argv)
    device = args.device or ("cuda" if ag.cuda.is_available() else "cpu")
    cfg = dict(CONFIGS["baby" if device.startswith("cuda") else "cpu"] if args.config == "auto"
               else CONFIGS[args.config])
    steps = args.steps or cfg["steps"]
    use_bf16 = device.startswith("cuda")

    text = load_text()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]
    print(f"text: {len(text):,} characters, vocabulary {len(chars)}; device {device}; config {cfg}")

    ag.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = GPT(len(chars), cfg["block_size"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"], cfg["dropout"]).to(device)
    print(f"parameters: {sum(p.numel() for p in model.parameters()):,}")
    decay = [p for n_, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n_, p in model.named_parameters() if p.dim() < 2]
    opt = nn.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                         lr=cfg["lr"], betas=(0.9, 0.99))
    sched = nn.optim.lr_scheduler.SequentialLR(opt, [
        nn.optim.lr_scheduler.LinearLR(opt, start_factor=0.01, total_iters=cfg["warmup"]),
        nn.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps - cfg["warmup"], 1), eta_min=cfg["lr"] / 10),
    ], milestones=[cfg["warmup"]])

    def estimate(split, iters=5):
        model.eval()
        src = train_data if split == "train" else val_data
        losses = []
        with ag.no_grad(), ag.autocast("cuda", dtype=ag.bfloat16, enabled=use_bf16):
            for _ in range(iters):
                x, y = get_batch(src, cfg["block_size"], cfg["batch_size"], rng, device)
                losses.append(float(model(x, y)[1]))
        model.train()
        return float(np.mean(losses))

    first = estimate("val")
    print(f"step 0: val loss {first:.4f} (uniform would be {math.log(len(chars)):.4f})")
    t0 = time.perf_counter()
    tokens = 0
    for step in range(1, steps + 1):
        x, y = get_batch(train_data, cfg["block_size"], cfg["batch_size"], rng, device)
        with ag.autocast("cuda", dtype=ag.bfloat16, enabled=use_bf16):
            _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        tokens += x.numel()
        if step % cfg["eval_every"] == 0 or step == steps:
            el = time.perf_counter() - t0
            print(f"step {step}: train loss {float(loss):.4f}, val loss {estimate('val'):.4f}, "
                  f"lr {sched.get_last_lr()[0]:.2e}, {tokens / el:,.0f} tokens/s")
        if args.time_budget is not None and time.perf_counter() - t0 > args.time_budget:
            print(f"time budget reached at step {step}")
            break
    last = estimate("val")
    print(f"val loss {first:.4f} -> {last:.4f} in {time.perf_counter() - t0:.1f} s "
          f"({tokens / (time.perf_counter() - t0):,.0f} tokens/s)")
    start = ag.tensor([[stoi["\n"]]], device=device)
    out = model.generate(start, args.sample_len, temperature=0.8, top_k=20)[0].tolist()
    print("sample:\n" + "".join(chars[i] for i in out))
    return first, last


if __name__ == "__main__":
    main()
