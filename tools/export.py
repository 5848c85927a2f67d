#!/usr/bin/env python3
"""Export a Hugging Face model to ONNX in the form genc compiles (models/README.md).

  export.py --model DIR_OR_NAME --out DIR            # pretrained weights (local or cached)
  export.py --config config.json --out DIR [--seed S] [--scale X]
  export.py --arch llama --set hidden_size=2048 --set num_hidden_layers=8 ... --out DIR

Decoder-only models give DIR/model.onnx (input_ids, attention_mask -> logits);
encoder-decoder models DIR/encoder.onnx (input_ids, attention_mask ->
last_hidden_state) and DIR/decoder.onnx (decoder_input_ids,
encoder_hidden_states, encoder_attention_mask -> logits). Both are the plain
forward pass: no KV-cache inputs or outputs (genc derives the cache). The
model's config.json (and generation_config.json) are written beside them.

--config / --arch build the model with random weights (seeded; every weight
matrix multiplied by --scale, as the test fixtures are, so that greedy choices
are not near-ties): a machine without network access can still export any
architecture at any size. The exporter is torch.export's (opset 18, PyTorch's
default); --torchscript picks the older TorchScript one (opset 17). Every export
is run in onnxruntime (when installed) against the PyTorch forward pass on a
left-padded batch and refused if they differ: with transformers 5.17 the
TorchScript exporter silently mis-exports GPT-2 (logits off by ~0.8), which
is why it is no longer the default. --golden N also runs Hugging Face greedy
generate() for N new tokens on a left-padded batch of random prompts
(decoder-only) and writes DIR/golden.json in the fixtures' format
(tests/fixtures/README.md), so tests/tools/check_generate.py can compare genrun
with it, and the forward pass's logits on that batch as DIR/logits.npz
(tests/tools/check_logits.py compares `genc eval` with them).

Needs torch and transformers (the GPU machine has them; CI does not run this).
"""
import argparse
import json
import os
import sys


def parse_value(v):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    if v in ("true", "false"):
        return v == "true"
    return v


def load_model(args, torch, transformers):
    kw = {"attn_implementation": "eager"}  # explicit softmax(q·kᵀ)·v: what raise-attention reads
    if args.model:
        base = transformers.AutoConfig.from_pretrained(args.model).to_dict()
    elif args.config:
        base = json.load(open(args.config))
    else:
        base = {"model_type": args.arch}
    model_type = base.pop("model_type")
    default = transformers.AutoConfig.for_model(model_type, **base)

    def settable(k):  # a config field, not a derived property
        return hasattr(default, k) and not isinstance(getattr(type(default), k, None), property)

    # Overrides go into the constructor, so that what a config derives from
    # them (per-layer lists sized by num_hidden_layers, say) stays consistent.
    over = {}
    if args.tiny:  # fixture size, for any architecture: only keys its config has
        tiny = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 128, "ffn_dim": 128, "n_inner": 128,
                "vocab_size": 1000, "max_position_embeddings": 256, "head_dim": 16,
                "rotary_dim": 8, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
                "decoder_start_token_id": 2}
        for k, v in tiny.items():
            if k == "pad_token_id" or (settable(k) and getattr(default, k) is not None):
                over[k] = v
    for s in args.set:
        k, _, v = s.partition("=")
        if not settable(k) and not args.allow_new_keys:
            sys.exit(f"export.py: error: config has no settable key '{k}' (--allow-new-keys to add it)")
        over[k] = parse_value(v)
    # A derived field saved in the base (layer_types, ...) would contradict the overrides.
    for k in ("layer_types",):
        if "num_hidden_layers" in over:
            base.pop(k, None)
    cfg = transformers.AutoConfig.for_model(model_type, **{**base, **over})
    cfg.use_cache = False
    seq2seq = bool(getattr(cfg, "is_encoder_decoder", False))
    auto = transformers.AutoModelForSeq2SeqLM if seq2seq else transformers.AutoModelForCausalLM
    if args.model:
        model = auto.from_pretrained(args.model, config=cfg, dtype=torch.float32, **kw)
    else:
        torch.manual_seed(args.seed)
        model = auto.from_config(cfg, dtype=torch.float32, **kw)
        if args.scale != 1.0:
            with torch.no_grad():
                for p in model.parameters():
                    if p.dim() >= 2:
                        p.mul_(args.scale)
    model.eval()
    return model, cfg, seq2seq


