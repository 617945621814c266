#!/usr/bin/python3
"""Writes two runs of a small tensor-parallel Llama-like forward pass as
inference engines dump them, for `fplab bisect --dumps A B` (docs/bisect.md).

The model (random weights, torch.manual_seed) runs T tensor-parallel ranks
the way vLLM and SGLang split a Llama layer: qkv_proj and gate_up_proj are
column-parallel (each rank computes its columns), attention runs on each
rank's heads, o_proj and down_proj are row-parallel (each rank a partial
sum over its rows, then an all-reduce that leaves every rank the same
tensor). Run A all-reduces in rank order, ((p0 + p1) + p2) + p3; run B
all-reduces layer 0's down_proj as a tree, (p0 + p1) + (p2 + p3) (what an
all-reduce that switches from ring to tree does): B's first divergent
tensor is layer 0's mlp.down_proj, and everything after it moves.

Layouts (--layout):
  sglang   OUT/{a,b}/TP<t>_PP0_Rank<t>_pid<pid>/Pass<NNNNN>.pt, a dict of
           module name -> output per forward pass in hook order, as
           SGLang's python/sglang/srt/debug_utils/tensor_dump_forward_hook.py
           writes for --debug-tensor-dump-output-folder: the leaf modules,
           then model.forward_batch_info.{input_ids,seq_lens,positions};
           `model` and `logits_processor` open the next pass's file
           (sglang_files)
  vllm     OUT/{a,b}/rank<t>/Pass<n>.pt (n not zero-padded), as vLLM's
           TensorDumper (PR 52558, vllm/v1/worker/gpu/tensor_dump.py) writes
           for --debug-tensor-dump-output-folder: vllm.forward_batch_info.
           {input_ids,positions,rids,extend_seq_lens}, then each decoder
           layer's output tuple (hidden_states, residual) as model.layers.L
           (vllm_files); --replicated-differ moves rank 1's layer-1 residual
  per-op   OUT/{a,b}/rank<t>/<NNNN>_<module name>.pt, one tensor per op
           (the one-file-per-op shape of TensorRT-LLM's dumps; the naming
           is this script's)
--replicated-differ also makes B's ranks disagree on model.norm (rank 1
adds one ulp), which fplab reports as a note.
--expect FILE writes, for the test, the joined tensors' names in order,
their shapes, and which of them torch.equal finds different between A and
B (joined here by torch.cat / rank 0, the rules fplab's defaults state).
--joined FILE saves run A's joined tensors (that OrderedDict) as one .pt.

Usage: /usr/bin/python3 tools/mimic_engine_dumps.py OUT [--tp 4]
       [--layout sglang|vllm|per-op] [--replicated-differ] [--expect FILE]
       [--joined FILE]
"""
import argparse
import collections
import json
import os

import torch

HIDDEN, HEADS, HEAD_DIM, FFN, LAYERS, VOCAB = 16, 4, 4, 32, 2, 24


def weights(tp):
    torch.manual_seed(45)
    w = {"embed": torch.randn(VOCAB, HIDDEN)}
    for i in range(LAYERS):
        w[f"{i}.qkv"] = torch.randn(HIDDEN, 3 * HEADS * HEAD_DIM) / HIDDEN ** 0.5
        w[f"{i}.o"] = torch.randn(HEADS * HEAD_DIM, HIDDEN) / HIDDEN ** 0.5
        w[f"{i}.gate_up"] = torch.randn(HIDDEN, 2 * FFN) / HIDDEN ** 0.5
        w[f"{i}.down"] = torch.randn(FFN, HIDDEN) / FFN ** 0.5
    assert HEADS % tp == 0 and FFN % tp == 0
    return w


def rms(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)


def all_reduce(parts, tree):
    if tree:
        half = len(parts) // 2
        return all_reduce(parts[:half], False) + all_reduce(parts[half:], False)
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


def column_shards(w, tp, groups):
    """Rank r's columns of a fused [g0 | g1 | ...] weight: its slice of each group."""
    cols = [c.chunk(tp, dim=1) for c in w.chunk(groups, dim=1)]
    return [torch.cat([g[r] for g in cols], dim=1) for r in range(tp)]


