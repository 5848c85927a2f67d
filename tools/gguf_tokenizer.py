"""tokenizer.json and tokenizer_config.json from a GGUF file's tokenizer
metadata (tokenizer.ggml.*), the same tokenizer Hugging Face transformers
builds for that file (AutoTokenizer.from_pretrained(dir, gguf_file=...),
transformers 5.17: integrations/ggml.py's converters), written without it:

  tokenizer.ggml.model "gpt2", architecture llama / mistral: byte-level BPE
    as GGUFLlamaConverter's Llama-3 path (byte fallback, ByteLevel pre-
    tokenizer without prefix space, control tokens special);
  tokenizer.ggml.model "gpt2", architecture qwen2: Qwen2's (NFC, its split
    regex, ByteLevel; <|endoftext|>, <|im_start|>, <|im_end|> special);
  tokenizer.ggml.model "llama": SentencePiece-style BPE with byte fallback
    (▁ for spaces, a prefix ▁ unless add_space_prefix is false).
Neither adds a BOS (transformers maps no add_bos_token from GGUF).
tests/tools/gguf_tokenizer_check.py compares the result with transformers'.
"""
from gguf_weights import ConvertError

CONTROL = 3  # tokenizer.ggml.token_type of special (control) tokens

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")


def _added(i, content):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def _merges_from_scores(tokens, scores):
    """A SentencePiece vocabulary's merges, as transformers builds them for a
    GGUF file without tokenizer.ggml.merges (GGUFTokenizerSkeleton): every
    split of a piece into two pieces, best-scored pieces first."""
    if scores is None:
        raise ConvertError("tokenizer.ggml.merges and tokenizer.ggml.scores are both missing")
    vocab = {t: scores[i] for i, t in enumerate(tokens)}
    merges = []
    for merge, piece_score in vocab.items():
        local = []
        for index in range(1, len(merge)):
            piece_l, piece_r = merge[:index], merge[index:]
            if piece_l in vocab and piece_r in vocab:
                local.append((piece_l, piece_r, piece_score))
        local = sorted(local, key=lambda x: (vocab[x[0]], vocab[x[1]]), reverse=True)
        merges.extend(local)
    merges = sorted(merges, key=lambda val: val[2], reverse=True)
    return [[a, b] for a, b, _ in merges]


def _merges(meta):
    merges = meta.get("tokenizer.ggml.merges")
    if merges is None:
        return _merges_from_scores(meta["tokenizer.ggml.tokens"], meta.get("tokenizer.ggml.scores"))
    out = []
    for m in merges:
        parts = m.split(" ")
        if len(parts) != 2:
            raise ConvertError(f"tokenizer.ggml.merges holds {m!r}, not two tokens separated by a space")
        out.append(parts)
    return out


def tokenizer_json(meta, arch):
    """The tokenizer.json object. meta: the GGUF's key -> value (strings,
    lists, numbers) for the tokenizer.ggml.* keys."""
    model = meta.get("tokenizer.ggml.model")
    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens is None:
        raise ConvertError("tokenizer.ggml.tokens is missing")
    types = meta.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    vocab = {t: i for i, t in enumerate(tokens)}
    unk_id = meta.get("tokenizer.ggml.unknown_token_id")
    unk = tokens[unk_id] if unk_id is not None and 0 <= unk_id < len(tokens) else None
    add_prefix_space = meta.get("tokenizer.ggml.add_space_prefix", True)
    # Special: the control tokens, and (as transformers' tokenizer registers
    # them) the unknown token and the BOS token, by id.
    bos_id = meta.get("tokenizer.ggml.bos_token_id")
    special_ids = {i for i, t in enumerate(types) if t == CONTROL}
    special_ids |= {i for i in (unk_id, bos_id) if isinstance(i, int) and 0 <= i < len(tokens)}
    specials = [_added(i, tokens[i]) for i in sorted(special_ids)]
    bpe = {"type": "BPE", "dropout": None, "unk_token": unk, "continuing_subword_prefix": None,
           "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
           "vocab": vocab, "merges": _merges(meta)}
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
    plain_post = {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}],
                  "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                  "special_tokens": {}}
    post = plain_post
    if model == "gpt2" and arch == "qwen2":
        post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
        bpe.update(unk_token=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False,
                   byte_fallback=False)
        specials = [_added(vocab[t], t) for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>") if t in vocab]
        normalizer = {"type": "NFC"}
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
        decoder = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    elif model == "gpt2":
        normalizer = {"type": "Sequence", "normalizers": []}
        pre = byte_level
        decoder = {"type": "Sequence", "decoders": [
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]}
        if add_prefix_space:
            decoder["decoders"].append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    elif model == "llama":
        seq = [{"type": "Prepend", "prepend": "\u2581"}] if add_prefix_space else []
        normalizer = {"type": "Sequence", "normalizers": seq + [
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
        pre = None
        decoder = {"type": "Sequence", "decoders": [
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}]}
        if add_prefix_space:
            decoder["decoders"].append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    else:
        raise ConvertError(f"tokenizer.ggml.model = {model!r} is not supported (gpt2, llama)")
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": specials,
            "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": post, "decoder": decoder,
            "model": bpe}


def tokenizer_config(meta):
    """tokenizer_config.json: the special tokens by the GGUF's ids, and the
    chat template (tokenizer.chat_template)."""
    tokens = meta.get("tokenizer.ggml.tokens") or []

    def token(key):
        i = meta.get(key)
        return tokens[i] if isinstance(i, int) and 0 <= i < len(tokens) else None

    cfg = {"add_bos_token": False, "add_eos_token": False, "clean_up_tokenization_spaces": False,
           "model_max_length": meta.get("context_length", 2048), "tokenizer_class": "PreTrainedTokenizerFast"}
    for name, key in (("bos_token", "tokenizer.ggml.bos_token_id"), ("eos_token", "tokenizer.ggml.eos_token_id"),
                      ("unk_token", "tokenizer.ggml.unknown_token_id"), ("pad_token", "tokenizer.ggml.padding_token_id")):
        if token(key) is not None:
            cfg[name] = token(key)
    if meta.get("tokenizer.chat_template"):
        cfg["chat_template"] = meta["tokenizer.chat_template"]
    return cfg