def export(fn, inputs, names, outputs, axes, path, args, torch):
    if not args.torchscript:
        dyn = {n: {i: torch.export.Dim.AUTO for i in ax} for n, ax in axes.items()}
        torch.onnx.export(fn, inputs, path, input_names=names, output_names=outputs,
                          dynamo=True, dynamic_shapes=dyn, opset_version=18,
                          external_data=True)
    else:
        torch.onnx.export(fn, inputs, path, input_names=names, output_names=outputs,
                          dynamic_axes=axes, opset_version=17, dynamo=False)


def parser():
    """The command line; other tools rebuild an export's model from the same arguments (load_model)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="a local Hugging Face model folder (or a cached hub name)")
    src.add_argument("--config", help="a config.json: random weights of that architecture")
    src.add_argument("--arch", help="a model_type (llama, gpt2, mistral, t5, bart, ...): random weights")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config value (repeatable)")
    ap.add_argument("--allow-new-keys", action="store_true")
    ap.add_argument("--tiny", action="store_true",
                    help="the fixtures' size (d=64, 2 layers, 4 heads, vocab 1000) for any architecture")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--torchscript", action="store_true", help="the TorchScript exporter (opset 17)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the onnxruntime check (large models for benchmarks)")
    ap.add_argument("--golden", type=int, default=0, metavar="N",
                    help="record HF greedy generate() for N new tokens (decoder-only)")
    ap.add_argument("--golden-processors", action="store_true",
                    help="with --golden: also greedy and beam search under the generation-config "
                         "logits processors (suppress, begin-suppress, min_length, forced eos, "
                         "exponential decay)")
    ap.add_argument("--strip-metadata", action="store_true",
                    help="drop the exporter's per-node metadata (torch.export's stack traces: 90%% of a "
                         "tiny model's graph bytes; genc reads none of it), for small test fixtures")
    ap.add_argument("--golden-renormalize", action="store_true",
                    help="with --golden: also beam search with renormalize_logits under processors that "
                         "ban eos (min_length, min_new_tokens) and others that edit the rows")
    return ap


def main():
    args = parser().parse_args()

    try:
        import torch
        import transformers
    except ImportError as e:
        sys.exit(f"export.py: error: needs torch and transformers ({e})")
    torch.set_grad_enabled(False)
    torch.backends.cuda.matmul.allow_tf32 = False
    model, cfg, seq2seq = load_model(args, torch, transformers)
    os.makedirs(args.out, exist_ok=True)
    cfg.save_pretrained(args.out)
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.save_pretrained(args.out)
    suffix = ".onnx"
    ids = torch.randint(3, cfg.vocab_size, (2, 7))
    mask = torch.ones_like(ids)

    if not seq2seq:
        class Forward(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids, attention_mask):
                return self.m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

        export(Forward(model), (ids, mask), ["input_ids", "attention_mask"], ["logits"],
               {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                "logits": {0: "batch", 1: "sequence"}} if args.torchscript else
               {"input_ids": [0, 1], "attention_mask": [0, 1]},
               os.path.join(args.out, "model" + suffix), args, torch)
    else:
        class Encoder(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids, attention_mask):
                return self.m.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

        class Decoder(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, decoder_input_ids, encoder_hidden_states, encoder_attention_mask):
                return self.m(encoder_outputs=(encoder_hidden_states,), attention_mask=encoder_attention_mask,
                              decoder_input_ids=decoder_input_ids, use_cache=False).logits

        export(Encoder(model), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"],
               {"input_ids": {0: "batch", 1: "src"}, "attention_mask": {0: "batch", 1: "src"},
                "last_hidden_state": {0: "batch", 1: "src"}} if args.torchscript else
               {"input_ids": [0, 1], "attention_mask": [0, 1]},
               os.path.join(args.out, "encoder" + suffix), args, torch)
        hidden = Encoder(model)(ids, mask)
        dec = torch.randint(3, cfg.vocab_size, (2, 5))
        export(Decoder(model), (dec, hidden, mask),
               ["decoder_input_ids", "encoder_hidden_states", "encoder_attention_mask"], ["logits"],
               {"decoder_input_ids": {0: "batch", 1: "tgt"}, "encoder_hidden_states": {0: "batch", 1: "src"},
                "encoder_attention_mask": {0: "batch", 1: "src"}, "logits": {0: "batch", 1: "tgt"}}
               if args.torchscript else
               {"decoder_input_ids": [0, 1], "encoder_hidden_states": [0, 1], "encoder_attention_mask": [0, 1]},
               os.path.join(args.out, "decoder" + suffix), args, torch)

    if args.strip_metadata:
        strip_metadata(args.out)
    if not args.no_check:
        check_with_onnxruntime(model, cfg, seq2seq, args, torch)
    if args.golden:
        if seq2seq:
            sys.exit("export.py: error: --golden records decoder-only models only")
        write_golden(model, cfg, args, torch)
    print(f"export.py: wrote {args.out}")


def strip_metadata(out):
    import onnx
    for name in ("model.onnx", "encoder.onnx", "decoder.onnx"):
        path = os.path.join(out, name)
        if not os.path.exists(path):
            continue
        m = onnx.load(path, load_external_data=False)  # the weights stay in their .data file
        for node in m.graph.node:
            del node.metadata_props[:]
        onnx.save(m, path)


def check_with_onnxruntime(model, cfg, seq2seq, args, torch):
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError:
        print("export.py: onnxruntime not installed: the export is not checked", file=sys.stderr)
        return
    ids, mask, _ = golden_batch(cfg, args, torch)
    if seq2seq:
        sess = ort.InferenceSession(os.path.join(args.out, "encoder.onnx"))
        got = sess.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]
        want = model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
        # Padding rows of the encoder output are never read; compare real tokens.
        got, want = got * mask.numpy()[..., None], want * mask.numpy()[..., None]
    else:
        sess = ort.InferenceSession(os.path.join(args.out, "model.onnx"))
        got = sess.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]
        want = model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float().numpy()
    diff, ref = float(np.abs(got - want).max()), float(np.abs(want).max())
    print(f"export.py: onnxruntime vs PyTorch: max|diff| = {diff:.3g}, max|ref| = {ref:.3g}")
    if not diff <= 1e-4 * max(ref, 1.0):
        sys.exit("export.py: error: the ONNX export does not compute what the PyTorch model does "
                 "(try the other exporter: --torchscript or without it)")


def golden_batch(cfg, args, torch):
    g = torch.Generator().manual_seed(args.seed + 1)
    lengths = [12, 5, 9, 3]
    width = max(lengths)
    pad = cfg.pad_token_id if cfg.pad_token_id is not None else 0
    ids = torch.full((len(lengths), width), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, n in enumerate(lengths):  # left padding, as HF expects for decoder-only
        ids[r, width - n:] = torch.randint(3, cfg.vocab_size, (n,), generator=g)
        mask[r, width - n:] = 1
    return ids, mask, pad


def write_golden(model, cfg, args, torch):
    ids, mask, pad = golden_batch(cfg, args, torch)
    eos = cfg.eos_token_id if isinstance(cfg.eos_token_id, int) else (cfg.eos_token_id or [0])[0]
    # The forward pass on the same batch, in the fixtures' logits.npz form
    # (tests/tools/check_logits.py compares `genc eval` with it).
    import numpy as np
    logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
    np.savez(os.path.join(args.out, "logits.npz"), input_ids=ids.numpy(), attention_mask=mask.numpy(),
             logits=logits.float().numpy())
    out = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, num_beams=1,
                         max_new_tokens=args.golden, min_new_tokens=args.golden,
                         output_scores=True, return_dict_in_generate=True,
                         pad_token_id=pad, eos_token_id=eos)
    margins = []
    for s in out.scores:
        top = torch.topk(s.float(), 2, dim=-1).values
        margins.append((top[:, 0] - top[:, 1]).tolist())
    golden = {"kind": "decoder-only", "padding": "left", "eos_token_id": eos, "pad_token_id": pad,
              "input_ids": ids.tolist(), "attention_mask": mask.tolist(),
              "greedy": {"args": {"max_new_tokens": args.golden, "min_new_tokens": args.golden},
                         "sequences": out.sequences.tolist(), "top2_margin": margins}}
    if args.golden_processors:
        golden.update(processor_golden(model, out.sequences[:, ids.shape[1]:], ids, mask, pad, eos, args, torch))
    if args.golden_renormalize:
        golden.update(renormalize_golden(model, out.sequences[:, ids.shape[1]:], ids, mask, pad, eos, args))
    with open(os.path.join(args.out, "golden.json"), "w") as f:
        json.dump(golden, f)


def processor_golden(model, plain, ids, mask, pad, eos, args, torch):
    """Greedy and beam search under the processors HF builds from a generation
    config, each set where it changes the outcome: the two tokens plain greedy
    chose most often suppressed, the rows' first choices suppressed at the
    beginning, eos banned until two tokens past the padded prompt and forced
    at the maximum length, its score decayed upwards after 3 new tokens. Then
    the encoder processors, whose encoder input is the (padded) prompt here:
    the prompt's tokens made likelier and its bigrams never repeated."""
    counts = {}
    for t in plain.flatten().tolist():
        counts[t] = counts.get(t, 0) + 1
    common = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if t != eos][:2]
    first = sorted({int(t) for t in plain[:2, 0].tolist()} - set(common) - {eos})
    procs = {"suppress_tokens": common, "begin_suppress_tokens": first, "min_length": ids.shape[1] + 2,
             "forced_eos_token_id": eos, "exponential_decay_length_penalty": [3, 1.5]}
    encoder = {"encoder_repetition_penalty": 1.8, "encoder_no_repeat_ngram_size": 2}
    sections = {}
    for name, extra in (("greedy_processors", dict(procs, num_beams=1)),
                        ("beam_processors", dict(procs, num_beams=3, num_return_sequences=2)),
                        ("greedy_encoder_processors", dict(encoder, num_beams=1)),
                        ("beam_encoder_processors", dict(encoder, num_beams=3, num_return_sequences=2))):
        kw = dict(max_new_tokens=args.golden, **extra)
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, output_scores=True,
                             return_dict_in_generate=True, pad_token_id=pad, eos_token_id=eos,
                             **{k: tuple(v) if k == "exponential_decay_length_penalty" else v
                                for k, v in kw.items()})
        sec = {"args": kw, "sequences": out.sequences.tolist()}
        if extra["num_beams"] == 1:
            margins = []
            for s in out.scores:
                top = torch.topk(s.float(), 2, dim=-1).values
                margins.append((top[:, 0] - top[:, 1]).tolist())
            sec["top2_margin"] = margins
        else:
            sec["sequences_scores"] = out.sequences_scores.tolist()
        sections[name] = sec
    return sections


