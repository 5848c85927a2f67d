# Type stubs of the native module (python/src/Module.cpp). Use the genc
# package, whose Generator wraps these.
from typing import Iterator, List, Optional, Tuple

class Error(RuntimeError): ...

class _Config:
    max_new_tokens: int
    min_new_tokens: int
    num_beams: int
    length_penalty: float
    early_stopping: str  # "true", "false" or "never"
    num_return_sequences: int
    no_repeat_ngram_size: int
    repetition_penalty: float
    encoder_no_repeat_ngram_size: int
    encoder_repetition_penalty: float
    stop_strings: List[str]
    do_sample: bool
    temperature: float
    top_k: int
    top_p: float
    min_p: float
    seed: int
    eos_token_id: List[int]
    min_length: int
    forced_bos_token_id: int  # -1: none
    forced_eos_token_id: List[int]
    suppress_tokens: List[int]
    begin_suppress_tokens: List[int]
    exponential_decay_length_penalty: Optional[Tuple[int, float]]
    bad_words_ids: List[List[int]]
    sequence_bias: List[Tuple[List[int], float]]
    renormalize_logits: bool
    typical_p: float
    epsilon_cutoff: float
    eta_cutoff: float
    num_beam_groups: int
    diversity_penalty: float
    penalty_alpha: float
    force_words: bool
    dola_layers: bool
    batch_size: int
    def __init__(self) -> None: ...
    def validate(self) -> None: ...
    def warnings(self) -> List[str]: ...

_RawSequence = Tuple[List[int], Optional[str], float]
# (kind, prompt, sequence, token_id, text, ids, score, sequences)
_RawEvent = Tuple[str, int, int, int, Optional[str], List[int], float, Optional[List[_RawSequence]]]

class _Stream(Iterator[_RawEvent]):
    def __iter__(self) -> _Stream: ...
    def __next__(self) -> _RawEvent: ...
    def close(self) -> None: ...

class _Generator:
    def __init__(self, plan: str, device: str) -> None: ...
    def generate(self, ids: List[List[int]], masks: List[List[int]], config: _Config) -> List[List[_RawSequence]]: ...
    def stream(self, ids: List[List[int]], masks: List[List[int]], config: _Config) -> _Stream: ...
    def close(self) -> None: ...
    def encode(self, text: bytes, add_special_tokens: bool) -> List[int]: ...
    def decode(self, ids: List[int], skip_special_tokens: bool) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def has_tokenizer(self) -> bool: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def eos_token_id(self) -> List[int]: ...
    @property
    def generation_defaults(self) -> dict: ...
    @property
    def max_batch(self) -> int: ...
    @property
    def max_beams(self) -> int: ...
    @property
    def max_length(self) -> int: ...
    @property
    def max_source_length(self) -> int: ...
    @property
    def max_new_tokens(self) -> int: ...
    @property
    def is_encoder_decoder(self) -> bool: ...
    @property
    def decoder_start_token_id(self) -> int: ...