def forward(w, ids, tp, tree_layer):
    """Each rank's dump: an OrderedDict of module name -> output, in hook order."""
    dumps = [collections.OrderedDict() for _ in range(tp)]
    put = lambda name, per_rank: [d.__setitem__(name, t.clone()) for d, t in zip(dumps, per_rank)]
    x = w["embed"][ids]
    put("model.embed_tokens", [x] * tp)
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        h = rms(x)
        put(p + "input_layernorm", [h] * tp)
        qkv = [h @ s for s in column_shards(w[f"{i}.qkv"], tp, 3)]
        put(p + "self_attn.qkv_proj", qkv)
        attn = []
        for part in qkv:
            q, k, v = part.chunk(3, dim=-1)
            heads = lambda t: t.view(t.shape[0], -1, HEAD_DIM).transpose(0, 1)
            scores = (heads(q) @ heads(k).transpose(1, 2)) / HEAD_DIM ** 0.5
            causal = torch.ones(len(ids), len(ids), dtype=torch.bool).tril()
            out = scores.masked_fill(~causal, float("-inf")).softmax(-1) @ heads(v)
            attn.append(out.transpose(0, 1).reshape(len(ids), -1))
        put(p + "self_attn.attn", attn)
        o_rows = w[f"{i}.o"].chunk(tp, dim=0)
        o = all_reduce([a @ r for a, r in zip(attn, o_rows)], False)
        put(p + "self_attn.o_proj", [o] * tp)
        x = x + o
        h = rms(x)
        put(p + "post_attention_layernorm", [h] * tp)
        gate_up = [h @ s for s in column_shards(w[f"{i}.gate_up"], tp, 2)]
        put(p + "mlp.gate_up_proj", gate_up)
        down_rows = w[f"{i}.down"].chunk(tp, dim=0)
        parts = []
        for gu, r in zip(gate_up, down_rows):
            g, u = gu.chunk(2, dim=-1)
            parts.append((torch.nn.functional.silu(g) * u) @ r)
        down = all_reduce(parts, i == tree_layer)
        put(p + "mlp.down_proj", [down] * tp)
        x = x + down
    norm = rms(x)
    put("model.norm", [norm] * tp)
    put("logits", [norm @ w["embed"].t()] * tp)
    return dumps


def sglang_files(passes, prompts):
    """Per pass, per rank, the dict SGLang's tensor_dump_forward_hook.py saves as
    Pass<NNNNN>.pt: its leaf modules' outputs; then, when the top-level `model`
    finishes, model.forward_batch_info.{input_ids,seq_lens,positions}, and the
    file is written before `model`'s own output and `logits_processor`'s are
    added, so those two open the next pass's file (the last pass's are lost)."""
    files, carry = [], None
    for ids, dumps in zip(prompts, passes):
        per_rank = []
        for r, d in enumerate(dumps):
            f = collections.OrderedDict(carry[r] if carry else [])
            f.update((k, t) for k, t in d.items() if k != "logits")
            f["model.forward_batch_info.input_ids"] = ids.clone()
            f["model.forward_batch_info.seq_lens"] = torch.tensor([len(ids)])
            f["model.forward_batch_info.positions"] = torch.arange(len(ids))
            per_rank.append(f)
        carry = [collections.OrderedDict([("model", d["model.norm"].clone()),
                                          ("logits_processor", d["logits"])]) for d in dumps]
        files.append(per_rank)
    return files


def vllm_files(passes, prompts):
    """Per pass, per rank, the dict vLLM's TensorDumper saves as Pass<n>.pt: the
    batch's metadata (rids a list of strings), then per decoder layer its output
    (hidden_states, residual): vLLM's Llama layer returns the MLP's output and
    the residual stream before it is added (x + o_proj, the fused add-norm's)."""
    files = []
    for ids, dumps in zip(prompts, passes):
        per_rank = []
        for d in dumps:
            f = collections.OrderedDict()
            f["vllm.forward_batch_info.input_ids"] = ids.clone()
            f["vllm.forward_batch_info.positions"] = torch.arange(len(ids))
            f["vllm.forward_batch_info.rids"] = ["req-0"]
            f["vllm.forward_batch_info.extend_seq_lens"] = torch.tensor([len(ids)], dtype=torch.int32)
            x = d["model.embed_tokens"]
            for i in range(LAYERS):
                p = f"model.layers.{i}"
                residual = x + d[p + ".self_attn.o_proj"]
                f[p] = (d[p + ".mlp.down_proj"].clone(), residual)
                x = residual + d[p + ".mlp.down_proj"]
            per_rank.append(f)
        files.append(per_rank)
    return files


