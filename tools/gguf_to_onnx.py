#!/usr/bin/env python3
"""Convert a GGUF file of the Llama family (general.architecture llama,
mistral or qwen2) into the export genc compiles:

  gguf_to_onnx.py MODEL.gguf OUT_DIR [--dequantize]

writes OUT_DIR/model.onnx (input_ids, attention_mask -> logits: the plain
forward graph of Hugging Face's exports, tools/gguf_graph.py), config.json,
generation_config.json, tokenizer.json and tokenizer_config.json (with the
chat template), so that `genc compile OUT_DIR -o model.plan` works as for
any export. Q4_0 / Q4_1 / Q8_0 matrices become com.microsoft::MatMulNBits
nodes over the same values (tools/gguf_weights.py); other block types are
dequantized to f16, with a line saying which. --dequantize writes every
weight as f16 instead (the "f16 export" `genc compile --weights` is compared
with: docs/quantization.md).

Needs numpy, onnx and the gguf package only. Errors (an unknown
architecture or block type, a missing key, a tensor of the wrong shape, a
truncated file) are one line naming the key or tensor, exit 1.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402
import onnx  # noqa: E402

import gguf_graph  # noqa: E402
import gguf_tokenizer  # noqa: E402
import gguf_weights as gw  # noqa: E402
from gguf_weights import ConvertError  # noqa: E402

ARCHS = {"llama": ("LlamaForCausalLM", "llama"), "mistral": ("MistralForCausalLM", "mistral"),
         "qwen2": ("Qwen2ForCausalLM", "qwen2")}
LAYER_TENSORS = {"attn_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
                 "attn_q.weight": "self_attn.q_proj.weight", "attn_k.weight": "self_attn.k_proj.weight",
                 "attn_v.weight": "self_attn.v_proj.weight", "attn_output.weight": "self_attn.o_proj.weight",
                 "attn_q.bias": "self_attn.q_proj.bias", "attn_k.bias": "self_attn.k_proj.bias",
                 "attn_v.bias": "self_attn.v_proj.bias", "ffn_gate.weight": "mlp.gate_proj.weight",
                 "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight"}


def printable(name, limit=80):
    """A name from a damaged file, safe on one line: control characters escaped, cut."""
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in name)
    return text if len(text) <= limit else text[:limit] + "..."


def damaged_tensor(path):
    """Why the gguf package's reader failed, naming the tensor: the first one
    of an unknown block type or whose data runs past the end of the file (a
    GGUF v2/v3 header parsed by hand; the reader's own errors name none)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        data = f.read(min(size, 64 << 20))
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def value(t):
        nonlocal pos
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)] if et in (8, 9) else (pos := pos + sizes[et] * n) and None
        pos += sizes[t]
        return None

    where = "the header"
    try:
        pos = 8
        n_tensors, n_kv = take("Q"), take("Q")
        alignment = 32
        for i in range(n_kv):
            where = f"metadata entry {i}"
            key = string()
            where = f"key {printable(key)}"
            t = take("I")
            start = pos
            value(t)
            if key == "general.alignment":
                alignment = struct.unpack_from("<I", data, start)[0]
        infos = []
        for i in range(n_tensors):
            where = f"tensor info {i}"
            name, nd = string(), take("I")
            dims = [take("Q") for _ in range(nd)]
            qtype, off = take("I"), take("Q")
            infos.append((name, dims, qtype, off))
        base = (pos + alignment - 1) // alignment * alignment
        for name, dims, qtype, off in infos:
            if qtype not in gguf.GGMLQuantizationType._value2member_map_:
                return f"tensor {printable(name)} has an unknown block type ({qtype})"
            block, nbytes = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(qtype)]
            if base + off + int(np.prod(dims)) // block * nbytes > size:
                return f"tensor {printable(name)} runs past the end of the file (truncated?)"
    except struct.error:
        return f"{where} is cut short (truncated?)"
    except (ValueError, KeyError, IndexError, OverflowError):
        return None
    return None