def renormalize_golden(model, plain, ids, mask, pad, eos, args):
    """Beam search with renormalize_logits: HF log-softmaxes the processed
    row again (LogitNormalization, its last processor) before adding the
    running beam score, so every score a processor moves or bans shifts the
    others' and the beam scores show it even where the tokens do not change.
    beam_renormalize: eos banned for the first two steps (min_length two past
    the padded prompt), the repetition penalty and 2-gram bans.
    beam_renormalize_processors: eos banned for three new tokens, then decayed
    upwards and forced at the maximum length, the two tokens plain greedy
    chose most suppressed, the rows' first choices suppressed at the start,
    length penalty 0.8, early_stopping never."""
    counts = {}
    for t in plain.flatten().tolist():
        counts[t] = counts.get(t, 0) + 1
    common = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if t != eos][:2]
    first = sorted({int(t) for t in plain[:, 0].tolist()} - set(common) - {eos})
    sections = {}
    for name, extra in (("beam_renormalize",
                         dict(num_beams=3, num_return_sequences=2, min_length=ids.shape[1] + 2,
                              repetition_penalty=1.3, no_repeat_ngram_size=2)),
                        ("beam_renormalize_processors",
                         dict(num_beams=4, num_return_sequences=2, min_new_tokens=3,
                              exponential_decay_length_penalty=[4, 1.5], forced_eos_token_id=eos,
                              suppress_tokens=common, begin_suppress_tokens=first, length_penalty=0.8,
                              early_stopping="never"))):
        kw = dict(max_new_tokens=args.golden, renormalize_logits=True, **extra)
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, output_scores=True,
                             return_dict_in_generate=True, pad_token_id=pad, eos_token_id=eos,
                             **{k: tuple(v) if k == "exponential_decay_length_penalty" else v
                                for k, v in kw.items()})
        sections[name] = {"args": kw, "sequences": out.sequences.tolist(),
                          "sequences_scores": out.sequences_scores.tolist()}
    return sections


if __name__ == "__main__":
    main()
