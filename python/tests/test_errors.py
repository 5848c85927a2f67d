"""Bad input is a Python exception with the runtime's message, never a crash."""
import os

import pytest

import genc
from conftest import TINY


def test_missing_plan(workdir):
    with pytest.raises(genc.Error, match="nothing.plan"):
        genc.Generator(os.path.join(workdir, "nothing.plan"))


def test_not_a_plan(workdir):
    path = os.path.join(workdir, "garbage.plan")
    with open(path, "wb") as f:
        f.write(b"\0" * 4096)
    with pytest.raises(genc.Error, match="garbage.plan"):
        genc.Generator(path)


def test_unknown_device(plan):
    with pytest.raises(genc.Error, match="tpu"):
        genc.Generator(plan, device="tpu")


def test_text_without_tokenizer(ids_plan):
    g = genc.Generator(ids_plan, device="cpu")
    with pytest.raises(ValueError, match="prompt 0: the plan carries no tokenizer .*or pass token ids"):
        g.generate("hello", max_new_tokens=2)
    assert len(g.generate([[5, 6]], max_new_tokens=2)[0].ids) == 2
    assert g.generate([5, 6], max_new_tokens=2)[0].text is None


@pytest.mark.parametrize("prompt,text", [
    (b"ok \xff", "prompt 0: the text is not valid UTF-8 (byte 3)"),
    ("ok \udcff", "prompt 0: the text is not valid UTF-8 (a lone surrogate at character 3)"),
    ("", "prompt 0: field \"input_ids\": the prompt is empty"),
    ([5000], "prompt 0: field \"input_ids\": element 0 is 5000, outside the vocabulary [0, 1000)"),
])
def test_bad_prompts(gen, prompt, text):
    with pytest.raises(ValueError) as e:
        gen.generate(prompt, max_new_tokens=2)
    assert text in str(e.value)


def test_bad_prompt_types(gen):
    with pytest.raises(TypeError, match="prompt 1 must be a str or a list of token ids"):
        gen.generate(["ok", 3.5])
    with pytest.raises(ValueError, match="no prompts"):
        gen.generate([])
    with pytest.raises(ValueError, match="attention_mask has 1 rows for 2 prompts"):
        gen.generate([[5, 6], [7]], attention_mask=[[1, 1]])
    with pytest.raises(ValueError, match="attention_mask"):
        gen.generate([[5, 6]], attention_mask=[[1, 2]])


def test_closed_generator(plan):
    with genc.Generator(plan, device="cpu") as g:
        g.generate("Copyright", max_new_tokens=1)
    with pytest.raises(genc.Error, match="closed"):
        g.generate("Copyright", max_new_tokens=1)


def test_compile_errors(workdir):
    with pytest.raises(genc.Error, match="genc compile failed: .*nowhere"):
        genc.compile(os.path.join(workdir, "nowhere"), os.path.join(workdir, "x.plan"), progress=False)
    with pytest.raises(genc.Error, match="--dtype"):
        genc.compile(TINY, os.path.join(workdir, "x.plan"), dtype="f8", progress=False)
    assert not os.path.exists(os.path.join(workdir, "x.plan"))


def test_compile_progress(workdir, capfd):
    genc.compile(os.path.join(TINY, "model.onnx"), os.path.join(workdir, "p.plan"), max_batch=1, max_beams=1,
                 max_length=16, gpu_arch=[], progress=True)
    err = capfd.readouterr().err
    for phase in ("import", "infer-shapes", "fuse", "write-plan"):
        assert "genc: " + phase in err
    assert "import: weights" in err
    genc.compile(os.path.join(TINY, "model.onnx"), os.path.join(workdir, "q.plan"), max_batch=1, max_beams=1,
                 max_length=16, gpu_arch=[], progress=False)
    assert capfd.readouterr().err == ""
