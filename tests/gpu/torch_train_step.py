#!/usr/bin/env python3
"""A few PyTorch training steps of a real model on the GPU, for tests/gpu/run.sh.

Models are built from code with random weights and random data (no downloads):
  resnet50     torchvision's ResNet-50, 224x224 images, 1000 classes
  transformer  a GPT-2-small-size decoder (12 layers, d=768, 12 heads, 50257-token vocabulary,
               256-token context) built from torch.nn layers
  mlp          a 1024 -> 4096 -> 4096 -> 1000 MLP: small enough for torch.compile to be quick

--graph (issue 32) runs the step as PyTorch runs it with CUDA graphs:
  cuda-graph   torch.cuda.graph's recipe: 3 eager warm-up steps on a side stream, then forward,
               loss and backward captured once and replayed each step (the batch copied into
               static inputs), the optimizer eager
  compile      torch.compile(mode="reduce-overhead"): Inductor's kernels replayed as CUDA graphs
               (CUDA graph trees), the optimizer eager

Prints one line per iteration ("iter I loss L step_ms T") and a final "summary ..." line, and
writes the figures to --json: the losses as float.hex (bit-exact comparison across runs, e.g. with
and without libmemtool.so under PYTORCH_NO_CUDA_MEMORY_CACHING=1), step times, peak memory as
PyTorch counts it and as the driver sees it (cuMemGetInfo), and a hash of the final weights.
"""
import argparse
import hashlib
import json
import os
import statistics
import sys
import time


def build_resnet50(torch, batch):
    import torchvision  # only this model needs it

    model = torchvision.models.resnet50(weights=None, num_classes=1000)
    g = torch.Generator().manual_seed(1)
    inputs = torch.randn(batch, 3, 224, 224, generator=g)
    targets = torch.randint(0, 1000, (batch,), generator=g)
    return model, inputs, targets


def build_transformer(torch, batch):
    nn = torch.nn
    vocab, context, width, heads, layers = 50257, 256, 768, 12, 12

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(vocab, width)
            self.positions = nn.Embedding(context, width)
            layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)
            self.head.weight = self.tokens.weight  # tied, as in GPT-2

        def forward(self, ids):
            t = ids.shape[1]
            pos = torch.arange(t, device=ids.device)
            h = self.tokens(ids) + self.positions(pos)
            mask = nn.Transformer.generate_square_subsequent_mask(t, device=ids.device)
            h = self.blocks(h, mask=mask, is_causal=True)
            return self.head(self.norm(h)).flatten(0, 1)

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (batch, context + 1), generator=g)
    return Decoder(), ids[:, :-1].contiguous(), ids[:, 1:].reshape(-1).contiguous()


def build_mlp(torch, batch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1000))
    g = torch.Generator().manual_seed(1)
    return model, torch.randn(batch, 1024, generator=g), torch.randint(0, 1000, (batch,), generator=g)


MODELS = {"resnet50": (build_resnet50, 32), "transformer": (build_transformer, 8), "mlp": (build_mlp, 256)}


def eager_steps(torch, F, model, optimizer, inputs, targets):
    """One training step at each call, as PyTorch runs it without graphs; returns the loss."""
    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss
    return step


def cuda_graph_steps(torch, F, model, optimizer, inputs, targets):
    """torch.cuda.graph's documented recipe (whole-network capture): the first three calls are
    the eager warm-up on a side stream, the fourth captures and replays, the rest replay."""
    static_in, static_t = inputs.clone(), targets.clone()
    state = {"calls": 0, "graph": None, "loss": None}
    side = torch.cuda.Stream()

    def step():
        state["calls"] += 1
        if state["calls"] <= 3:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                optimizer.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(static_in), static_t)
                loss.backward()
                optimizer.step()
            torch.cuda.current_stream().wait_stream(side)
            return loss
        if state["graph"] is None:
            optimizer.zero_grad(set_to_none=True)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                state["loss"] = F.cross_entropy(model(static_in), static_t)
                state["loss"].backward()
            state["graph"] = graph
        static_in.copy_(inputs)
        static_t.copy_(targets)
        state["graph"].replay()
        optimizer.step()
        return state["loss"]
    return step


def compiled_steps(torch, F, model, optimizer, inputs, targets):
    """torch.compile(mode="reduce-overhead"): Inductor's graphs replayed as CUDA graph trees."""
    compiled = torch.compile(model, mode="reduce-overhead")
    mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)

    def step():
        if mark is not None:
            mark()
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(compiled(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss
    return step


STEPS = {"none": eager_steps, "cuda-graph": cuda_graph_steps, "compile": compiled_steps}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet50")
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--batch", type=int, default=0, help="default: the model's own")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--graph", choices=sorted(STEPS), default="none",
                        help="run the step with CUDA graphs as PyTorch does (see above)")
    args = parser.parse_args()

    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        print("SKIP: torch.cuda is not available", file=sys.stderr)
        return 0
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=True)

    build, default_batch = MODELS[args.model]
    device = torch.device("cuda")
    free_before, total = torch.cuda.mem_get_info()
    model, inputs, targets = build(torch, args.batch or default_batch)
    model = model.to(device)
    inputs, targets = inputs.to(device), targets.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()

    step = STEPS[args.graph](torch, F, model, optimizer, inputs, targets)
    losses, step_ms, lowest_free = [], [], free_before
    for i in range(args.iterations):
        start = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        elapsed = (time.perf_counter() - start) * 1000.0
        lowest_free = min(lowest_free, torch.cuda.mem_get_info()[0])
        value = loss.item()
        losses.append(value)
        step_ms.append(elapsed)
        print(f"iter {i} loss {value!r} step_ms {elapsed:.2f}", flush=True)

    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().cpu().numpy().tobytes())
    steady = step_ms[1:] or step_ms
    figures = {
        "model": args.model,
        "graph": args.graph,
        "batch": args.batch or default_batch,
        "caching_allocator": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") != "1",
        "memtool": "libmemtool" in os.environ.get("LD_PRELOAD", ""),
        "losses": losses,
        "losses_hex": [float(v).hex() for v in losses],
        "step_ms": step_ms,
        "median_step_ms_after_first": statistics.median(steady),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "device_bytes_used_peak_sampled": free_before - lowest_free,
        "device_total_bytes": total,
        "weights_sha256": digest.hexdigest(),
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
    }
    print("summary median_step_ms {:.2f} max_allocated_MiB {:.1f} max_reserved_MiB {:.1f} "
          "device_used_MiB {:.1f} weights {}".format(
              figures["median_step_ms_after_first"], figures["max_memory_allocated"] / 2**20,
              figures["max_memory_reserved"] / 2**20,
              figures["device_bytes_used_peak_sampled"] / 2**20, digest.hexdigest()[:16]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