def read(path):
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"GGUF":
                raise ConvertError(f"{path} is not a GGUF file (no GGUF magic)")
        return gguf.GGUFReader(path)
    except ConvertError:
        raise
    except OSError as e:
        raise ConvertError(f"cannot read {path}: {e.strerror}")
    except Exception as e:  # the reader's own errors on damaged files
        why = damaged_tensor(path)
        if why:
            raise ConvertError(f"{path}: {why}")
        raise ConvertError(f"{path}: not a readable GGUF file ({type(e).__name__}: {printable(str(e), 160)})")


def metadata(reader):
    meta = {}
    for key, field in reader.fields.items():
        try:
            meta[key] = field.contents()
        except Exception:
            continue
    return meta


def need(meta, key, kind=int):
    if key not in meta:
        raise ConvertError(f"key {key} is missing")
    v = meta[key]
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise ConvertError(f"key {key} = {v!r} is not a number")
    if not math.isfinite(v):
        raise ConvertError(f"key {key} = {v!r} is not a finite number")
    if kind is int and int(v) != v:
        raise ConvertError(f"key {key} = {v!r} is not an integer")
    return kind(v)


def positive(meta, key, kind=float):
    v = need(meta, key, kind)
    if v <= 0:
        raise ConvertError(f"key {key} = {v!r} must be positive")
    return v


def hyperparameters(meta):
    arch = meta.get("general.architecture")
    if arch not in ARCHS:
        raise ConvertError(f"key general.architecture = {arch!r} is not supported (llama, mistral, qwen2)")
    d = need(meta, f"{arch}.embedding_length")
    # head counts divide: a zero one is refused by name before any division
    heads = positive(meta, f"{arch}.attention.head_count", int)
    cfg = {"arch": arch, "hidden_size": d, "heads": heads,
           "kv_heads": positive(meta, f"{arch}.attention.head_count_kv", int)
           if f"{arch}.attention.head_count_kv" in meta else heads,
           "layers": need(meta, f"{arch}.block_count"), "ffn": need(meta, f"{arch}.feed_forward_length"),
           "rms_eps": positive(meta, f"{arch}.attention.layer_norm_rms_epsilon"),
           "rope_theta": positive(meta, f"{arch}.rope.freq_base") if f"{arch}.rope.freq_base" in meta else 10000.0,
           "context": positive(meta, f"{arch}.context_length", int) if f"{arch}.context_length" in meta else 2048,
           "sliding_window": need(meta, f"{arch}.attention.sliding_window")
           if meta.get(f"{arch}.attention.sliding_window") is not None else 0}
    if cfg["sliding_window"] < 0:
        raise ConvertError(f"key {arch}.attention.sliding_window = {cfg['sliding_window']} must not be negative")
    cfg["head_dim"] = need(meta, f"{arch}.attention.key_length") if f"{arch}.attention.key_length" in meta else d // heads
    for key in (f"{arch}.rope.scaling.type",):
        if meta.get(key) not in (None, "none"):
            raise ConvertError(f"key {key} = {meta[key]!r} is not supported (no rope scaling)")
    if f"{arch}.rope.dimension_count" in meta and need(meta, f"{arch}.rope.dimension_count") != cfg["head_dim"]:
        raise ConvertError(f"key {arch}.rope.dimension_count = {meta[f'{arch}.rope.dimension_count']} differs from "
                           f"the head dim {cfg['head_dim']} (partial rotary is not supported)")
    for k in ("heads", "kv_heads", "layers", "head_dim", "hidden_size", "ffn"):
        if cfg[k] <= 0:
            raise ConvertError(f"the model's {k} is {cfg[k]}")
    if cfg["heads"] % cfg["kv_heads"]:
        raise ConvertError(f"key {arch}.attention.head_count = {heads} is not a multiple of head_count_kv")
    return cfg


