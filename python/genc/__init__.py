"""genc: compile a Hugging Face ONNX export into a generation plan, and
generate from it with Hugging Face `generate()` semantics.

    import genc
    genc.compile("models/tiny-gpt2", "model.plan", max_batch=4)
    g = genc.Generator("model.plan")                 # device="auto": the GPU if any
    print(g.generate("Permission is hereby granted", max_new_tokens=16)[0].text)
    for ev in g.stream("Permission is hereby granted", max_new_tokens=16):
        if ev.kind == "token":
            print(ev.text, end="", flush=True)

Errors raise genc.Error (a RuntimeError) with the runtime's or the
compiler's message; bad arguments raise ValueError or TypeError.
"""
from ._genc import Error
from ._compile import compile, genc_binary
from ._generator import Generator, Result, Scores, Sequence, StreamEvent
from ._config import valid_names as generate_options

__version__ = "0.1.0"
__all__ = ["Error", "compile", "genc_binary", "Generator", "Result", "Scores", "Sequence", "StreamEvent",
           "generate_options"]
