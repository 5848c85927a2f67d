"""A numpy forward pass of a Llama-family GGUF file, the reference the
converter's end-to-end test checks genc against (tests/tools/gguf-convert.test):
weights from the gguf package's dequantizer (f32; block types the converter
does not keep rounded to f16 as it writes them), Q / K rows un-permuted as
Hugging Face does for llama / mistral, then the model in float64.

  gguf_reference.py MODEL.gguf logits IDS.npy GOT.npy [--f16]
      GOT [batch, seq, vocab] (genc eval's logits) against the reference on
      IDS [batch, seq]: prints max|diff| / max|ref|; --f16: every matrix
      rounded to f16, as tools/gguf_to_onnx.py --dequantize writes them
  gguf_reference.py MODEL.gguf greedy PROMPTS.jsonl GOT.jsonl N
      genrun's greedy output_ids (GOT, one line per prompt) against the
      reference's N greedy tokens: prints how many agree, skipping steps
      whose top-2 logits are within 1e-3 (near-ties either side may take)
"""
import json
import sys

import gguf
import numpy as np

KEPT = (gguf.GGMLQuantizationType.Q4_0, gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q8_0,
        gguf.GGMLQuantizationType.F32)


def load(path, all_f16=False):
    r = gguf.GGUFReader(path)
    meta = {k: f.contents() for k, f in r.fields.items() if not k.startswith("tokenizer.ggml.")}
    arch = meta["general.architecture"]
    W = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
        a = a.reshape([int(x) for x in reversed(t.shape)])
        if t.tensor_type not in KEPT or (all_f16 and a.ndim == 2):
            a = a.astype(np.float16).astype(np.float32)
        W[t.name] = a.astype(np.float64)
    cfg = dict(d=int(meta[f"{arch}.embedding_length"]), H=int(meta[f"{arch}.attention.head_count"]),
               KVH=int(meta[f"{arch}.attention.head_count_kv"]), L=int(meta[f"{arch}.block_count"]),
               eps=float(meta[f"{arch}.attention.layer_norm_rms_epsilon"]),
               theta=float(meta.get(f"{arch}.rope.freq_base", 10000.0)))
    cfg["D"] = cfg["d"] // cfg["H"]
    if arch in ("llama", "mistral"):
        for i in range(cfg["L"]):
            for n, h in (("attn_q", cfg["H"]), ("attn_k", cfg["KVH"])):
                w = W[f"blk.{i}.{n}.weight"]
                dim = w.shape[0] // h // 2
                W[f"blk.{i}.{n}.weight"] = w.reshape(h, dim, 2, -1).swapaxes(2, 1).reshape(w.shape)
    return cfg, W


def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def forward(cfg, W, ids):
    """Logits [seq, vocab] of one unpadded sequence."""
    H, KVH, D, S = cfg["H"], cfg["KVH"], cfg["D"], len(ids)
    x = W["token_embd.weight"][ids]
    inv = 1.0 / cfg["theta"] ** (np.arange(0, D, 2) / D)
    ang = np.arange(S)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))

    def rope(t):  # [h, S, D]
        rot = np.concatenate([-t[..., D // 2:], t[..., :D // 2]], -1)
        return t * cos + rot * sin

    causal = np.tril(np.ones((S, S), bool))
    for i in range(cfg["L"]):
        p = f"blk.{i}."
        h = rms(x, W[p + "attn_norm.weight"], cfg["eps"])

        def proj(n, heads):
            y = h @ W[p + n + ".weight"].T + W.get(p + n + ".bias", 0)
            return y.reshape(S, heads, D).transpose(1, 0, 2)

        q, k, v = rope(proj("attn_q", H)), rope(proj("attn_k", KVH)), proj("attn_v", KVH)
        k, v = np.repeat(k, H // KVH, 0), np.repeat(v, H // KVH, 0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(D)
        s = np.where(causal, s, -np.inf)
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        o = (a @ v).transpose(1, 0, 2).reshape(S, H * D)
        x = x + o @ W[p + "attn_output.weight"].T
        h = rms(x, W[p + "ffn_norm.weight"], cfg["eps"])
        g = h @ W[p + "ffn_gate.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
    x = rms(x, W["output_norm.weight"], cfg["eps"])
    return x @ W.get("output.weight", W["token_embd.weight"]).T


def main():
    path, mode = sys.argv[1], sys.argv[2]
    cfg, W = load(path, "--f16" in sys.argv)
    if mode == "logits":
        ids, got = np.load(sys.argv[3]), np.load(sys.argv[4])
        ref = np.stack([forward(cfg, W, list(row)) for row in ids])
        diff = np.abs(got - ref).max() / np.abs(ref).max()
        print(f"logits {tuple(got.shape)}: max|diff| / max|ref| = {diff:.3g}: " + ("ok" if diff < 1e-5 else "FAIL"))
        return 0 if diff < 1e-5 else 1
    prompts = [json.loads(l)["input_ids"] for l in open(sys.argv[3])]
    got = [json.loads(l)["sequences"][0]["output_ids"] for l in open(sys.argv[4])]
    n = int(sys.argv[5])
    same = checked = skipped = 0
    for ids, out in zip(prompts, got):
        seq = list(ids)
        for step in range(n):
            logits = forward(cfg, W, seq)[-1]
            top = np.argsort(logits)[::-1][:2]
            if logits[top[0]] - logits[top[1]] < 1e-3:
                skipped += 1
                break  # a near-tie: the rest of this sequence may go either way
            checked += 1
            if step >= len(out) or out[step] != top[0]:
                break
            same += 1
            seq.append(int(top[0]))
    ok = same == checked and checked >= len(prompts) * n // 2
    print(f"greedy: {len(prompts)} prompts, {same} of {checked} tokens as the reference "
          f"({skipped} near-ties skipped): " + ("ok" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