def expected_shapes(cfg, vocab):
    d, H, KVH, D, F = cfg["hidden_size"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["ffn"]
    shapes = {"model.embed_tokens.weight": [vocab, d], "model.norm.weight": [d], "lm_head.weight": [vocab, d]}
    for i in range(cfg["layers"]):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": [d], p + "post_attention_layernorm.weight": [d],
                       p + "self_attn.q_proj.weight": [H * D, d], p + "self_attn.k_proj.weight": [KVH * D, d],
                       p + "self_attn.v_proj.weight": [KVH * D, d], p + "self_attn.o_proj.weight": [d, H * D],
                       p + "self_attn.q_proj.bias": [H * D], p + "self_attn.k_proj.bias": [KVH * D],
                       p + "self_attn.v_proj.bias": [KVH * D], p + "mlp.gate_proj.weight": [F, d],
                       p + "mlp.up_proj.weight": [F, d], p + "mlp.down_proj.weight": [d, F]})
    return shapes


def hf_name(name):
    fixed = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    if name in fixed:
        return fixed[name]
    parts = name.split(".", 2)
    if len(parts) == 3 and parts[0] == "blk" and parts[1].isdigit() and parts[2] in LAYER_TENSORS:
        return f"model.layers.{parts[1]}.{LAYER_TENSORS[parts[2]]}"
    return None


def note(notes, what, name):
    if name not in notes.setdefault(what, []):  # a tied table is read twice
        notes[what].append(name)


def convert_weights(reader, cfg, vocab, dequantize, notes):
    """HF name -> ("float", array [N, K] or [N]) or ("nbits", dict, K)."""
    # Every layer has tensors of its own, so a block count past the file's
    # tensor count is damage; refused before the expected shapes are listed
    # (a count of 2**31 would list them until memory runs out).
    if cfg["layers"] > len(reader.tensors):
        raise ConvertError(f"key {cfg['arch']}.block_count = {cfg['layers']} is more layers than the file's "
                           f"{len(reader.tensors)} tensors hold")
    shapes = expected_shapes(cfg, vocab)
    tensors = {}
    for t in reader.tensors:
        name = hf_name(t.name)
        if name is None:
            raise ConvertError(f"tensor {printable(t.name)} is not part of a {cfg['arch']} model genc converts")
        if not isinstance(t.tensor_type, gguf.GGMLQuantizationType):
            raise ConvertError(f"tensor {t.name}: unknown block type {t.tensor_type}")
        if name not in shapes:  # a layer past the block count
            raise ConvertError(f"tensor {printable(t.name)} is not part of this {cfg['arch']} model "
                               f"({cfg['arch']}.block_count = {cfg['layers']})")
        if name in tensors:
            raise ConvertError(f"tensor {printable(t.name)} appears twice")
        shape = [int(x) for x in reversed(t.shape)]
        if shape != shapes[name]:
            raise ConvertError(f"tensor {t.name} has shape {shape}, expected {shapes[name]} for this {cfg['arch']} "
                               f"model (embedding_length, head counts, feed_forward_length, vocabulary)")
        tensors[name] = t
    for name in shapes:
        if name not in tensors and not name.endswith(".bias") and name != "lm_head.weight":
            raise ConvertError(f"tensor {gguf_name(name)} is missing")
    tied = "lm_head.weight" not in tensors
    if tied:
        tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"]
    permute = cfg["arch"] in ("llama", "mistral")  # llama.cpp's Q/K row order for its RoPE
    out = {}
    for name, t in tensors.items():
        order = None
        if permute and (".q_proj." in name or ".k_proj." in name):
            order = gw.reverse_permute_rows(shapes[name][0], cfg["heads"] if ".q_proj." in name else cfg["kv_heads"])
        table = name == "model.embed_tokens.weight"
        if t.tensor_type in gw.KEPT and not dequantize and not table and len(shapes[name]) == 2:
            p = gw.nbits(t)
            if order is not None:
                p = {k: (v[order] if isinstance(v, np.ndarray) else v) for k, v in p.items()}
            out[name] = ("nbits", p, shapes[name][1])
            continue
        if t.tensor_type in gw.KEPT and not dequantize:  # a table to gather rows from: exact f32
            w = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).reshape(shapes[name]).astype(np.float32)
            note(notes, f"{t.tensor_type.name} dequantized to f32 for the embedding lookup", t.name)
        else:
            w, blocks = gw.floats(t)
            if dequantize and w.dtype == np.float32 and len(shapes[name]) == 2:
                w = w.astype(np.float16)
            if blocks or (dequantize and t.tensor_type != gguf.GGMLQuantizationType.F32):
                note(notes, f"{t.tensor_type.name} dequantized to f16", t.name)
        if order is not None:
            w = w[order]
        out[name] = ("float", w)
    return out, tied


