#!/usr/bin/env python3
"""Writes prefill.json: the prefill method of the streaming decoder as a program (the decode
method is graph.json). Same model, same weights (weights.safetensors, shared by both graphs),
traced with TinyDecoderPrefill.forward(tokens [1, T], positions [T], k0, v0, k1, v1).

    /usr/bin/python3 examples/streaming_decoder/make_prefill.py [--s-max 1024]

Checks in PyTorch, before writing, that prefilling the reference's own first tokens gives the
reference's logits at the prompt's last position (so a prefill of any length continues the
same greedy decoding).
"""
import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import inplace  # noqa: E402
from make_model import PROMPT_TOKEN, build  # noqa: E402
from model import TinyDecoderPrefill  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--s-max", type=int, default=1024)
    args = ap.parse_args(argv)
    model = build(args.s_max)
    prefill = TinyDecoderPrefill(s_max=args.s_max)
    prefill.load_state_dict(model.state_dict())
    prefill.eval()

    ref = inplace.read_safetensors(os.path.join(HERE, "reference.safetensors"))
    for length in (1, 5):
        prompt = torch.tensor([[PROMPT_TOKEN] + ref["tokens"][:length - 1].tolist()])
        caches = model.new_caches()
        with torch.no_grad():
            logits, _ = prefill(prompt, torch.arange(length), *caches)
        err = float((logits[0] - ref["logits"][length - 1]).abs().max())
        assert err < 1e-4, "prefill of %d tokens is %g from the reference" % (length, err)

    example = (torch.tensor([[PROMPT_TOKEN, 5, 6]]), torch.arange(3)) + model.new_caches()
    with tempfile.TemporaryDirectory() as tmp:
        with torch.no_grad():
            result = inplace.export_graph(prefill, example, os.path.join(tmp, "prefill.json"),
                                          name="TinyDecoderPrefill",
                                          constants_file="weights.safetensors")
        assert result.input_names == ["tokens", "positions", "k0", "v0", "k1", "v1"]
        # The weights are the decode graph's: prefill.json reads weights.safetensors as is.
        mine = inplace.read_safetensors(os.path.join(tmp, "weights.safetensors"))
        shipped = inplace.read_safetensors(os.path.join(HERE, "weights.safetensors"))
        for key, value in mine.items():
            assert key in shipped and torch.equal(shipped[key], value), key
        shutil.copy(os.path.join(tmp, "prefill.json"), os.path.join(HERE, "prefill.json"))
    print("wrote prefill.json (weights: weights.safetensors, shared with graph.json)")


if __name__ == "__main__":
    main()
