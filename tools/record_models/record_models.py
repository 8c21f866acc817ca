#!/usr/bin/python3
"""Records small real PyTorch training runs as replay logs (tests/fixtures/traces/README.md).

PyTorch 1.13 from Debian (python3-torch, python3-torchvision), on the CPU, one thread, random
weights and data. Tensor storage allocations and frees come from alloc_shim.so (preloaded: it
logs c10's posix_memalign/free); each operator from a TorchDispatchMode, after it returned,
with the storages it read (R) and wrote (W). Usage, from this folder:

  gcc -O2 -shared -fPIC -o /tmp/alloc_shim.so alloc_shim.c -ldl -lpthread
  LD_PRELOAD=/tmp/alloc_shim.so /usr/bin/python3 record_models.py OUT_DIR [model ...]

Models (see MODELS): resnet18, bert_tiny, gpt_tiny, accum_cnn (two micro-batches a step).
"""
import ctypes
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

SHIM = ctypes.CDLL(None)  # the preloaded alloc_shim.so


def line(text):
    SHIM.rec_line(text.encode())


def storage_ptr(t):
    if not isinstance(t, torch.Tensor) or t.is_sparse:
        return 0
    try:
        return t.storage().data_ptr()
    except (NotImplementedError, RuntimeError):
        return 0


class OperatorLog(TorchDispatchMode):
    """One K line per operator: every tensor argument is read; arguments the schema marks as
    written, and returned tensors that alias no argument, are written."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        reads, writes = [], []
        schema = func._schema
        named = list(zip(schema.arguments, args)) + [(a, kwargs[a.name]) for a in schema.arguments if a.name in kwargs]
        for arg, value in named:
            written = arg.alias_info is not None and arg.alias_info.is_write
            for t in tree_flatten(value)[0]:
                p = storage_ptr(t)
                if p:
                    reads.append(p)
                    if written:
                        writes.append(p)
        results = out if isinstance(out, (tuple, list)) else (out,)
        for ret, value in zip(schema.returns, results):
            if ret.alias_info is not None:
                continue  # a view or the written argument itself
            for t in tree_flatten(value)[0]:
                p = storage_ptr(t)
                if p:
                    writes.append(p)
        fmt = lambda ps: ",".join("%x" % p for p in dict.fromkeys(ps)) or "-"
        line("K %s R %s W %s" % (func, fmt(reads), fmt(writes)))
        return out


# --- models ------------------------------------------------------------------------------------

class Block(nn.Module):
    """A pre-norm transformer block; causal (GPT-2-like) or not (BERT-like)."""

    def __init__(self, d, heads, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        if self.causal:
            mask = torch.ones(s, s, dtype=torch.bool).triu(1)
            att = att.masked_fill(mask, float("-inf"))
        att = self.drop(att.softmax(-1))
        x = x + self.drop(self.proj((att @ v).transpose(1, 2).reshape(b, s, d)))
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


class TinyTransformer(nn.Module):
    def __init__(self, vocab, d, heads, layers, seq, causal):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, causal) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        if causal:
            self.head.weight = self.tok.weight  # tied, as GPT-2
        self.causal = causal

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def small_cnn():
    def unit(i, o):
        return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
    return nn.Sequential(*unit(3, 16), nn.MaxPool2d(2), *unit(16, 32), nn.MaxPool2d(2), *unit(32, 64),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def resnet_bn():
    import torchvision
    from torchvision.models.resnet import BasicBlock, ResNet
    model = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=10)
    desc = "torchvision ResNet(BasicBlock, [2,2,2,2]) (resnet18: batch norm, residuals), 10 classes, " \
           "torchvision=%s" % torchvision.__version__
    batch = lambda g: (torch.randn(4, 3, 32, 32, generator=g), torch.randint(0, 10, (4,), generator=g))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    return model, opt, batch, F.cross_entropy, 1, desc + "; batch 4x3x32x32; SGD momentum"


def transformer(causal):
    vocab, d, heads, layers, seq, n = 512, 64, 4, 6, 32, 4
    model = TinyTransformer(vocab, d, heads, layers, seq, causal)
    kind = "GPT-2-like decoder (causal mask, tied embeddings)" if causal else "BERT-like encoder (token prediction)"
    def batch(g):
        ids = torch.randint(0, vocab, (n, seq), generator=g)
        return ids, torch.randint(0, vocab, (n, seq), generator=g)
    loss = lambda out, y: F.cross_entropy(out.reshape(-1, vocab), y.reshape(-1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3) if causal else torch.optim.Adam(model.parameters(), lr=1e-3)
    desc = "%s: vocab %d, d %d, %d heads, %d layers, seq %d, batch %d, dropout 0.1, %s" % (
        kind, vocab, d, heads, layers, seq, n, "AdamW" if causal else "Adam")
    return model, opt, batch, loss, 1, desc


def accum_cnn():
    model = small_cnn()
    batch = lambda g: (torch.randn(4, 3, 32, 32, generator=g), torch.randint(0, 10, (4,), generator=g))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    desc = "conv-bn-relu x3 CNN, gradient accumulation over 2 micro-batches of 4x3x32x32 per step, SGD momentum"
    return model, opt, batch, F.cross_entropy, 2, desc


MODELS = {
    "resnet18": resnet_bn,
    "bert_tiny": lambda: transformer(False),
    "gpt_tiny": lambda: transformer(True),
    "accum_cnn": accum_cnn,
}
ITERATIONS = 5


def record(name, path):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if SHIM.rec_open(path.encode()) != 0:
        sys.exit("record_models: preload alloc_shim.so (libc10 not found, or %s not writable)" % path)
    line("# model=%s torch=%s threads=1 iters=%d" % (name, torch.__version__, ITERATIONS))
    line("# format: A <alloc_id> <ptr_hex> <size> | F <alloc_id> <ptr_hex> | K <op> R <ptrs|-> W <ptrs|-> | I <iter>")
    line("# phase=construct (model + optimizer construction, no K lines)")
    SHIM.rec_enable(1)
    model, opt, batch, loss_fn, micro, desc = MODELS[name]()
    model.train()
    line("# desc: " + desc)
    line("# loop: I <n>; %d x (batch; forward; loss; backward); optimizer.step(); zero_grad(set_to_none=True); "
         "loss.item(); del" % micro)
    g = torch.Generator().manual_seed(1234)
    with OperatorLog():
        for it in range(ITERATIONS):
            line("I %d" % it)
            total = 0.0
            for _ in range(micro):
                x, y = batch(g)
                out = model(x)
                loss = loss_fn(out, y) / micro
                loss.backward()
                total += loss.item()
                del x, y, out, loss
            opt.step()
            opt.zero_grad(set_to_none=True)
    line("# end of training")
    SHIM.rec_close()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    names = sys.argv[2:] or list(MODELS)
    if len(names) == 1:
        record(names[0], "%s/%s.log" % (sys.argv[1], names[0]))
        return
    for name in names:  # one process each: no tensor of one model is freed in another's log
        subprocess.run([sys.executable, __file__, sys.argv[1], name], check=True)


if __name__ == "__main__":
    main()
