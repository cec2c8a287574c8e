"""Rebuild every model the package ships, in order, from inputs inside the repository, and record what was made.

    python -m training                  # vectors, background, turns, decisions, sentences, parts, which
    python -m training --reader         # also the reader's data and training (~80 min, 2 cores; not shipped)
    python -m training --encoder        # also retrain the question reader's encoder (~8 min CPU; torch)
    python -m training --only turns     # one step (its inputs must already be in place)
    python -m training --verify         # the shipped files against assistant/data/MANIFEST.json; exit 1 if not
    python -m training --check turns background   # refit into a temporary folder, compare with the manifest

Steps, in the order they must run (each reads what the ones before it wrote):

0. ``vectors``: training/build_vectors.py -> iclr2026_vectors.npz (the bundled corpus's chunk and sentence
   vectors, so that a first run embeds nothing; the indexes the later steps build of it read them).
1. ``background``: training/build_background.py -> background.npz (field counts of arXiv ML writing).
2. ``reader`` (only with --reader or --only reader): training/reader_data.py, training/reader_train.py ->
   training/models/reader/ (reader.onnx, manifest.json). Not shipped: measured and not adopted (docs/reader.md);
   resumes from training/work/reader_checkpoint.pt when one is there.
3. ``encoder`` (only with --encoder or --only encoder: it needs torch, training/README.md):
   training/criteria_train.py -> query_encoder.npz (the question reader's encoder: MiniLM's query side fine-tuned
   on the labelled criteria of training/inputs/; assistant/embed/query_encoder.py runs it).
4. ``turns``: training/fit_turns.py -> turns.json (the chat turn model).
5. ``decisions``: training/fit_decisions.py -> decisions.json (reads background.npz and query_encoder.npz).
6. ``sentences``: training/fit_sentences.py -> sentences.json (answers questions through the decisions above).
7. ``parts``: training/fit_parts.py -> parts.json (the parts model: reads questions through the decisions and the
   encoder above, without itself).
8. ``which``: training/fit_which.py --encoder -> which.json (the `which` model: reads the labelled criteria with the
   encoder, through the decisions and the parts model above; builds the training slices' indexes when missing).

A missing input stops the run. The manifest records the commit the fit ran at, the sha256 of every input and
output, each fit's cross-validated figures and its CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from training._inputs import sha256

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "assistant" / "data"
BENCH = ROOT / "benchmarks" / "data"
MANIFEST = DATA / "MANIFEST.json"


def _question_files() -> list[Path]:
    return ([ROOT / "training" / "inputs" / "dev.jsonl"]
            + sorted(p for p in BENCH.glob("*.jsonl")) + sorted((BENCH / "corpora").glob("*.jsonl"))
            + sorted((BENCH / "area_facts").glob("*.jsonl")) + sorted((BENCH / "summaries").glob("*.jsonl")))


@dataclass(frozen=True)
class Step:
    name: str
    commands: tuple[tuple[str, ...], ...]
    outputs: tuple[str, ...]  # relative to the repository root

    def inputs(self) -> list[Path]:
        """The files this step reads (hashed into the manifest)."""
        papers = ROOT / "training" / "inputs" / "arxiv-ml.jsonl.xz"
        slices = sorted((BENCH / "corpora").glob("*.jsonl")) + sorted((BENCH / "heldout").glob("*.jsonl"))
        if self.name == "vectors":
            return [*sorted((DATA / "iclr2026").glob("*.txt")), DATA / "minilm" / "tokenizer.json",
                    ROOT / "assistant" / "embed" / "embedder.py"]  # the model: the sha256 embedder.py pins
        if self.name == "background":
            return [papers, *slices]
        if self.name == "reader":
            return [papers, *slices, *sorted((ROOT / "assistant" / "data" / "iclr2026").glob("*.txt"))]
        if self.name == "encoder":  # the labelled criteria over their slices (ids drawn from papers, outside every
            # held-out slice by reader_data.py's DRAWS), which_labels only measured
            labelled = sorted((ROOT / "training" / "inputs").glob("slice_*_*.jsonl")) + sorted(
                (ROOT / "training" / "inputs").glob("slice_*_ids.txt"))
            return [papers, BENCH / "corpora" / "arxiv_a.jsonl",
                    ROOT / "training" / "inputs" / "arxiv_a_criteria.jsonl", *labelled, BENCH / "which_labels.jsonl"]
        if self.name == "turns":
            return [DATA / "turn_exemplars.jsonl", *_question_files()]
        if self.name == "decisions":
            return [*_question_files(), DATA / "intent_exemplars.jsonl", DATA / "background.npz",
                    DATA / "query_encoder.npz"]
        if self.name == "parts":
            return [*sorted((BENCH / "parts").glob("*.jsonl")), *_question_files(), DATA / "decisions.json",
                    DATA / "query_encoder.npz", DATA / "background.npz"]
        if self.name == "which":  # the labelled criteria over their slices, and which_labels over the bundled corpus
            labelled = sorted((ROOT / "training" / "inputs").glob("slice_*_criteria.jsonl")) + sorted(
                (ROOT / "training" / "inputs").glob("slice_*_ids.txt"))
            return [papers, BENCH / "corpora" / "arxiv_a.jsonl",
                    ROOT / "training" / "inputs" / "arxiv_a_criteria.jsonl", *labelled, BENCH / "which_labels.jsonl",
                    DATA / "decisions.json", DATA / "parts.json", DATA / "query_encoder.npz", DATA / "background.npz"]
        return [*_question_files(), DATA / "decisions.json", DATA / "query_encoder.npz"]  # sentences


PY = sys.executable
STEPS = (
    Step("vectors", ((PY, "training/build_vectors.py"),), ("assistant/data/iclr2026_vectors.npz",)),
    Step("background", ((PY, "training/build_background.py"),), ("assistant/data/background.npz",)),
    Step("reader", ((PY, "training/reader_data.py"), (PY, "training/reader_train.py", "--steps", "1200", "--resume")),
         ("training/models/reader/reader.onnx", "training/models/reader/manifest.json")),
    Step("encoder", ((PY, "training/criteria_train.py", "--out", "assistant/data/query_encoder.npz"),),
         ("assistant/data/query_encoder.npz",)),
    Step("turns", ((PY, "training/fit_turns.py"),), ("assistant/data/turns.json",)),
    Step("decisions", ((PY, "training/fit_decisions.py"),), ("assistant/data/decisions.json",)),
    Step("sentences", ((PY, "training/fit_sentences.py"),), ("assistant/data/sentences.json",)),
    Step("parts", ((PY, "training/fit_parts.py"),), ("assistant/data/parts.json",)),
    Step("which", ((PY, "training/fit_which.py", "--encoder", "--out", "assistant/data/which.json"),),
         ("assistant/data/which.json",)),
)
#: Steps --check can refit into a temporary folder (a few minutes at most on 2 cores), by the option naming the output.
CHECKABLE = {"turns": "--out", "background": "--out", "vectors": "--out"}


def rel(path: Path) -> str:
    return str(path.resolve().relative_to(ROOT))


def metrics(step: Step) -> dict:
    """The figures each fit stores with its weights (cross-validated, or the reader's last validation)."""
    if step.name == "decisions":
        d = json.loads((DATA / "decisions.json").read_text())
        return {m: d[m].get("cv") for m in ("intent", "answerable", "relevant", "missing_word") if m in d}
    if step.name == "parts":
        return {"cv": json.loads((DATA / "parts.json").read_text())["parts"]["cv"]}
    if step.name == "which":
        return {"cv": json.loads((DATA / "which.json").read_text())["cv"]["pooled"]}
    if step.name in ("turns", "sentences"):
        return {"cv": json.loads((DATA / f"{step.name}.json").read_text()).get("cv")}
    if step.name == "reader":
        m = json.loads((ROOT / "training" / "models" / "reader" / "manifest.json").read_text())
        return {"validation": (m.get("validation") or [None])[-1], "steps": m.get("steps")}
    import numpy as np

    if step.name == "vectors":
        with np.load(DATA / "iclr2026_vectors.npz") as npz:
            return json.loads(str(npz["provenance"]))
    if step.name == "encoder":
        with np.load(DATA / "query_encoder.npz") as npz:
            about = json.loads(str(npz["provenance"]))
        return {k: about.get(k) for k in ("hyperparameters", "trained_on", "validation", "validation pairs",
                                          "which_labels (bundled corpus, never trained on)")}
    with np.load(DATA / "background.npz") as npz:
        about = json.loads(str(npz["provenance"]))
    return {k: about.get(k) for k in ("abstracts", "terms", "pairs", "triples")}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_step(step: Step) -> dict:
    missing = [rel(p) for p in step.inputs() if not p.exists()]
    if missing:
        raise SystemExit(f"{step.name}: missing input {missing[0]}: restore it with git before rebuilding")
    inputs = {rel(p): sha256(p) for p in step.inputs()}
    before = children_cpu()
    for command in step.commands:
        print(f"[{step.name}] {' '.join(command[1:])}", flush=True)
        done = subprocess.run(command, cwd=ROOT, env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
        if done.returncode != 0:
            raise SystemExit(f"{step.name}: {' '.join(command[1:])} failed (exit {done.returncode})")
    return {"commands": [" ".join(["python", *c[1:]]) for c in step.commands], "inputs": inputs,
            "outputs": {o: sha256(ROOT / o) for o in step.outputs}, "metrics": metrics(step),
            "cpu_s": round(children_cpu() - before, 1)}


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()


def load_manifest(path: Path = MANIFEST) -> dict:
    if not path.exists():
        raise SystemExit(f"no {path}: run python -m training")
    return json.loads(path.read_text())


def verify(path: Path = MANIFEST) -> int:
    """Each shipped file against the manifest's hash; 1 if any differs or is missing."""
    bad = []
    for name, step in load_manifest(path)["steps"].items():
        for out, digest in step["outputs"].items():
            path = ROOT / out
            if not path.exists() or sha256(path) != digest:
                bad.append(f"{out} ({'missing' if not path.exists() else 'differs'}; step {name})")
    for line in bad:
        print(f"FAIL {line}")
    print("shipped models match assistant/data/MANIFEST.json" if not bad else
          "shipped models and manifest disagree: rebuild with python -m training (CONTRIBUTING.md)")
    return 1 if bad else 0


def close(a, b, tolerance: float = 1e-4) -> bool:
    """Two fitted JSON documents alike but for floats within ``tolerance`` (relative): the same fit on another CPU
    rounds differently, and an iterative solver (the turn model's lbfgs) carries that into its last digits: the same
    turns fit, same inputs and library versions, on two machines differed by up to 5.1e-5 in a bias (2026-12-07).
    Anything else differing is a different fit."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(close(x, y, tolerance) for x, y in zip(a, b))
    return a == b


def close_arrays(a: Path, b: Path, tolerance: float = 1e-5) -> bool:
    """Two .npz files with the same arrays but for floats within ``tolerance`` (absolute): a model run on another
    CPU may round the last bits differently (vectors are of norm 1)."""
    import numpy as np

    with np.load(a, allow_pickle=False) as x, np.load(b, allow_pickle=False) as y:
        if sorted(x.files) != sorted(y.files):
            return False
        for name in x.files:
            u, v = x[name], y[name]
            if u.shape != v.shape or u.dtype != v.dtype:
                return False
            if u.dtype.kind == "f" and not np.allclose(u, v, rtol=0, atol=tolerance):
                return False
            if u.dtype.kind != "f" and not np.array_equal(u, v):
                return False
    return True


def check(names: list[str]) -> int:
    """Refit the named fast steps into a temporary folder; 1 if an output differs from the manifest's (bytes; for
    JSON, anything but float differences below 1e-4 relative; for arrays, below 1e-5)."""
    steps = load_manifest()["steps"]
    failed = 0
    for name in names:
        if name not in CHECKABLE:
            raise SystemExit(f"--check takes {', '.join(CHECKABLE)}; {name} is too slow for it")
        step = next(s for s in STEPS if s.name == name)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / Path(step.outputs[0]).name
            command = [*step.commands[0], CHECKABLE[name], str(out)]
            started = time.process_time() + children_cpu()
            subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
            shipped = ROOT / step.outputs[0]
            same = sha256(out) == steps[name]["outputs"][step.outputs[0]] or (
                sha256(shipped) == steps[name]["outputs"][step.outputs[0]]
                and (out.suffix == ".json" and close(json.loads(out.read_text()), json.loads(shipped.read_text()))
                     or out.suffix == ".npz" and close_arrays(out, shipped)))
            took = time.process_time() + children_cpu() - started
        print(f"{'ok  ' if same else 'FAIL'} {name}: refitted {step.outputs[0]} "
              f"{'matches' if same else 'differs from'} the manifest ({took:.0f} s CPU)")
        failed += not same
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m training", description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=[s.name for s in STEPS], help="run these steps only")
    ap.add_argument("--reader", action="store_true", help="also retrain the reader (~80 min on 2 cores)")
    ap.add_argument("--encoder", action="store_true", help="also retrain the question encoder (~8 min; torch)")
    ap.add_argument("--verify", action="store_true", help="compare the shipped files with the manifest")
    ap.add_argument("--check", nargs="+", metavar="STEP", help=f"refit {' or '.join(CHECKABLE)} and compare")
    ap.add_argument("--manifest", type=Path, default=MANIFEST, help="the manifest --verify reads")
    args = ap.parse_args()
    if args.verify:
        return verify(args.manifest)
    if args.check:
        return check(args.check)
    optional = {"reader": args.reader, "encoder": args.encoder}
    names = args.only or [s.name for s in STEPS if optional.get(s.name, True)]
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"steps": {}}
    for step in STEPS:
        if step.name in names:
            # inputs as committed, but for the files the steps before it wrote in this run
            made = {o for s in STEPS if s.name in manifest["steps"] for o in manifest["steps"][s.name]["outputs"]}
            status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", *map(rel, step.inputs())],
                                    capture_output=True, text=True).stdout  # "XY path" lines, the X may be a space
            changed = [line[3:] for line in status.splitlines() if line[3:] not in made]
            manifest["steps"][step.name] = run_step(step) | {
                "commit": git("rev-parse", "HEAD"), "inputs_committed": not changed, "made": time.strftime("%Y-%m-%d")}
            MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    manifest["steps"] = {s.name: manifest["steps"][s.name] for s in STEPS if s.name in manifest["steps"]}
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {rel(MANIFEST)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
