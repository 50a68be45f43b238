"""Generate a Chrome trace of N complete (X) events, ~200 bytes each, like a busy msprof/PyTorch export."""

from __future__ import annotations

import random
from pathlib import Path

OPS = ["Conv2D", "MatMul", "TransData", "Add", "Relu", "LayerNorm", "Softmax", "Cast", "Gather", "Mul",
       "aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "hcom_allReduce__586_0_1"]


def generate(path: Path, n: int, seed: int = 0, threads: int = 8) -> Path:
    """Write ``path`` (skipped when it exists with the same size marker); returns it."""
    path = Path(path)
    if path.is_file() and path.stat().st_size > n * 150:
        return path
    rng = random.Random(seed)
    clocks = [0.0] * threads
    tmp = path.with_suffix(".part")
    with tmp.open("w") as out:
        out.write("[")
        for t in range(threads):
            out.write(f'{{"ph":"M","name":"thread_name","pid":1,"tid":{t},"args":{{"name":"Stream {t}"}}}},\n')
        out.write('{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"Ascend Hardware"}},\n')
        parts = []
        for i in range(n):
            t = i % threads
            dur = rng.randint(1, 4000) / 100
            clocks[t] += rng.randint(0, 300) / 100
            op = OPS[rng.randrange(len(OPS))]
            parts.append(f'{{"name":"{op}_{i % 997}","pid":1,"tid":{t},"ts":{clocks[t]:.3f},"dur":{dur:.3f},'
                         f'"ph":"X","cat":"AI_CORE","args":{{"Model Id":4294967295,"Task Type":"AI_CORE",'
                         f'"Physic Stream Id":{t},"Task Id":{i},"connection_id":{i * 7}}}}}')
            clocks[t] += dur
            if len(parts) == 10000:
                out.write(",\n".join(parts) + (",\n" if i + 1 < n else ""))
                parts = []
        if parts:
            out.write(",\n".join(parts))
        out.write("]\n")
    tmp.replace(path)
    return path


if __name__ == "__main__":
    import sys

    generate(Path(sys.argv[1]), int(sys.argv[2]))
