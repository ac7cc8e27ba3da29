"""Six small training programs written the way PyTorch scripts are, against namespaces: ``ns.torch`` is
``autograd`` or ``torch``, ``ns.nn`` is ``nn`` or ``torch.nn``, ``ns.F`` their functional module, ``ns.optim``
``nn.optim`` or ``torch.optim``, ``ns.D`` the distributions. One body serves both libraries: that a PyTorch
program runs after renaming its imports is what these test.

Each program builds its model, optionally loads given initial weights (NumPy arrays by state-dict key), trains
for ``steps`` steps on deterministic data and returns ``(losses, initial_state)``. Where a real script draws
random numbers inside a step (a VAE's noise, a policy's actions, a GAN's latent vectors), the draw comes from
NumPy so that the two libraries see the same numbers."""

from __future__ import annotations

import numpy as np


def _load(ns, model, state, device):
    init = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
    if state is not None:
        model.load_state_dict({k: ns.torch.tensor(v) for k, v in state.items()})
    return model.to(device), init


def _t(ns, a, device, dtype=None):
    t = ns.torch.tensor(a) if dtype is None else ns.torch.tensor(a, dtype=dtype)
    return t.to(device)


# ------------------------------------------------------------------------------------------ LSTM language model
def lstm_language_model(ns, device="cpu", state=None, steps=4):
    """Word-level LM: embedding, 2-layer LSTM, tied-free decoder; truncated BPTT carrying the hidden state
    (detached) from batch to batch; gradient clipping; SGD."""
    nn, F = ns.nn, ns.F
    vocab, emb, hid, bptt, batch = 23, 12, 16, 6, 3

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(vocab, emb)
            self.rnn = nn.LSTM(emb, hid, num_layers=2, dropout=0.0)
            self.decoder = nn.Linear(hid, vocab)

        def forward(self, x, hidden):
            out, hidden = self.rnn(self.encoder(x), hidden)
            return self.decoder(out).view(-1, vocab), hidden

        def init_hidden(self, bsz):
            w = next(self.parameters())
            return (w.new_zeros(2, bsz, hid), w.new_zeros(2, bsz, hid))

    model, init = _load(ns, RNNModel(), state, device)
    opt = ns.optim.SGD(model.parameters(), lr=0.5)
    data = np.random.default_rng(1).integers(0, vocab, size=(bptt * steps + 1, batch))
    hidden = model.init_hidden(batch)
    losses = []
    for i in range(steps):
        x = _t(ns, data[i * bptt:(i + 1) * bptt], device)
        y = _t(ns, data[i * bptt + 1:(i + 1) * bptt + 1], device).reshape(-1)
        hidden = tuple(h.detach() for h in hidden)
        model.zero_grad()
        out, hidden = model(x, hidden)
        loss = F.cross_entropy(out, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        losses.append(loss.item())
    return losses, init


# ------------------------------------------------------------------------- GRU classifier on packed sequences
def gru_classifier(ns, device="cpu", state=None, steps=4):
    """Variable-length sequences padded, packed (unsorted) into a bidirectional GRU; the two final hidden states
    classify; Adam with weight decay."""
    torch, nn, F = ns.torch, ns.nn, ns.F
    rnn_utils = nn.utils.rnn
    feat, hid, classes = 5, 8, 3

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(feat, hid, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(2 * hid, classes)

        def forward(self, padded, lengths):
            packed = rnn_utils.pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
            _, h = self.gru(packed)
            return self.fc(torch.cat([h[-2], h[-1]], dim=1))

    model, init = _load(ns, Classifier(), state, device)
    opt = ns.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    rng = np.random.default_rng(2)
    losses = []
    for _ in range(steps):
        lengths = rng.integers(1, 7, size=4)
        seqs = [_t(ns, rng.standard_normal((n, feat)).astype(np.float32), device) for n in lengths]
        labels = _t(ns, rng.integers(0, classes, size=4), device)
        padded = rnn_utils.pad_sequence(seqs, batch_first=True)
        opt.zero_grad()
        loss = F.cross_entropy(model(padded, torch.tensor(lengths.tolist())), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, init


# ----------------------------------------------------------------------------------------------------- DCGAN
def dcgan(ns, device="cpu", state=None, steps=3):
    """A generator of transposed convolutions with batch norm and a convolutional discriminator with an in-place
    LeakyReLU, trained adversarially with BCE and Adam(betas=(0.5, 0.999)); fakes detached for D's step."""
    torch, nn = ns.torch, ns.nn
    nz = 6

    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, 12, 4, 1, 0, bias=False), nn.BatchNorm2d(12), nn.ReLU(True),
                nn.ConvTranspose2d(12, 1, 4, 2, 1, bias=False), nn.Tanh())

        def forward(self, z):
            return self.main(z)

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(1, 8, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(8, 1, 4, 1, 0, bias=False), nn.Sigmoid())

        def forward(self, x):
            return self.main(x).view(-1, 1).squeeze(1)

    class GAN(nn.Module):  # one state dict for both nets
        def __init__(self):
            super().__init__()
            self.G, self.D = Generator(), Discriminator()

    gan, init = _load(ns, GAN(), state, device)
    criterion = nn.BCELoss()
    opt_d = ns.optim.Adam(gan.D.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_g = ns.optim.Adam(gan.G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    rng = np.random.default_rng(3)
    losses = []
    for _ in range(steps):
        real = _t(ns, np.tanh(rng.standard_normal((4, 1, 8, 8))).astype(np.float32), device)
        noise = _t(ns, rng.standard_normal((4, nz, 1, 1)).astype(np.float32), device)
        ones, zeros = torch.full((4,), 1.0, device=device), torch.full((4,), 0.0, device=device)
        gan.D.zero_grad()
        err_real = criterion(gan.D(real), ones)
        err_real.backward()
        fake = gan.G(noise)
        err_fake = criterion(gan.D(fake.detach()), zeros)
        err_fake.backward()
        opt_d.step()
        gan.G.zero_grad()
        err_g = criterion(gan.D(fake), ones)
        err_g.backward()
        opt_g.step()
        losses += [(err_real + err_fake).item(), err_g.item()]
    return losses, init


# ------------------------------------------------------------------------------------------------------- VAE
def vae(ns, device="cpu", state=None, steps=4):
    """A variational autoencoder: encoder to (mu, logvar), the reparameterisation trick, a sigmoid decoder; the
    loss is the summed BCE plus the KL term; Adam."""
    torch, nn, F = ns.torch, ns.nn, ns.F

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(20, 12)
            self.fc21, self.fc22 = nn.Linear(12, 3), nn.Linear(12, 3)
            self.fc3, self.fc4 = nn.Linear(3, 12), nn.Linear(12, 20)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar, eps):
            std = torch.exp(0.5 * logvar)
            return mu + eps * std

        def decode(self, z):
            return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

        def forward(self, x, eps):
            mu, logvar = self.encode(x.view(-1, 20))
            return self.decode(self.reparameterize(mu, logvar, eps)), mu, logvar

    model, init = _load(ns, VAE(), state, device)
    opt = ns.optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(4)
    losses = []
    for _ in range(steps):
        x = _t(ns, (rng.random((5, 20)) > 0.5).astype(np.float32), device)
        eps = _t(ns, rng.standard_normal((5, 3)).astype(np.float32), device)  # torch.randn_like(std) in a script
        opt.zero_grad()
        recon, mu, logvar = model(x, eps)
        bce = F.binary_cross_entropy(recon, x.view(-1, 20), reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = bce + kld
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, init


# ---------------------------------------------------------------------------------------- policy gradient
def policy_gradient(ns, device="cpu", state=None, steps=4, sample=None):
    """REINFORCE on a small contextual bandit: a policy network's Categorical over 3 actions, log_prob times
    the normalised returns plus an entropy bonus; Adam. ``sample(probs) -> actions`` (NumPy) replaces
    ``dist.sample()`` when two libraries must see the same actions."""
    nn, F = ns.nn, ns.F

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(4, 16)
            self.dropout = nn.Dropout(p=0.0)
            self.affine2 = nn.Linear(16, 3)

        def forward(self, x):
            return F.softmax(self.affine2(F.relu(self.dropout(self.affine1(x)))), dim=1)

    policy, init = _load(ns, Policy(), state, device)
    opt = ns.optim.Adam(policy.parameters(), lr=1e-2)
    rng = np.random.default_rng(5)
    losses = []
    for _ in range(steps):
        states = rng.standard_normal((8, 4)).astype(np.float32)
        probs = policy(_t(ns, states, device))
        m = ns.D.Categorical(probs)
        action = m.sample() if sample is None else _t(ns, sample(probs.detach().cpu().numpy()), device)
        reward = (action.cpu().numpy() == np.argmax(states[:, :3], axis=1)).astype(np.float32)
        returns = _t(ns, reward, device)
        returns = (returns - returns.mean()) / (returns.std() + 1e-6)
        loss = -(m.log_prob(action) * returns).sum() - 0.01 * m.entropy().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, init


# ------------------------------------------------------------------------------------- seq2seq Transformer
def seq2seq_transformer(ns, device="cpu", state=None, steps=3):
    """A sequence-to-sequence nn.Transformer (encoder and decoder, batch_first, a causal target mask and key
    padding masks) on a copy-and-reverse task with teacher forcing; label-smoothed cross-entropy ignoring the
    padding; AdamW and a warmup LambdaLR schedule."""
    torch, nn, F = ns.torch, ns.nn, ns.F
    vocab, d_model, pad = 11, 16, 0

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_emb = nn.Embedding(vocab, d_model, padding_idx=pad)
            self.tgt_emb = nn.Embedding(vocab, d_model, padding_idx=pad)
            self.pos = nn.Parameter(torch.zeros(1, 8, d_model))
            self.transformer = nn.Transformer(d_model, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                              dim_feedforward=32, dropout=0.0, batch_first=True)
            self.out = nn.Linear(d_model, vocab)

        def forward(self, src, tgt):
            tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1]).to(src.device)
            h = self.transformer(self.src_emb(src) + self.pos[:, :src.shape[1]],
                                 self.tgt_emb(tgt) + self.pos[:, :tgt.shape[1]], tgt_mask=tgt_mask,
                                 src_key_padding_mask=src == pad, tgt_key_padding_mask=tgt == pad,
                                 memory_key_padding_mask=src == pad)
            return self.out(h)

    model, init = _load(ns, Seq2Seq(), state, device)
    opt = ns.optim.AdamW(model.parameters(), lr=3e-3)
    sched = ns.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / 2))
    rng = np.random.default_rng(6)
    losses = []
    for _ in range(steps):
        src = rng.integers(2, vocab, size=(3, 6))
        src[0, 4:] = pad  # a shorter sequence
        tgt = np.concatenate([np.ones((3, 1), np.int64), src[:, ::-1]], axis=1)  # BOS then the reversal
        tgt[0, 1:3] = pad
        src_t, tgt_t = _t(ns, src, device), _t(ns, tgt, device)
        logits = model(src_t, tgt_t[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), tgt_t[:, 1:].reshape(-1), ignore_index=pad,
                               label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses, init


PROGRAMS = {"lstm_language_model": lstm_language_model, "gru_classifier": gru_classifier, "dcgan": dcgan,
            "vae": vae, "policy_gradient": policy_gradient, "seq2seq_transformer": seq2seq_transformer}
