"""Hugging Face decoders with a static cache, exported by torch.export and compiled by inplace,
decoded for 16 steps: the tokens must equal the model's own (the same exportable module run
by torch eager), and the caches must be written in place.

Run by scripts/test-hf.sh (torch >= 2.5 with transformers). INPLACE_HF_DUMP=DIR writes the
graph JSON of each model (as exported) there; with INPLACE_HF_DUMP_ONLY=1 nothing
is compiled. Prints one line per model and a
summary; exits non-zero when any model fails or is skipped without INPLACE_HF_ALLOW_SKIP=1.
"""
import copy
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402

import inplace  # noqa: E402

STEPS = 16
PROMPT = [3, 17, 42, 7]
MAX_CACHE = 64


def configs():
    import transformers as tf
    common = dict(vocab_size=128, num_hidden_layers=2, max_position_embeddings=MAX_CACHE)
    yield "llama", tf.LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                  num_key_value_heads=2, **common)
    yield "qwen2", tf.Qwen2Config(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                  num_key_value_heads=2, **common)
    yield "gpt2", tf.GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=MAX_CACHE)
    yield "mistral", tf.MistralConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                      num_key_value_heads=2, pad_token_id=0, **common)
    # Phi-3: fused qkv_proj and gate_up_proj; Gemma: GeGLU, scaled embedding, (1 + w) RMSNorm.
    yield "phi3", tf.Phi3Config(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                num_key_value_heads=2, pad_token_id=0, bos_token_id=1,
                                eos_token_id=2, **common)
    yield "gemma", tf.GemmaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                  num_key_value_heads=2, head_dim=16, pad_token_id=0, **common)


def exportable(model):
    """The transformers module that holds a StaticCache as buffers and takes
    (input_ids, cache_position): its name and constructor moved between releases."""
    try:
        from transformers import GenerationConfig
        model.generation_config = GenerationConfig(
            use_cache=True, cache_implementation="static", max_length=MAX_CACHE,
            cache_config={"batch_size": 1, "max_cache_len": MAX_CACHE, "device": "cpu"})
    except Exception as e:  # noqa: BLE001 - newer releases take the sizes as arguments
        print("  (generation_config not set: %s: %s)" % (type(e).__name__, e))
    import transformers.integrations.executorch as ex
    errors = []
    candidates = []
    if hasattr(ex, "TorchExportableModuleWithStaticCache"):
        cls = ex.TorchExportableModuleWithStaticCache
        candidates += [lambda: cls(model), lambda: cls(model, batch_size=1, max_cache_len=MAX_CACHE),
                       lambda: cls(model, 1, MAX_CACHE)]
    if hasattr(ex, "TorchExportableModuleForDecoderOnlyLM"):
        cls2 = ex.TorchExportableModuleForDecoderOnlyLM
        candidates += [lambda: cls2(model, max_batch_size=1, max_cache_len=MAX_CACHE),
                       lambda: cls2(model, batch_size=1, max_cache_len=MAX_CACHE), lambda: cls2(model)]
    for make in candidates:
        try:
            m = make()
            inner = getattr(m, "model", m)  # ForDecoderOnlyLM wraps the static-cache module
            if not hasattr(inner, "forward"):
                continue
            return m
        except Exception as e:  # noqa: BLE001 - try the next spelling
            errors.append("%s: %s" % (type(e).__name__, e))
    raise RuntimeError("no exportable static-cache module: " + " | ".join(errors))


def call_step(m, token, pos):
    ids = torch.tensor([[token]], dtype=torch.long)
    cp = torch.tensor([pos], dtype=torch.long)
    try:
        out = m(input_ids=ids, cache_position=cp)
    except TypeError:
        out = m(ids, cp)
    return out.logits if hasattr(out, "logits") else (out[0] if isinstance(out, (tuple, list)) else out)


def decode(step_fn):
    logits, tokens = None, []
    pos = 0
    for t in PROMPT:
        logits = step_fn(t, pos)
        pos += 1
    for _ in range(STEPS):
        tok = int(logits[0, -1].argmax())
        tokens.append(tok)
        logits = step_fn(tok, pos)
        pos += 1
    return tokens, logits


def reset_caches(module, ep):
    with torch.no_grad():
        for n, b in module.named_buffers():
            if "cache" in n:
                b.zero_()
        for table in (ep.state_dict, getattr(ep, "constants", {}) or {}):
            for n, t in table.items():
                if "cache" in n and isinstance(t, torch.Tensor):
                    t.zero_()


def check(name, config):
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    wrapper = exportable(model)
    reference = copy.deepcopy(wrapper)
    with torch.no_grad():
        want, want_logits = decode(lambda t, p: call_step(reference, t, p))
    ids, cp = torch.tensor([[PROMPT[0]]]), torch.tensor([0])
    inner = getattr(wrapper, "model", wrapper)
    target = inner if hasattr(inner, "static_cache") or hasattr(inner, "key_cache_0") else wrapper
    with torch.no_grad():
        ep = torch.export.export(target, args=(), kwargs={"input_ids": ids, "cache_position": cp})
    dump = os.environ.get("INPLACE_HF_DUMP")
    if dump:  # the graph JSON inplace.compile gets, for reproducing a failure elsewhere
        import json
        from inplace.capture import capture
        with open(os.path.join(dump, "%s.json" % name), "w") as f:
            json.dump(capture(ep, (ids, cp)).doc, f)
        if os.environ.get("INPLACE_HF_DUMP_ONLY"):
            return True, ["%-6s graphs written to %s" % (name, dump)]
    lines = []
    last_error = None
    for label, program in (("as exported", ep), ("decomposed", None)):
        reset_caches(target, ep)  # a failed attempt may have written some rows
        try:
            if program is None:
                program = ep.run_decompositions()
            t0 = time.perf_counter()
            compiled = inplace.compile(program, (ids, cp))
            compile_s = time.perf_counter() - t0
            got, got_logits = decode(lambda t, p: compiled(torch.tensor([[t]]), torch.tensor([p])))
            ok = got == want
            close = torch.allclose(got_logits, want_logits, atol=1e-3, rtol=1e-3)
            kinds = sorted({k for _, k in compiled.aliased_io.values()})
            lines.append("%-6s %-11s tokens %s, logits close %s, compile %.2f s, %d aliased outputs (%s)"
                         % (name, label, "EQUAL" if ok else "DIFFER", close, compile_s,
                            len(compiled.aliased_io), ",".join(kinds)))
            if not ok:
                lines.append("       want %s\n       got  %s" % (want, got))
            return ok and close, lines
        except Exception as e:  # noqa: BLE001 - report and try the decomposed program
            last_error = e
            lines.append("%-6s %-11s FAILED: %s: %s" % (name, label, type(e).__name__,
                                                       str(e).splitlines()[0] if str(e) else ""))
            if os.environ.get("INPLACE_HF_TRACEBACK"):
                lines.append(traceback.format_exc())
    return False, lines


def main():
    import transformers
    print("torch %s, transformers %s, python %s" % (torch.__version__, transformers.__version__,
                                                  sys.version.split()[0]))
    results = {}
    for name, config in configs():
        try:
            ok, lines = check(name, config)
        except Exception as e:  # noqa: BLE001 - a model that cannot even be exported
            ok, lines = False, ["%-6s FAILED before compiling: %s: %s" % (name, type(e).__name__, e)]
            if os.environ.get("INPLACE_HF_TRACEBACK"):
                lines.append(traceback.format_exc())
        results[name] = ok
        print("\n".join(lines), flush=True)
    print("summary: " + ", ".join("%s %s" % (n, "PASS" if ok else "FAIL") for n, ok in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
