"""Writes a tiny GGUF file of the Llama family with random weights, with the
gguf package's writer, for the converter's tests (tools/gguf_to_onnx.py):

  make_tiny_gguf.py OUT.gguf [--arch llama|mistral|qwen2] [--types q4_0,q4_1,q8_0,q5_0,f16,f32]
                    [--tied] [--seed S] [--zero-blocks]

The linear layers' matrices take the listed block types in turn (so every
type appears); norms are F32; the embedding table is the first type. The
weights are scaled so that the logits are not near ties. --zero-blocks
makes some blocks of one value (Q4_1's d = 0). For the error
tests: --drop-key KEY leaves a key out, --set-key KEY=INT changes one,
--unknown-type TENSOR gives a tensor block type 99. The tokenizer is a small
byte-level BPE (tokenizer.ggml.model gpt2): GPT-2's 256 byte symbols,
a few merges, and <|endoftext|>, <|im_start|>, <|im_end|> as control tokens.
As llama.cpp's converter does, Q and K rows of llama / mistral models are
stored permuted for its RoPE.
"""
import argparse

import gguf
import numpy as np

Q = gguf.GGMLQuantizationType
TYPES = {"q4_0": Q.Q4_0, "q4_1": Q.Q4_1, "q8_0": Q.Q8_0, "q5_0": Q.Q5_0, "f16": Q.F16, "f32": Q.F32}
SHAPE = dict(d=64, heads=4, kv_heads=2, ffn=96, layers=2, theta=10000.0, eps=1e-5)


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def tokenizer():
    byte = bytes_to_unicode()
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [byte[b] for b in range(256)]
    merges = []
    for a, b in (("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("o", "n"), ("Ġ", "c"), ("a", "p"),
                 ("Ġc", "ap"), ("i", "t"), ("a", "l"), ("Ġ", "P"), ("a", "r"), ("i", "s"), ("Ġ", "is")):
        if a + b not in tokens:
            merges.append(f"{a} {b}")
            tokens.append(a + b)
    types = [3, 3, 3] + [1] * (len(tokens) - 3)
    return tokens, types, merges


def spm_tokenizer():
    """SentencePiece-style pieces with scores and no merges (tokenizer.ggml.model llama)."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    scores = [0.0, 0.0, 0.0] + [0.0] * 256
    pieces = ["\u2581", "t", "h", "e", "a", "p", "i", "l", "c", "s", "r", "\u2581t", "he", "\u2581the", "\u2581c",
              "ap", "\u2581cap", "it", "al", "ital", "\u2581capital", "\u2581is", "in", "on", "an", "\u2581a"]
    for k, p in enumerate(pieces):
        tokens.append(p)
        types.append(1)
        scores.append(-float(k))
    return tokens, types, scores


def permute(w, n_head):
    """llama.cpp convert_hf_to_gguf's permutation of Q/K rows."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--arch", default="llama")
    ap.add_argument("--types", default="q4_0,q4_1,q8_0,q5_0,f16")
    ap.add_argument("--tied", action="store_true")
    ap.add_argument("--seed", type=int, default=48)
    ap.add_argument("--zero-blocks", action="store_true")
    ap.add_argument("--drop-key", default="")
    ap.add_argument("--set-key", default="")
    ap.add_argument("--unknown-type", default="")
    ap.add_argument("--tokenizer", default="gpt2", help="gpt2 (byte-level BPE) or llama (SentencePiece pieces, no merges)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    s = SHAPE
    D = s["d"] // s["heads"]
    tokens, types, merges = tokenizer()
    scores = None
    if args.tokenizer == "llama":
        tokens, types, scores = spm_tokenizer()
        merges = None
    V = len(tokens)
    w = gguf.GGUFWriter(args.out, args.arch)
    set_key, _, set_value = args.set_key.partition("=")
    add_key = w.add_key_value

    def keyed(key, value, vtype, *rest, **kw):  # --drop-key / --set-key
        if key == args.drop_key:
            return
        if key == set_key:
            value = float(set_value) if isinstance(value, float) else int(set_value)
        add_key(key, value, vtype, *rest, **kw)

    w.add_key_value = keyed
    w.add_context_length(256)
    w.add_embedding_length(s["d"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_rope_freq_base(s["theta"])
    w.add_layer_norm_rms_eps(s["eps"])
    w.add_rope_dimension_count(D)
    w.add_vocab_size(V)
    w.add_tokenizer_model(args.tokenizer)
    if args.tokenizer == "gpt2":
        w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    if merges:
        w.add_token_merges(merges)
    if scores:
        w.add_token_scores(scores)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_pad_token_id(2)
    w.add_unk_token_id(0)
    if args.tokenizer == "gpt2":
        w.add_add_space_prefix(False)
    w.add_add_bos_token(False)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    kinds = [TYPES[t] for t in args.types.split(",")]
    turn = [0]

    def matrix(name, rows, cols, scale, kind=None):
        a = (rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)).astype(np.float32)
        if args.zero_blocks:
            a[0, :32] = 0.02  # a block of one value
            a[1, 32:64] = 0.0
        t = kind if kind is not None else kinds[turn[0] % len(kinds)]
        turn[0] += 1
        add(name, a, t)

    def add(name, a, t):
        if t == Q.F32:
            w.add_tensor(name, a)
        elif t == Q.F16:
            w.add_tensor(name, a.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(a, t), raw_dtype=t)

    matrix("token_embd.weight", V, s["d"], 8.0, kinds[0])
    for i in range(s["layers"]):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (1 + 0.1 * rng.standard_normal(s["d"])).astype(np.float32), Q.F32)
        add(p + "ffn_norm.weight", (1 + 0.1 * rng.standard_normal(s["d"])).astype(np.float32), Q.F32)
        for n, rows, heads in (("attn_q", s["heads"] * D, s["heads"]), ("attn_k", s["kv_heads"] * D, s["kv_heads"]),
                               ("attn_v", s["kv_heads"] * D, 0)):
            a = (rng.standard_normal((rows, s["d"])) * 2.0 / np.sqrt(s["d"])).astype(np.float32)
            if heads and args.arch in ("llama", "mistral"):
                a = permute(a, heads)
            add(p + n + ".weight", a, kinds[turn[0] % len(kinds)])
            turn[0] += 1
            if args.arch == "qwen2":
                add(p + n + ".bias", (0.1 * rng.standard_normal(rows)).astype(np.float32), Q.F32)
        matrix(p + "attn_output.weight", s["d"], s["heads"] * D, 1.0)
        matrix(p + "ffn_gate.weight", s["ffn"], s["d"], 2.0)
        matrix(p + "ffn_up.weight", s["ffn"], s["d"], 2.0)
        matrix(p + "ffn_down.weight", s["d"], s["ffn"], 1.0)
    add("output_norm.weight", (1 + 0.1 * rng.standard_normal(s["d"])).astype(np.float32), Q.F32)
    if not args.tied:
        matrix("output.weight", V, s["d"], 8.0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if args.unknown_type:
        data = bytearray(open(args.out, "rb").read())
        name = args.unknown_type.encode()
        at = data.find(len(name).to_bytes(8, "little") + name) + 8 + len(name)
        n_dims = int.from_bytes(data[at:at + 4], "little")
        at += 4 + 8 * n_dims
        data[at:at + 4] = (99).to_bytes(4, "little")
        open(args.out, "wb").write(data)


if __name__ == "__main__":
    main()
