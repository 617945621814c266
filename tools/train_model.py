#!/usr/bin/python3
"""Train fplab's small character-level language model on the KJV Bible.

Run with Debian's Python/torch (python3-torch 1.13):

    nice -n 19 /usr/bin/python3 tools/train_model.py            # full run
    nice -n 19 /usr/bin/python3 tools/train_model.py --resume   # continue after a crash

Outputs (see docs/model.md):
    model/data/kjv-char.safetensors   weights + metadata (config, vocab, ...)
    model/data/heldout.txt            first 120,000 chars of the validation split
    model/data/training_log.csv       step, train loss, val loss, tok/s, elapsed

Intermediate checkpoints go to --ckpt-dir (default /tmp/fplab-train), never
into the repository.

The model definition here (class CharLM) is the reference that the C++
forward pass reimplements; tools/make_golden_logits.py imports it.
"""

import argparse
import csv
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(REPO, "model", "data")

FORMAT = "fplab-char-lm-v1"
VAL_EVERY = 20  # every 20th verse is validation (5 %)
HELDOUT_CHARS = 120_000

CONFIG = dict(
    vocab_size=None,  # filled in from the text
    d_model=128,
    n_layers=4,
    n_heads=4,
    ffn_dim=384,
    context=256,
    rope_theta=10000.0,
    norm_eps=1e-5,
)


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

REF_RE = re.compile(r"^([1-3]?[A-Za-z]+)(\d+):(\d+) ")


def load_kjv_text():
    """Whole KJV text, one verse per line, verse references removed.

    `bible -f Gen1:1-Rev22:21` (package bible-kjv, data from bible-kjv-text)
    turns pretty-printing off, so it prints one verse per line as
    "<BookAbbrev><chapter>:<verse> <text>".  We strip the reference prefix
    and keep the verse text unchanged; verses are joined with "\\n" and the
    text ends with a "\\n".  Nothing else is changed (case, punctuation and
    apostrophes are kept as printed; the output is pure ASCII).
    """
    raw = subprocess.run(
        ["bible", "-f", "Gen1:1-Rev22:21"], check=True, stdout=subprocess.PIPE
    ).stdout.decode("ascii")
    lines = raw.split("\n")
    assert lines[-1] == "", "expected output to end with a newline"
    lines = lines[:-1]
    assert len(lines) == 31102, len(lines)
    out = []
    for ln in lines:
        m = REF_RE.match(ln)
        assert m, ln
        out.append(ln[m.end():])
    return "\n".join(out) + "\n"


def split_text(text):
    """Validation = every 20th verse (verses 19, 39, 59, ... counting from 0).

    Interleaved, so the validation verses come from every book and measure
    how well the model generalises within the KJV's language.  (A first
    version held out the last 5 % of the text, the later epistles and
    Revelation: that measured a shift between books, 0.18 nats/char above
    the training loss at every step, more than training could close.)
    Both parts keep the one-verse-per-line form and end with "\\n".
    """
    verses = text[:-1].split("\n")
    train = [v for i, v in enumerate(verses) if i % VAL_EVERY != VAL_EVERY - 1]
    val = [v for i, v in enumerate(verses) if i % VAL_EVERY == VAL_EVERY - 1]
    return "\n".join(train) + "\n", "\n".join(val) + "\n"


# --------------------------------------------------------------------------
# Model (reference for the C++ implementation)
# --------------------------------------------------------------------------


def rmsnorm(x, w, eps):
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return rmsnorm(x, self.weight, self.eps)


