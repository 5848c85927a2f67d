"""Parity check: `genc eval` on a fixture export reproduces the recorded outputs.

  check_logits.py --genc BIN --fixture DIR --model FILE.onnx --tmp DIR [--passes a,b,c]

Inputs and the reference come from DIR/logits.npz (recorded with PyTorch):
  decoder-only  input_ids, attention_mask                   -> logits
  encoder       input_ids, attention_mask                   -> last_hidden_state vs encoder_hidden_states
  decoder       decoder_input_ids, encoder_hidden_states,
                encoder_attention_mask (= npz attention_mask) -> logits
Passes when max|diff| <= 1e-4 * max|reference|. Prints one line:
  gpt2/model.onnx [no passes]: max|diff| = 1.9e-06, max|ref| = 2.62, ratio = 7.3e-07 <= 1e-04: ok
"""
import argparse
import os
import subprocess
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--genc", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--model", required=True, help="file name inside the fixture folder")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--passes", default=None, help="comma-separated; default: genc eval's default")
    ap.add_argument("--tol", type=float, default=1e-4, help="limit on max|diff| / max|ref|")
    args = ap.parse_args()

    z = np.load(os.path.join(args.fixture, "logits.npz"))
    stem = args.model.split(".")[0]
    if stem == "encoder":
        inputs = {"input_ids": z["input_ids"], "attention_mask": z["attention_mask"]}
        out_name, ref = "last_hidden_state", z["encoder_hidden_states"]
    elif stem == "decoder":
        inputs = {"decoder_input_ids": z["decoder_input_ids"],
                  "encoder_hidden_states": z["encoder_hidden_states"],
                  "encoder_attention_mask": z["attention_mask"]}
        out_name, ref = "logits", z["logits"]
    else:
        inputs = {"input_ids": z["input_ids"], "attention_mask": z["attention_mask"]}
        out_name, ref = "logits", z["logits"]

    os.makedirs(args.tmp, exist_ok=True)
    cmd = [args.genc, "eval", os.path.join(args.fixture, args.model)]
    for name, a in inputs.items():
        path = os.path.join(args.tmp, name + ".npy")
        np.save(path, a)
        cmd += ["--input", f"{name}={path}"]
    outdir = os.path.join(args.tmp, "out")
    cmd += ["--output-dir", outdir]
    if args.passes is not None:
        cmd.append("--passes=" + args.passes)

    label = f"{os.path.basename(os.path.normpath(args.fixture))}/{args.model} " \
            f"[{'passes: ' + args.passes if args.passes else 'no passes'}]"
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"{label}: FAIL: genc eval exited with {r.returncode}")
        print(r.stderr.strip()[-4000:])
        return 1
    path = os.path.join(outdir, out_name + ".npy")
    if not os.path.exists(path):
        print(f"{label}: FAIL: no {out_name}.npy; genc wrote {sorted(os.listdir(outdir))}")
        return 1
    got = np.load(path)
    if got.shape != ref.shape:
        print(f"{label}: FAIL: {out_name} has shape {got.shape}, expected {ref.shape}")
        return 1
    diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
    scale = float(np.max(np.abs(ref)))
    ratio = diff / scale if scale else diff
    ok = np.isfinite(diff) and ratio <= args.tol
    extra = ""
    if out_name == "logits":
        flips = int(np.sum(got.argmax(-1) != ref.argmax(-1)))
        extra = f", argmax flips = {flips}"
    print(f"{label}: max|diff| = {diff:.3g}, max|ref| = {scale:.3g}, ratio = {ratio:.3g} "
          f"{'<=' if ok else '>'} {args.tol:g}{extra}: {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
