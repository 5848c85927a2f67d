"""The forward graph of a Llama-family model as plain ONNX (opset 17), in the
form of Hugging Face's exports (tests/fixtures/llama): input_ids and
attention_mask [batch, sequence] -> logits [batch, sequence, vocab];
positions arange(sequence), a causal mask with key padding from
attention_mask, RoPE by rotate_half from cos/sin of positions x inv_freq,
RMSNorm as x * 1/sqrt(mean(x^2) + eps) * w, SwiGLU, GQA by repeating K/V —
so genc classifies its mask, positions and rotary tables as it does an
export's. Used by tools/gguf_to_onnx.py.

Linear layers take either a float weight (MatMul by [K, N]; f16 weights go
through a Cast, which genc folds into the weight) or MatMulNBits blocks
(com.microsoft; tools/gguf_weights.py).
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


class Graph:
    def __init__(self):
        self.nodes, self.inits = [], []
        self.names = set()

    def name(self, base):
        n, k = base, 1
        while n in self.names:
            n, k = f"{base}_{k}", k + 1
        self.names.add(n)
        return n

    def init(self, name, array):
        name = self.name(name)
        self.inits.append(numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def const(self, where, array):
        return self.init(f"{where}/const", np.asarray(array))

    def op(self, op_type, inputs, where, domain="", **attrs):
        out = self.name(f"{where}/{op_type}_output")
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=self.name(f"{where}/{op_type}"),
                                           domain=domain, **attrs))
        return out

    def float_weight(self, where, w):
        """A weight as an f32 value: f32 as it is, f16 through a Cast."""
        name = self.init(where, w)
        return self.op("Cast", [name], where, to=F32) if w.dtype == np.float16 else name

    def linear(self, where, x, weight):
        """x [..., K] times weight: ("float", W [N, K]) or ("nbits", dict, K)."""
        kind = weight[0]
        if kind == "float":
            w = weight[1]
            return self.op("MatMul", [x, self.float_weight(f"{where}.weight", np.ascontiguousarray(w.T))], where)
        p, K = weight[1], weight[2]
        N, blocks = p["scales"].shape
        ins = [x, self.init(f"{where}.weight_Q{p['bits']}", p["B"]),
               self.init(f"{where}.weight_scales", p["scales"].reshape(-1))]
        if p["zero_points"] is not None:
            ins.append(self.init(f"{where}.weight_zp", p["zero_points"].reshape(-1)))
        return self.op("MatMulNBits", ins, where, domain="com.microsoft", K=K, N=N, bits=p["bits"],
                       block_size=32, accuracy_level=0)

    def rms_norm(self, where, x, w, eps):
        sq = self.op("Pow", [x, self.const(where, np.float32(2))], where)
        mean = self.op("ReduceMean", [sq], where, axes=[-1], keepdims=1)
        add = self.op("Add", [mean, self.const(where, np.float32(eps))], where)
        inv = self.op("Div", [self.const(where, np.float32(1)), self.op("Sqrt", [add], where)], where)
        return self.op("Mul", [self.float_weight(f"{where}.weight", w), self.op("Mul", [x, inv], where)], where)


def build(cfg, weights, vocab_size):
    """cfg: model facts (hidden_size, heads, kv_heads, head_dim, layers,
    rms_eps, rope_theta, sliding_window); weights: a dict from HF-style names
    to ("float", array) / ("nbits", dict, K) (embed_tokens: a float table).
    Returns the onnx.ModelProto."""
    g = Graph()
    H, KVH, D = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    x = g.op("Gather", [g.float_weight("model.embed_tokens.weight", weights["model.embed_tokens.weight"][1]),
                        "input_ids"], "/model/embed_tokens")

    # Positions 0..sequence-1 and their cos / sin [1, 1, sequence, D].
    seq = g.op("Gather", [g.op("Shape", ["input_ids"], "/model"), g.const("/model", np.int64(1))], "/model", axis=0)
    pos = g.op("Range", [g.const("/model", np.int64(0)), seq, g.const("/model", np.int64(1))], "/model")
    inv_freq = (1.0 / (cfg["rope_theta"] ** (np.arange(0, D, 2, dtype=np.int64).astype(np.float32) / D))).astype(np.float32)
    freqs = g.op("MatMul", [g.op("Unsqueeze", [g.op("Cast", [pos], "/model/rotary_emb", to=F32),
                                               g.const("/model/rotary_emb", np.int64([1]))], "/model/rotary_emb"),
                            g.const("/model/rotary_emb", inv_freq[None, :])], "/model/rotary_emb")
    emb = g.op("Concat", [freqs, freqs], "/model/rotary_emb", axis=-1)
    four = g.const("/model/rotary_emb", np.int64([0, 1]))
    cos = g.op("Unsqueeze", [g.op("Cos", [emb], "/model/rotary_emb"), four], "/model/rotary_emb")
    sin = g.op("Unsqueeze", [g.op("Sin", [emb], "/model/rotary_emb"), four], "/model/rotary_emb")

    # Mask [batch, 1, sequence, sequence]: 0 where query i may see key j
    # (j <= i, within the window, attention_mask[b, j] != 0), else f32's minimum.
    qi = g.op("Unsqueeze", [pos, g.const("/model", np.int64([1]))], "/model")
    kj = g.op("Unsqueeze", [pos, g.const("/model", np.int64([0]))], "/model")
    allowed = g.op("LessOrEqual", [kj, qi], "/model")
    if cfg.get("sliding_window"):
        near = g.op("Less", [g.op("Sub", [qi, kj], "/model"), g.const("/model", np.int64(cfg["sliding_window"]))],
                    "/model")
        allowed = g.op("And", [allowed, near], "/model")
    keys = g.op("Unsqueeze", [g.op("Cast", ["attention_mask"], "/model", to=TensorProto.BOOL),
                              g.const("/model", np.int64([1, 2]))], "/model")
    allowed = g.op("And", [allowed, keys], "/model")
    mask = g.op("Where", [allowed, g.const("/model", np.float32(0)),
                          g.const("/model", np.float32(np.finfo(np.float32).min))], "/model")

    def heads(where, t, n):  # [b, s, n*D] -> [b, n, s, D]
        r = g.op("Reshape", [t, g.const(where, np.int64([0, 0, n, D]))], where)
        return g.op("Transpose", [r], where, perm=[0, 2, 1, 3])

    def rope(where, t):  # t*cos + rotate_half(t)*sin
        lo = g.op("Slice", [t, g.const(where, np.int64([0])), g.const(where, np.int64([D // 2])),
                            g.const(where, np.int64([-1]))], where)
        hi = g.op("Slice", [t, g.const(where, np.int64([D // 2])), g.const(where, np.int64([D])),
                            g.const(where, np.int64([-1]))], where)
        rot = g.op("Concat", [g.op("Neg", [hi], where), lo], where, axis=-1)
        return g.op("Add", [g.op("Mul", [t, cos], where), g.op("Mul", [rot, sin], where)], where)

    def repeat(where, t):  # [b, KVH, s, D] -> [b, H, s, D], as HF's repeat_kv
        if H == KVH:
            return t
        u = g.op("Unsqueeze", [t, g.const(where, np.int64([2]))], where)
        e = g.op("Expand", [u, g.const(where, np.int64([1, 1, H // KVH, 1, 1]))], where)
        return g.op("Reshape", [e, g.const(where, np.int64([0, H, -1, D]))], where)

    def bias(where, t, name):
        if name not in weights:
            return t
        return g.op("Add", [t, g.float_weight(name, weights[name][1])], where)

    for i in range(cfg["layers"]):
        p, w = f"/model/layers.{i}", f"model.layers.{i}"
        h = g.rms_norm(f"{p}/input_layernorm", x, weights[f"{w}.input_layernorm.weight"][1], cfg["rms_eps"])
        a = f"{p}/self_attn"
        proj = {n: bias(f"{a}/{n}_proj", g.linear(f"{a}/{n}_proj", h, weights[f"{w}.self_attn.{n}_proj.weight"]),
                        f"{w}.self_attn.{n}_proj.bias") for n in "qkv"}
        q = rope(f"{a}/q", heads(f"{a}/q", proj["q"], H))
        k = repeat(f"{a}/k", rope(f"{a}/k", heads(f"{a}/k", proj["k"], KVH)))
        v = repeat(f"{a}/v", heads(f"{a}/v", proj["v"], KVH))
        s = g.op("MatMul", [q, g.op("Transpose", [k], a, perm=[0, 1, 3, 2])], a)
        s = g.op("Add", [g.op("Mul", [s, g.const(a, np.float32(D ** -0.5))], a), mask], a)
        o = g.op("MatMul", [g.op("Softmax", [s], a, axis=-1), v], a)
        o = g.op("Reshape", [g.op("Transpose", [o], a, perm=[0, 2, 1, 3]), g.const(a, np.int64([0, 0, H * D]))], a)
        x = g.op("Add", [x, g.linear(f"{a}/o_proj", o, weights[f"{w}.self_attn.o_proj.weight"])], p)
        h = g.rms_norm(f"{p}/post_attention_layernorm", x, weights[f"{w}.post_attention_layernorm.weight"][1],
                       cfg["rms_eps"])
        m = f"{p}/mlp"
        gate = g.linear(f"{m}/gate_proj", h, weights[f"{w}.mlp.gate_proj.weight"])
        up = g.linear(f"{m}/up_proj", h, weights[f"{w}.mlp.up_proj.weight"])
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate], m)], m)
        x = g.op("Add", [x, g.linear(f"{m}/down_proj", g.op("Mul", [act, up], m), weights[f"{w}.mlp.down_proj.weight"])],
                 p)
    x = g.rms_norm("/model/norm", x, weights["model.norm.weight"][1], cfg["rms_eps"])
    logits = g.linear("/lm_head", x, weights["lm_head.weight"])
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/logits"))

    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
           for n in ("input_ids", "attention_mask")]
    out = helper.make_tensor_value_info("logits", F32, ["batch", "sequence", vocab_size])
    graph = helper.make_graph(g.nodes, "gguf", ids, [out], initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="genc tools/gguf_to_onnx.py")
    model.ir_version = 8
    return model