def gguf_name(hf):
    for g, h in (("token_embd.weight", "model.embed_tokens.weight"), ("output_norm.weight", "model.norm.weight")):
        if hf == h:
            return g
    parts = hf.split(".", 3)
    for g, h in LAYER_TENSORS.items():
        if len(parts) == 4 and parts[3] == h:
            return f"blk.{parts[2]}.{g}"
    return hf


def write_files(out_dir, model, cfg, meta, vocab, tied):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    if model.ByteSize() > (1 << 31) - (64 << 20):
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data")
    else:
        onnx.save_model(model, path)
    arch_cls, model_type = ARCHS[cfg["arch"]]
    ids = {k: meta.get(f"tokenizer.ggml.{g}") for k, g in (("bos_token_id", "bos_token_id"),
                                                            ("eos_token_id", "eos_token_id"),
                                                            ("pad_token_id", "padding_token_id"))}
    config = {"architectures": [arch_cls], "model_type": model_type, "hidden_size": cfg["hidden_size"],
              "intermediate_size": cfg["ffn"], "num_hidden_layers": cfg["layers"],
              "num_attention_heads": cfg["heads"], "num_key_value_heads": cfg["kv_heads"],
              "head_dim": cfg["head_dim"], "hidden_act": "silu", "rms_norm_eps": cfg["rms_eps"],
              "rope_theta": cfg["rope_theta"], "max_position_embeddings": cfg["context"], "vocab_size": vocab,
              "tie_word_embeddings": tied, "torch_dtype": "float32", **{k: v for k, v in ids.items() if v is not None}}
    if cfg["sliding_window"]:
        config["sliding_window"] = cfg["sliding_window"]
    generation = {k: v for k, v in ids.items() if v is not None}
    tok_meta = dict(meta, context_length=cfg["context"])
    files = {"config.json": config, "generation_config.json": generation,
             "tokenizer.json": gguf_tokenizer.tokenizer_json(meta, cfg["arch"]),
             "tokenizer_config.json": gguf_tokenizer.tokenizer_config(tok_meta)}
    for name, obj in files.items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=None if name == "tokenizer.json" else 2)
            f.write("\n")


def convert(path, out_dir, dequantize=False):
    """Writes the export; returns the lines to print (what was dequantized, a
    summary). Raises ConvertError on a file it cannot convert."""
    reader = read(path)
    meta = metadata(reader)
    cfg = hyperparameters(meta)
    tokens = meta.get("tokenizer.ggml.tokens")
    vocab = meta.get(f"{cfg['arch']}.vocab_size") or (len(tokens) if isinstance(tokens, list) else 0)
    if not isinstance(vocab, int) or vocab <= 0:
        raise ConvertError(f"key {cfg['arch']}.vocab_size is missing and so is tokenizer.ggml.tokens")
    notes = {}
    weights, tied = convert_weights(reader, cfg, vocab, dequantize, notes)
    model = gguf_graph.build(cfg, weights, vocab)
    write_files(out_dir, model, cfg, meta, vocab, tied)
    lines = []
    for what, names in notes.items():
        more = f", ... ({len(names)} tensors)" if len(names) > 3 else ""
        lines.append(f"{what}: {', '.join(names[:3])}{more}")
    kept = sum(1 for w in weights.values() if w[0] == "nbits")
    lines.append(f"{cfg['arch']}, {cfg['layers']} layers, {kept} matrices kept as 4/8-bit blocks -> {out_dir}/model.onnx")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf")
    ap.add_argument("out_dir")
    ap.add_argument("--dequantize", action="store_true",
                    help="every weight as f16 (no MatMulNBits): the f16 export --weights is compared with")
    args = ap.parse_args()
    try:
        lines = convert(args.gguf, args.out_dir, args.dequantize)
    except ConvertError as e:
        print(f"gguf_to_onnx: error: {e}", file=sys.stderr)
        return 1
    for line in lines:
        print(f"gguf_to_onnx: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