def rope_cos_sin(T, head_dim, theta, device=None):
    inv_freq = 1.0 / (
        theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim)
    )
    pos = torch.arange(T, dtype=torch.int64).float()
    freqs = torch.outer(pos, inv_freq)  # [T, head_dim/2]
    emb = torch.cat([freqs, freqs], dim=-1)  # [T, head_dim]
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Attention(nn.Module):
    def __init__(self, d, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d // n_heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, D = x.shape
        H, hd = self.n_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, hd).transpose(1, 2)  # [B,H,T,hd]
        k = self.k_proj(x).view(B, T, H, hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, H, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)  # [B,H,T,T]
        att = att.masked_fill(mask, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = att @ v  # [B,H,T,hd]
        y = y.transpose(1, 2).reshape(B, T, D)
        return self.o_proj(y)


class MLP(nn.Module):
    def __init__(self, d, ffn):
        super().__init__()
        self.gate_proj = nn.Linear(d, ffn, bias=False)
        self.up_proj = nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.input_layernorm = RMSNorm(d, cfg["norm_eps"])
        self.self_attn = Attention(d, cfg["n_heads"])
        self.post_attention_layernorm = RMSNorm(d, cfg["norm_eps"])
        self.mlp = MLP(d, cfg["ffn_dim"])

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class Inner(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["d_model"])
        self.layers = nn.ModuleList([Layer(cfg) for _ in range(cfg["n_layers"])])
        self.norm = RMSNorm(cfg["d_model"], cfg["norm_eps"])


class CharLM(nn.Module):
    """Llama/Qwen2-style decoder; parameter names match HF Llama."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)
        self.model = Inner(cfg)
        self.lm_head = nn.Linear(cfg["d_model"], cfg["vocab_size"], bias=False)
        hd = cfg["d_model"] // cfg["n_heads"]
        cos, sin = rope_cos_sin(cfg["context"], hd, cfg["rope_theta"])
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def init_weights(self, std=0.02):
        for name, p in self.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                nn.init.ones_(p)
            elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
                nn.init.normal_(p, 0.0, std / math.sqrt(2 * self.cfg["n_layers"]))
            else:
                nn.init.normal_(p, 0.0, std)

    def forward(self, tokens):
        B, T = tokens.shape
        assert T <= self.cfg["context"]
        cos = self.rope_cos[:T]
        sin = self.rope_sin[:T]
        mask = torch.ones(T, T, dtype=torch.bool, device=tokens.device).triu(1)
        x = self.model.embed_tokens(tokens)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.model.norm(x))


def tensor_names(n_layers):
    names = ["model.embed_tokens.weight"]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        names += [
            p + "input_layernorm.weight",
            p + "self_attn.q_proj.weight",
            p + "self_attn.k_proj.weight",
            p + "self_attn.v_proj.weight",
            p + "self_attn.o_proj.weight",
            p + "post_attention_layernorm.weight",
            p + "mlp.gate_proj.weight",
            p + "mlp.up_proj.weight",
            p + "mlp.down_proj.weight",
        ]
    names += ["model.norm.weight", "lm_head.weight"]
    return names


# --------------------------------------------------------------------------
# safetensors (minimal writer/reader; no external package)
# --------------------------------------------------------------------------

_DT = {"F32": np.dtype("<f4"), "I32": np.dtype("<i4"), "I64": np.dtype("<i8")}


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, np.ndarray) written in this order."""
    header = {}
    blobs = []
    off = 0
    for name, arr in tensors:
        dt = next(k for k, v in _DT.items() if v == arr.dtype.newbyteorder("<"))
        b = np.ascontiguousarray(arr, dtype=_DT[dt]).tobytes()
        header[name] = {
            "dtype": dt,
            "shape": list(arr.shape),
            "data_offsets": [off, off + len(b)],
        }
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((-len(hj)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    """Returns (ordered dict name -> np.ndarray, metadata dict)."""
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    assert n % 8 == 0
    header = json.loads(buf[8 : 8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    data = buf[8 + n :]
    out = {}
    end_max = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = info["data_offsets"]
        dt = _DT[info["dtype"]]
        arr = np.frombuffer(data[b:e], dtype=dt).reshape(info["shape"])
        assert arr.nbytes == e - b
        out[name] = arr.copy()
        end_max = max(end_max, e)
    assert end_max == len(data), "trailing bytes in data section"
    return out, meta


def model_from_safetensors(path):
    tensors, meta = read_safetensors(path)
    assert meta["format"] == FORMAT
    cfg = json.loads(meta["config"])
    vocab = json.loads(meta["vocab"])
    assert len(vocab) == cfg["vocab_size"]
    model = CharLM(cfg)
    sd = {k: torch.from_numpy(v) for k, v in tensors.items()}
    model.load_state_dict(sd, strict=True)
    return model, cfg, vocab, meta


# --------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@torch.no_grad()
def eval_loss(model, data, ctx, max_windows=None, batch=32):
    """Mean next-char cross entropy (nats) over non-overlapping windows.

    Window j covers data[j*ctx : j*ctx + ctx + 1]: inputs are the first ctx
    chars, targets the next ctx chars (so every char after the first is
    predicted exactly once, each with 0..ctx-1 chars of context restricted
    to its own window).  A final partial window is included.  If max_windows
    is given, only evenly spaced windows are used (cheap periodic estimate).
    """
    model.eval()
    n_pred = len(data) - 1
    starts = list(range(0, n_pred, ctx))
    if max_windows is not None and len(starts) > max_windows:
        step = len(starts) / max_windows
        starts = [starts[int(i * step)] for i in range(max_windows)]
    total, count = 0.0, 0
    full = [s for s in starts if s + ctx + 1 <= len(data)]
    part = [s for s in starts if s + ctx + 1 > len(data)]
    for i in range(0, len(full), batch):
        idx = torch.tensor(full[i : i + batch])
        w = data[idx[:, None] + torch.arange(ctx + 1)[None, :]]
        logits = model(w[:, :-1])
        loss = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="sum"
        )
        total += loss.item()
        count += w[:, 1:].numel()
    for s in part:
        w = data[s:][None, :]
        logits = model(w[:, :-1])
        total += F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="sum"
        ).item()
        count += w.shape[1] - 1
    model.train()
    return total / count


def lr_at(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    p = (step - args.warmup) / max(1, args.steps - args.warmup)
    p = min(1.0, p)
    return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * p))


def export(model, path, vocab, cfg, val_loss, train_tokens, seed, extra_meta=None):
    sd = model.state_dict()
    names = tensor_names(cfg["n_layers"])
    assert set(names) == set(sd.keys()), set(sd.keys()) ^ set(names)
    tensors = [(n, sd[n].detach().cpu().float().numpy()) for n in names]
    meta = {
        "config": json.dumps(cfg, separators=(",", ":")),
        "vocab": json.dumps(vocab, ensure_ascii=True),
        "format": FORMAT,
        "val_loss": f"{val_loss:.6f}",
        "train_tokens": str(int(train_tokens)),
        "seed": str(seed),
    }
    if extra_meta:
        meta.update({k: str(v) for k, v in extra_meta.items()})
    write_safetensors(path, tensors, meta)
    # Round trip with our own reader.
    back, bmeta = read_safetensors(path)
    assert list(back.keys()) == names, "tensor order changed"
    for n, a in tensors:
        assert back[n].dtype == np.float32 and back[n].shape == a.shape, n
        assert np.array_equal(back[n], a), n
    assert bmeta == meta
    assert json.loads(bmeta["config"]) == cfg
    assert json.loads(bmeta["vocab"]) == vocab
    # Also check header layout rules.
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        hdr = json.loads(f.read(n))
    off = 0
    for name in names:
        b, e = hdr[name]["data_offsets"]
        assert b == off, name
        off = e
    print(f"wrote {path} ({os.path.getsize(path)} bytes), round trip OK", flush=True)


def save_ckpt(path, model, opt, step, gen, tokens, best, elapsed):
    tmp = path + ".tmp"
    torch.save(
        dict(
            model=model.state_dict(),
            opt=opt.state_dict(),
            step=step,
            gen=gen.get_state(),
            tokens=tokens,
            best=best,
            elapsed=elapsed,
            torch_rng=torch.get_rng_state(),
        ),
        tmp,
    )
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--steps", type=int, default=2500)
    ap.add_argument("--batch", type=int, default=24)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-windows", type=int, default=128)
    ap.add_argument("--ckpt-every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ckpt-dir", default="/tmp/fplab-train")
    ap.add_argument("--out-dir", default=DATA_DIR)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--max-minutes", type=float, default=75.0,
                    help="stop early after this much training time (0 = no limit); "
                         "the best checkpoint is exported")
    ap.add_argument("--stop-after", type=int, default=0,
                    help="save last.pt and exit (no export) once this step is reached; "
                         "with --resume and a different --steps this replays a changed schedule")
    ap.add_argument("--export-only", action="store_true",
                    help="skip training; export the best checkpoint from --ckpt-dir")
    ap.add_argument("--bench", type=int, default=0, help="time N steps and exit")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    os.makedirs(args.ckpt_dir, exist_ok=True)
    os.makedirs(args.out_dir, exist_ok=True)

    text = load_kjv_text()
    vocab = sorted(set(text))
    stoi = {c: i for i, c in enumerate(vocab)}
    train_text, val_text = split_text(text)
    print(f"text {len(text)} chars, vocab {len(vocab)}, train {len(train_text)}, "
          f"val {len(val_text)} (every {VAL_EVERY}th verse)", flush=True)
    cfg = dict(CONFIG, vocab_size=len(vocab))
    ctx = cfg["context"]

    def encode(s):
        return torch.tensor([stoi[c] for c in s], dtype=torch.int64)

    train = encode(train_text)
    val = encode(val_text)

    model = CharLM(cfg)
    model.init_weights()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params}", flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [dict(params=decay, weight_decay=args.weight_decay),
         dict(params=no_decay, weight_decay=0.0)],
        lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
    )
    gen = torch.Generator().manual_seed(args.seed)

    last_ckpt = os.path.join(args.ckpt_dir, "last.pt")
    best_ckpt = os.path.join(args.ckpt_dir, "best.pt")
    log_path = os.path.join(args.out_dir, "training_log.csv")
    step, tokens, best, elapsed0 = 0, 0, float("inf"), 0.0

    if args.resume or args.export_only:
        ck = torch.load(best_ckpt if args.export_only else last_ckpt)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        gen.set_state(ck["gen"])
        torch.set_rng_state(ck["torch_rng"])
        step, tokens, best, elapsed0 = ck["step"], ck["tokens"], ck["best"], ck["elapsed"]
        print(f"resumed at step {step}, tokens {tokens}, best {best:.4f}", flush=True)
    if not args.resume and not args.export_only and not args.bench:
        with open(log_path, "w", newline="") as f:
            csv.writer(f).writerow(["step", "train_loss", "val_loss", "tokens_per_s", "elapsed_s", "lr", "train_tokens"])

    t_start = time.time() - elapsed0
    t_win, tok_win = time.time(), 0
    loss_acc, loss_n = 0.0, 0
    max_off = len(train) - ctx - 1
    stopped_early = False

    while not args.export_only and step < args.steps:
        lr = lr_at(step, args)
        for g in opt.param_groups:
            g["lr"] = lr
        ix = torch.randint(0, max_off + 1, (args.batch,), generator=gen)
        w = train[ix[:, None] + torch.arange(ctx + 1)[None, :]]
        logits = model(w[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        step += 1
        tokens += args.batch * ctx
        tok_win += args.batch * ctx
        loss_acc += loss.item()
        loss_n += 1

        if args.bench and step >= args.bench:
            dt = time.time() - t_start
            print(f"bench: {step} steps, {tokens / dt:.0f} tok/s, loss {loss.item():.4f}")
            return

        last = step == args.steps
        over = args.max_minutes > 0 and (time.time() - t_start) > args.max_minutes * 60
        if step % args.eval_every == 0 or last or over:
            now = time.time()
            tps = tok_win / (now - t_win)
            vl = eval_loss(model, val, ctx, max_windows=args.eval_windows)
            elapsed = time.time() - t_start
            row = [step, f"{loss_acc / loss_n:.4f}", f"{vl:.4f}", f"{tps:.0f}", f"{elapsed:.1f}", f"{lr:.6f}", tokens]
            print("step {} train {} val {} tok/s {} elapsed {} lr {} tokens {}".format(*row), flush=True)
            with open(log_path, "a", newline="") as f:
                csv.writer(f).writerow(row)
            if vl < best:
                best = vl
                save_ckpt(best_ckpt, model, opt, step, gen, tokens, best, elapsed)
            loss_acc, loss_n = 0.0, 0
            t_win, tok_win = time.time(), 0
            if step % args.ckpt_every == 0 or last or over:
                save_ckpt(last_ckpt, model, opt, step, gen, tokens, best, elapsed)
            if args.stop_after and step >= args.stop_after and not last:
                save_ckpt(last_ckpt, model, opt, step, gen, tokens, best, elapsed)
                print(f"stopped after step {step} (--stop-after); resume with --resume", flush=True)
                return
            if over and not last:
                print(f"time limit reached at step {step}; exporting best checkpoint", flush=True)
                stopped_early = True
                break

    # Export: final model if training completed, else the best checkpoint.
    if stopped_early or args.export_only:
        ck = torch.load(best_ckpt)
        model.load_state_dict(ck["model"])
        tokens, step = ck["tokens"], ck["step"]
    t0 = time.time()
    full_val = eval_loss(model, val, ctx)
    print(f"full validation loss at step {step}: {full_val:.4f} nats/char "
          f"({time.time() - t0:.1f}s)", flush=True)
    total_elapsed = time.time() - t_start
    with open(log_path, "a", newline="") as f:
        csv.writer(f).writerow([f"final@{step}", "", f"{full_val:.4f}", "", f"{total_elapsed:.1f}", "", tokens])

    heldout = val_text[:HELDOUT_CHARS]
    assert len(heldout) == HELDOUT_CHARS and set(heldout) <= set(vocab)
    with open(os.path.join(args.out_dir, "heldout.txt"), "w", encoding="ascii", newline="") as f:
        f.write(heldout)
    ho_loss = eval_loss(model, encode(heldout), ctx)
    print(f"heldout.txt loss (ctx {ctx}, non-overlapping windows): {ho_loss:.6f}", flush=True)

    export(model, os.path.join(args.out_dir, "kjv-char.safetensors"), vocab, cfg,
           full_val, tokens, args.seed,
           extra_meta={"heldout_loss": f"{ho_loss:.6f}", "train_steps": str(step)})


if __name__ == "__main__":
    main()
