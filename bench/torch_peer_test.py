#!/usr/bin/env python3
"""bench/torch_peer.py's models against Hugging Face's on the CPU (f32, same
random weights): the prompt's logits, greedy tokens (eager and compiled with
fullgraph=True), a prefill at an offset into a filled cache, both attention
forms, and a decode from a randomly filled long context. Needs torch and
transformers; not part of tests/ (CI has no torch).

  python3 bench/torch_peer_test.py [--real]   # --real: the llama135m and gpt2 shapes too
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer as tp  # noqa: E402

TINY = {
    # GQA (4 query heads, 2 KV heads), LM head untied; weights scaled so that greedy is no near-tie.
    "llama-gqa": ["--arch", "llama", "--tiny", "--set", "tie_word_embeddings=false", "--scale", "3", "--seed", "5"],
    "llama-tied": ["--arch", "llama", "--tiny", "--set", "num_key_value_heads=4", "--set", "tie_word_embeddings=true",
                   "--scale", "3", "--seed", "6"],
    "gpt2": ["--arch", "gpt2", "--set", "n_embd=64", "--set", "n_layer=2", "--set", "n_head=4", "--set",
             "vocab_size=1000", "--set", "n_positions=256", "--scale", "3", "--seed", "7"],
}


def close(a, b, tol):
    return (a - b).abs().max().item() <= tol * max(1.0, b.abs().max().item())


def run(name, args, torch, transformers, compile_too):
    hf = tp.load_hf(args, "cpu", torch.float32, torch, transformers)
    V = hf.config.vocab_size
    B, P, N = 3, 9, 12
    ids = tp.prompts(V, B, P, torch, seed=11)
    failures = []

    # The prompt's last logits, and the cache the prefill wrote, against HF's forward.
    peer = tp.make_peer(hf, B, tp.max_len_for(P, N), torch)
    x = peer.hidden(ids, torch.arange(P))
    got = torch.nn.functional.linear(peer.final_norm(x), peer.lm_head)
    want = hf(ids, attention_mask=torch.ones_like(ids), use_cache=False).logits
    if not close(got, want, 1e-4):
        failures.append(f"prompt logits differ by {(got - want).abs().max().item():.3g}")

    # Greedy tokens, eager (both attention forms) and compiled.
    ok, lines = tp.check(hf, ids, N, torch, compile=False, tie_tol=0.0)
    if not ok or "all 12 tokens agree" not in lines[0]:
        failures.append("eager greedy: " + "; ".join(lines))
    out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=N, do_sample=False,
                      eos_token_id=None, pad_token_id=0)[:, P:]
    for form in ("gqa", "grouped"):
        peer = tp.make_peer(hf, B, tp.max_len_for(P, N), torch)
        peer.attention = tp.Attention(form)
        toks, _ = tp.decode(peer, peer, ids, 0, N, torch)
        if not torch.equal(toks, out):
            failures.append(f"{form} form: tokens {toks.tolist()} != HF {out.tolist()}")
    if compile_too:
        torch._dynamo.reset()
        r = tp.measure(hf, ids, N, torch, compile=True, tune=False)
        if not torch.equal(r["tokens"], out):
            failures.append(f"compiled step: tokens {r['tokens'].tolist()} != HF {out.tolist()}")

    # A prefill at an offset: the prompt's first 5 tokens cached, the rest prefilled at [5, P).
    peer = tp.make_peer(hf, B, tp.max_len_for(P, N), torch)
    peer(ids[:, :5], torch.arange(5))
    toks, _ = tp.decode(peer, peer, ids[:, 5:], 5, N, torch)
    if not torch.equal(toks, out):
        failures.append(f"offset prefill: tokens {toks.tolist()} != HF {out.tolist()}")

    # A long context: random K/V at [0, 60), the prompt at [60, 60 + P); the step must see
    # all of it: the tokens differ from those without it, and the masked tail is not read
    # (a cache full of garbage past the position changes nothing).
    r1 = tp.measure(hf, ids, N, torch, context=60 + P, compile=False)
    if torch.equal(r1["tokens"], out):
        failures.append("long context: the random K/V before the prompt changed nothing")
    peer = tp.make_peer(hf, B, tp.max_len_for(60 + P, N), torch)
    peer.fill_random(peer.max_len)  # garbage everywhere, the unwritten tail too
    peer.fill_random(60)  # the same first 60 positions as measure()'s
    toks, _ = tp.decode(peer, peer, ids, 60, N, torch)
    if not torch.equal(toks, r1["tokens"]):
        failures.append("long context: positions past the step's were read")
    print(f"{name}: {'ok' if not failures else 'FAILED'}" + "".join(f"\n  {f}" for f in failures), flush=True)
    return not failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--real", action="store_true", help="also bench.py's llama135m and gpt2 shapes")
    ap.add_argument("--no-compile", action="store_true", help="skip the compiled step (needs a C++ compiler)")
    args = ap.parse_args()
    import torch
    import transformers
    torch.set_grad_enabled(False)
    torch.manual_seed(0)
    cases = dict(TINY)
    if args.real:
        cases.update({n: tp.export_args(n) for n in ("llama135m", "gpt2")})
    ok = True
    for n, a in cases.items():
        try:
            ok &= run(n, a, torch, transformers, not args.no_compile)
        except Exception as e:  # a broken peer may fail loudly: report it with the others
            print(f"{n}: FAILED: {e!r:.300}", flush=True)
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
