"""Dynamic int8 quantisation of an ONNX embedding model, made once and cached.

The bundled MiniLM file stores int8 weights but computes in float32 (ONNX Runtime dequantises them
when it builds the session). Re-quantising its matrix multiplications per output channel, with
activations quantised at run time, lets ONNX Runtime use the CPU's int8 instructions: much
faster where the CPU has int8 dot products (AVX-512 VNNI, AMX), a little faster with AVX2 only,
for vectors within cosine ~0.99 of the float ones and the same evidence recall (bench/README.md,
"Embedder: int8 quantisation" and the AMD EPYC entry).

`onnxruntime.quantization` needs the `onnx` package and a few hundred MB for a few seconds. It
runs in a child process so the server's own memory never holds the float model twice, and its
output is cached under a key of the source file, the recipe and the ONNX Runtime version, so
later starts just load it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from hindsight.embedding.fold import fold

log = logging.getLogger("hindsight")

RECIPE = "int8-dynamic-per-channel-matmul-v1"
# Revision of the derived file. Unlike RECIPE it is not part of the model's recorded name: graph.py
# only changes how the same function is computed (float rounding), not which model made a vector.
REVISION = "graph-v3"
NOTICE = "graph rewrites not used"


def cache_dir() -> Path:
    """Derived model files belong in the user's cache (shared by every data directory)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hindsight" / "models"


def _key(source: Path) -> str:
    import onnxruntime

    h = hashlib.sha256()
    with open(source, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    h.update(f"{RECIPE}/{REVISION}/{onnxruntime.__version__}".encode())
    return h.hexdigest()[:24]


def quantized(source: Path) -> Path:
    """The int8 model for `source`, made now if no cached copy exists."""
    source = Path(source)
    name = f"{_key(source)}.onnx"
    for d in (cache_dir(), Path(tempfile.gettempdir()) / "hindsight-models"):
        if (d / name).is_file():
            return d / name
        try:
            d.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=d, prefix=".quantizing-", suffix=".onnx")
            os.close(fd)
        except OSError:
            continue  # not writable: try the next place
        log.info("quantising %s to int8 once (cached in %s)", source.name, d)
        try:
            run = subprocess.run(
                [sys.executable, "-m", "hindsight.embedding.quantize", str(source), tmp],
                capture_output=True,
                text=True,
            )
            if run.returncode != 0:
                raise RuntimeError(
                    f"int8 quantisation of {source} failed (set HINDSIGHT_API_EMBEDDING_QUANTIZE=false "
                    f"to use the float model):\n{run.stderr[-2000:]}"
                )
            for line in run.stderr.splitlines():
                if line.startswith(NOTICE):
                    log.warning("%s (%s)", line, source.name)
            os.replace(tmp, d / name)  # atomic: a concurrent start sees all of it or none
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return d / name
    raise RuntimeError("no writable directory for the int8 model (set XDG_CACHE_HOME or TMPDIR)")


def quantize_matmuls(source: str, target: str) -> None:
    """Quantise every MatMul that has a weight matrix, per output channel, activations at run
    time; activation-by-activation products (attention) stay float."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(logging.ERROR)  # its "consider pre-processing" advice is noise
    quantize_dynamic(
        source,
        target,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        per_channel=True,
        reduce_range=False,
    )


def _make(source: str, target: str) -> None:
    """Fold the constant sub-graphs (int8 -> float32 weights), rewrite what graph.py knows (kept
    only if the rewritten graph computes the same vectors), quantise the matrix products, then
    store the word table as int8 again where that loses nothing."""
    import onnx

    from hindsight.embedding.graph import (  # graph.py imports onnx, which a server never needs
        int8_tables,
        same_function,
        simplify,
    )

    folded, simple = target + ".float.onnx", target + ".simple.onnx"
    try:
        fold(source, folded)
        chosen = folded
        try:
            model = onnx.load(folded)
            simplify(model)
            onnx.save(model, simple)
            if same_function(folded, simple):
                chosen = simple
            else:
                print(f"{NOTICE}: the rewritten graph computes other vectors", file=sys.stderr)
        except Exception as exc:  # a graph the rewrites cannot read is quantised as it is
            print(f"{NOTICE}: {exc!r}", file=sys.stderr)
        quantize_matmuls(chosen, target)
        model = onnx.load(target)
        if int8_tables(model):
            onnx.save(model, target)
    finally:
        for path in (folded, simple):
            if os.path.exists(path):
                os.unlink(path)


if __name__ == "__main__":
    _make(sys.argv[1], sys.argv[2])