def write(run_dir, files, layout):
    for rank in range(len(files[0])):
        if layout == "vllm":
            d = os.path.join(run_dir, f"rank{rank}")
            os.makedirs(d, exist_ok=True)
            for n, dumps in enumerate(files):
                torch.save(dumps[rank], os.path.join(d, f"Pass{n}.pt"))
        elif layout == "sglang":
            d = os.path.join(run_dir, f"TP{rank}_PP0_Rank{rank}_pid{4500 + rank}")
            os.makedirs(d, exist_ok=True)
            for n, dumps in enumerate(files):
                torch.save(dumps[rank], os.path.join(d, f"Pass{n:05d}.pt"))
        else:
            d = os.path.join(run_dir, f"rank{rank}")
            os.makedirs(d, exist_ok=True)
            op = 0
            for dumps in files:
                for name, t in dumps[rank].items():
                    torch.save(t, os.path.join(d, f"{op:04d}_{name}.pt"))
                    op += 1


COLUMN_PARALLEL = ("qkv_proj", "gate_up_proj", "self_attn.attn")


def joined(files, layout):
    """name -> whole tensor, in dump order, as fplab's default rules join them."""
    out, op = collections.OrderedDict(), 0
    for n, dumps in enumerate(files):
        for name in dumps[0]:
            first = dumps[0][name]
            if isinstance(first, list):  # vLLM's rids: not a tensor, fplab skips it
                continue
            # a tuple output (vLLM's layers): NAME.0, NAME.1, as fplab names them
            items = ([(f"{name}.{i}", [d[name][i] for d in dumps]) for i in range(len(first))]
                     if isinstance(first, tuple) else [(name, [d[name] for d in dumps])])
            for item, shards in items:
                whole = torch.cat(shards, dim=-1) if item.endswith(COLUMN_PARALLEL) else shards[0]
                key = {"sglang": f"Pass{n:05d}/{item}", "vllm": f"Pass{n}/{item}"}.get(
                    layout, f"{op:04d}_{item}")
                out[key] = whole
                op += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tp", type=int, default=4)
    ap.add_argument("--layout", choices=["sglang", "vllm", "per-op"], default="sglang")
    ap.add_argument("--replicated-differ", action="store_true")
    ap.add_argument("--expect")
    ap.add_argument("--joined", help="also torch.save run A's joined tensors to this file")
    args = ap.parse_args()
    w = weights(args.tp)
    runs = {}
    prompts = [torch.tensor([3, 1, 4, 1, 5]), torch.tensor([3, 1, 4, 1, 5, 9])]  # prefill, then one more token
    for run, tree_layer in (("a", None), ("b", 0)):
        passes = [forward(w, ids, args.tp, tree_layer) for ids in prompts]
        if run == "b" and args.replicated_differ:
            norm = passes[0][1]["model.norm"]
            norm.view(torch.int32)[0, 0] += 1
        files = {"sglang": sglang_files, "vllm": vllm_files}.get(
            args.layout, lambda p, _: p)(passes, prompts)
        if run == "b" and args.replicated_differ and args.layout == "vllm":
            files[0][1]["model.layers.1"][1].view(torch.int32)[0, 0] += 1
        write(os.path.join(args.out, run), files, args.layout)
        runs[run] = joined(files, args.layout)
    if args.joined:
        torch.save(runs["a"], args.joined)
    if args.expect:
        a, b = runs["a"], runs["b"]
        with open(args.expect, "w") as f:
            json.dump({"torch": torch.__version__, "order": list(a),
                       "shapes": {k: list(v.shape) for k, v in a.items()},
                       "differ": [k for k in a if not torch.equal(a[k], b[k])]}, f, indent=1)


if __name__ == "__main__":
    main()
