#!/usr/bin/env python3
"""Builds the streaming decoder example: graph.json, weights.safetensors, inputs.safetensors and
reference.safetensors (PyTorch eager greedy decoding).

    /usr/bin/python3 examples/streaming_decoder/make_model.py [--s-max 1024] [--steps 64] [--out DIR]

Needs torch (and nothing else): the exporter is python/inplace in this repository.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import inplace  # noqa: E402
from model import TinyDecoder  # noqa: E402

PROMPT_TOKEN = 1


def build(s_max):
    torch.manual_seed(0)
    model = TinyDecoder(s_max=s_max)
    model.eval()
    return model


def step_inputs(model, token, pos, caches):
    return (torch.tensor([[token]], dtype=torch.int64), torch.tensor([pos], dtype=torch.int64)) + tuple(caches)


def greedy_decode(model, steps):
    """Feeds PROMPT_TOKEN at pos 0, then each argmax at pos 1, 2, ...; returns the tokens fed's
    successors, the logits of every step and the final caches."""
    caches = model.new_caches()
    token = PROMPT_TOKEN
    tokens, logits = [], []
    with torch.no_grad():
        for pos in range(steps):
            lg, nxt = model(*step_inputs(model, token, pos, caches))
            logits.append(lg[0].clone())
            token = int(nxt.item())
            tokens.append(token)
    return torch.tensor(tokens, dtype=torch.int64), torch.stack(logits), caches


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--s-max", type=int, default=1024, help="cache slots (default 1024)")
    ap.add_argument("--steps", type=int, default=64, help="greedy steps in the reference (default 64)")
    ap.add_argument("--out", default=HERE, help="output folder (default: this folder)")
    args = ap.parse_args(argv)
    if not 1 <= args.steps <= args.s_max:
        ap.error("--steps must be between 1 and --s-max")
    os.makedirs(args.out, exist_ok=True)

    model = build(args.s_max)
    example = step_inputs(model, PROMPT_TOKEN, 0, model.new_caches())
    with torch.no_grad():
        result = inplace.export_graph(model, example, os.path.join(args.out, "graph.json"),
                                      name="TinyDecoder", constants_file="weights.safetensors")
    expected = ["token", "pos", "k0", "v0", "k1", "v1"]
    assert result.input_names == expected, result.input_names
    meta = {"s_max": str(args.s_max), "prompt_token": str(PROMPT_TOKEN), "torch": torch.__version__}
    inplace.write_inputs(os.path.join(args.out, "inputs.safetensors"),
                         result.inputs_dict(example), metadata=meta)

    tokens, logits, caches = greedy_decode(model, args.steps)
    top2 = logits.topk(2, dim=-1).values
    margin = float((top2[:, 0] - top2[:, 1]).min())
    ref = {"tokens": tokens, "logits": logits}
    ref.update(zip(["k0", "v0", "k1", "v1"], caches))
    inplace.write_safetensors(
        os.path.join(args.out, "reference.safetensors"), ref,
        dict(meta, steps=str(args.steps), min_top2_margin=repr(margin)))
    print("wrote graph.json, weights.safetensors, inputs.safetensors, reference.safetensors to",
          args.out)
    print("tokens:", tokens.tolist())
    print("smallest top-1/top-2 logit margin over the steps: %.6g" % margin)


if __name__ == "__main__":
    main()
